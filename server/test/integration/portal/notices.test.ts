/**
 * Adverse-action notices through the real app, on SQLite and PostgreSQL: the tenant's notice
 * settings (read by every role, set by admins, validated), and the notice of a decline and of an
 * underwriter's counteroffer, built from what the API itself answered for those decisions (reasons,
 * score) and the applicant the decision was made for; no notice for an approval in full or a
 * referral; each notice recorded as a reveal of the applicant; another tenant's or environment's
 * decision is "not found".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { randomUUID } from 'node:crypto';
import type { DecisionsTable } from '../../../src/db/schema.js';
import { ECOA_NOTICE, noticeActionOf } from '../../../src/modules/notices/adverse-action-notice.js';
import { parseCsv } from '../../support/csv.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { PortalClient } from '../../support/portal-client.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';

const DAY = 24 * 3600_000;
let counter = 0;
const uniqueEmail = (who: string) => `${who}.notice${++counter}@lender.example.com`;
const SETTINGS = {
  expected_version: 0,
  creditor_name: 'Notice Lending, Inc.',
  creditor_address: '100 Congress Avenue\nSuite 200\nAustin, TX 78701',
  creditor_phone: '1-800-555-0100',
  agency: 'Federal Trade Commission\nConsumer Response Center\n600 Pennsylvania Avenue NW\nWashington, DC 20580',
  cra_name: 'Example Credit Bureau',
  cra_address: 'P.O. Box 1000\nAtlanta, GA 30348',
  cra_phone: '1-888-555-0199',
};

interface Notice {
  action: string;
  notice_date: string;
  action_taken_at: string;
  due_by: string;
  applicant: { name: string; address_lines: string[] };
  application: { amount: string; product: string; terms: string | null };
  counteroffer: { amount: string; plan: string } | null;
  principal_reasons: { reasons: Array<{ code: string; reason: string }> };
  consumer_report: { agency: { name: string | null }; credit_score: { score: number; key_factors: unknown[] } | null } | null;
  ecoa_notice: { statement: string; agency_lines: string[] };
  creditor: { name: string | null; address_lines: string[] };
  missing_settings: string[];
}

describe.each(await dialectMatrix())('adverse-action notices [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  const clock = new ManualClock('2026-05-04T14:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock, env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' } });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  /** A tenant with a signed-in admin, underwriter and viewer, and its API keys. */
  async function team(company: string) {
    const admin = new PortalClient(t.app);
    const ip = `10.9.${++counter % 250}.${counter % 200}`;
    const signed = await admin.signUp({ company, name: 'Ada Admin', email: uniqueEmail('admin'), ip });
    expect(signed.status, JSON.stringify(signed.body)).toBe(201);
    const members: Record<'admin' | 'underwriter' | 'viewer', PortalClient> = { admin, underwriter: admin, viewer: admin };
    for (const role of ['underwriter', 'viewer'] as const) {
      const { member, accepted } = await admin.invite(role, uniqueEmail(role), { name: `Uma ${role}`, ip });
      expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
      members[role] = member;
    }
    return { tenantId: (signed.body.tenant as { id: string }).id, apiKey: String(signed.body.sandbox_api_key), members };
  }

  async function decide(apiKey: string, ssn: string, amount: string, who: string, extra: Record<string, unknown> = {}) {
    const r = await t.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { ...bearer(apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({
        consumer: { first_name: who, last_name: 'Applicant', email: `${who.toLowerCase()}.${counter}@example.com`, phone: '+14155550123', dob: '1984-02-29', ssn_last4: ssn, address: { line1: '12 Birch Road', line2: 'Unit 4', city: 'Boise', state: 'ID', zip: '83702' } },
        transaction: { amount, currency: 'USD', merchant_name: 'Acme Outdoor', merchant_category: 'sporting_goods' },
        ...extra,
      }),
    });
    expect(r.statusCode, r.body).toBe(200);
    return r.json() as { decision_id: string; outcome: string; decline_reasons: Array<{ code: string; reason: string }> };
  }

  const noticeOf = (client: PortalClient, id: string, env = 'sandbox') => client.post(`/portal/api/decisions/${env}/${id}/adverse-action-notice`);

  it('settings: everyone reads them, only an admin sets them, and they are checked', async () => {
    const { members } = await team('Settings Lending');
    expect((await members.viewer.get('/portal/api/settings/notices')).body).toEqual({ settings: null });
    expect((await members.underwriter.put('/portal/api/settings/notices', SETTINGS)).status).toBe(403);

    const refuse = async (body: Record<string, unknown>, status: number) => {
      const r = await members.admin.put('/portal/api/settings/notices', body);
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      return errorOf(r.raw).message;
    };
    expect(await refuse({ ...SETTINGS, agency: undefined }, 400)).toMatch(/agency/);
    expect(await refuse({ ...SETTINGS, creditor_name: 'x'.repeat(201) }, 400)).toMatch(/creditor_name/);
    expect(await refuse({ ...SETTINGS, fax: '1' }, 400)).toMatch(/fax/);
    expect(await refuse({ ...SETTINGS, expected_version: undefined }, 400)).toMatch(/expected_version/);
    expect(await refuse({ ...SETTINGS, expected_version: -1 }, 400)).toMatch(/expected_version/);
    expect(await refuse({ ...SETTINGS, expected_version: 2 ** 31 }, 400)).toMatch(/expected_version/);
    // A version it never loaded, before anything is saved.
    expect(await refuse({ ...SETTINGS, expected_version: 1 }, 409)).toBe('No settings are saved yet: send expected_version 0 to save the first ones.');
    expect(await refuse({ ...SETTINGS, agency: '   ' }, 422)).toMatch(/agency is required: the notice must name it/);
    expect(await refuse({ ...SETTINGS, cra_address: null }, 422)).toMatch(/cra_name and cra_address go together/);
    expect(await refuse({ ...SETTINGS, cra_name: '', cra_address: '' }, 422)).toMatch(/cra_name and cra_address go together/);
    expect((await members.viewer.get('/portal/api/settings/notices')).body).toEqual({ settings: null });

    clock.advance(60_000);
    const saved = await members.admin.put('/portal/api/settings/notices', { ...SETTINGS, creditor_name: '  Notice Lending, Inc.  ', creditor_phone: '' });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    const { expected_version: _v, ...asSent } = SETTINGS;
    const expected = { ...asSent, creditor_phone: null, version: 1, updated_at: clock.now().toISOString(), updated_by: expect.any(String) };
    expect(saved.body.settings).toEqual(expected);
    expect((await members.viewer.get('/portal/api/settings/notices')).body.settings).toEqual(expected);
    // Written whole: what is left out is cleared.
    const second = await members.admin.put('/portal/api/settings/notices', { expected_version: 1, creditor_name: 'Renamed', creditor_address: '1 Main', agency: 'FDIC' });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body.settings).toMatchObject({ creditor_name: 'Renamed', cra_name: null, cra_address: null, cra_phone: null, creditor_phone: null, version: 2 });

    // A save of what someone else changed since it was loaded is refused, saying who and when; nothing changes.
    const stale = await members.admin.put('/portal/api/settings/notices', { ...SETTINGS, expected_version: 1 });
    expect(stale.status, JSON.stringify(stale.body)).toBe(409);
    expect(errorOf(stale.raw)).toMatchObject({ error: 'settings_version_conflict', message: `These settings were saved by Ada Admin at ${clock.now().toISOString()} since you loaded them; reload to see them.` });
    const first = await members.admin.put('/portal/api/settings/notices', { ...SETTINGS, expected_version: 0 });
    expect(first.status).toBe(409);
    expect((await members.viewer.get('/portal/api/settings/notices')).body.settings).toMatchObject({ creditor_name: 'Renamed', version: 2 });
    // Two saves from the same version, sent together: exactly one wins.
    const race = await Promise.all(['One', 'Two'].map((name) => members.admin.put('/portal/api/settings/notices', { ...SETTINGS, expected_version: 2, creditor_name: name })));
    expect(race.map((r) => r.status).sort()).toEqual([200, 409]);
    const winner = race.find((r) => r.status === 200)!.body.settings as { creditor_name: string };
    expect((await members.viewer.get('/portal/api/settings/notices')).body.settings).toMatchObject({ creditor_name: winner.creditor_name, version: 3 });
  });

  it('a decline: the notice gives the reasons the API gave, the applicant, Part II with the score, and is recorded as a reveal', async () => {
    const { tenantId, apiKey, members } = await team('Decline Lending');
    const declined = await decide(apiKey, '0000', '400.00', 'Delia');
    expect(declined.outcome).toBe('declined');
    const decidedAt = clock.now();

    // Before the settings are entered, the notice says what is missing.
    const bare = await noticeOf(members.underwriter, declined.decision_id);
    expect(bare.status, JSON.stringify(bare.body)).toBe(200);
    expect((bare.body.notice as Notice).missing_settings).toEqual(['creditor_name', 'creditor_address', 'agency', 'cra_name', 'cra_address', 'cra_phone']);

    expect((await members.admin.put('/portal/api/settings/notices', SETTINGS)).status).toBe(200);
    // Less than the session's 30-minute idle limit: the notice is dated today, the action earlier.
    clock.advance(20 * 60_000);
    const r = await noticeOf(members.admin, declined.decision_id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const notice = r.body.notice as Notice;
    expect(notice.action).toBe('declined');
    expect(notice.notice_date).toBe(clock.now().toISOString().slice(0, 10));
    expect(notice.action_taken_at).toBe(decidedAt.toISOString());
    // 30 days from the completed application, counted conservatively (a day less, for US time zones).
    expect(notice.due_by).toBe(new Date(decidedAt.getTime() + 29 * DAY).toISOString().slice(0, 10));
    expect(notice.applicant).toEqual({ name: 'Delia Applicant', address_lines: ['12 Birch Road', 'Unit 4', 'Boise, ID 83702'] });
    expect(notice.application).toMatchObject({ amount: '400.00', product: 'a buy now, pay later loan', terms: null });
    expect(notice.principal_reasons.reasons).toEqual(declined.decline_reasons);
    expect(notice.principal_reasons.reasons[0]).toEqual({ code: 'AA-21', reason: 'Bankruptcy' });
    // The credit data answered (a file), so Part II is there, with the score the webhooks told the
    // lender (score.completed, written with the decision), not re-derived from the same explanation.
    const scored = await t.ctx.storage.db.selectFrom('events').select('data_json').where('subject_id', '=', declined.decision_id).where('type', '=', 'score.completed').executeTakeFirstOrThrow();
    const event = JSON.parse(scored.data_json) as { score: number; key_factor_codes: string[] };
    expect(notice.consumer_report).not.toBeNull();
    expect(notice.consumer_report!.agency.name).toBe('Example Credit Bureau');
    // A bankruptcy is a knock-out, yet the file was scored: the notice discloses that score.
    expect(notice.consumer_report!.credit_score).not.toBeNull();
    expect(notice.consumer_report!.credit_score!.score).toBe(event.score);
    expect((notice.consumer_report!.credit_score!.key_factors as Array<{ code: string }>).map((f) => f.code)).toEqual(event.key_factor_codes);
    expect(notice.ecoa_notice).toEqual({ statement: ECOA_NOTICE, agency_lines: SETTINGS.agency.split('\n') });
    expect(notice.creditor).toMatchObject({ name: SETTINGS.creditor_name, address_lines: SETTINGS.creditor_address.split('\n') });
    expect(notice.missing_settings).toEqual([]);

    // Each notice is a reveal of the applicant, recorded with who and why.
    const actions = await t.ctx.storage.db.selectFrom('underwriting_actions').select(['kind', 'details_json', 'user_name']).where('decision_id', '=', declined.decision_id).where('tenant_id', '=', tenantId).execute();
    expect(actions.map((a) => [a.kind, JSON.parse(a.details_json).purpose])).toEqual([
      ['pii_revealed', 'adverse_action_notice'],
      ['pii_revealed', 'adverse_action_notice'],
    ]);

    // A viewer may not see the applicant; another environment or tenant does not have the decision.
    expect((await noticeOf(members.viewer, declined.decision_id)).status).toBe(403);
    expect((await noticeOf(members.admin, declined.decision_id, 'live')).status).toBe(404);
    const other = await team('Other Lending');
    expect((await other.members.viewer.get('/portal/api/settings/notices')).body).toEqual({ settings: null });
    const foreign = await noticeOf(other.members.admin, declined.decision_id);
    expect(foreign.status).toBe(404);
    expect(errorOf(foreign.raw).message).toBe('No such decision in this environment.');
    expect((await t.ctx.storage.db.selectFrom('underwriting_actions').select('id').where('decision_id', '=', declined.decision_id).execute()).length).toBe(2);
  });

  it('no notice for an approval in full or an open referral; a counteroffer has one with the underwriter\'s reasons, due in 90 days', async () => {
    const { apiKey, members } = await team('Counteroffer Lending');
    const seeded = (await members.admin.get('/portal/api/sandbox/consumers?seeded=true')).body.data as Array<{ id: string }>;
    const approved = await t.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { ...bearer(apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({ consumer: { consumer_id: seeded[0]!.id }, transaction: { amount: '100.00', currency: 'USD', merchant_name: 'Acme', merchant_category: 'general' } }),
    });
    expect((approved.json() as { outcome: string }).outcome).toBe('approved');
    const none = await noticeOf(members.admin, (approved.json() as { decision_id: string }).decision_id);
    expect(none.status).toBe(404);
    expect(errorOf(none.raw).message).toBe('This decision has no adverse-action notice: it was approved as requested.');

    const referred = await decide(apiKey, '1111', '300.00', 'Rosa');
    expect(referred.outcome).toBe('referred');
    const open = await noticeOf(members.underwriter, referred.decision_id);
    expect(open.status).toBe(404);
    expect(((await members.underwriter.get(`/portal/api/referrals/sandbox/${referred.decision_id}`)).body.referral as { adverse_action: string | null }).adverse_action).toBeNull();
    expect(errorOf(open.raw).message).toMatch(/has not been decided yet/);

    clock.advance(20 * 60_000);
    const approvedAt = clock.now();
    const approve = await members.underwriter.post(`/portal/api/referrals/sandbox/${referred.decision_id}/approve`, { expected_version: 1, amount: '250.00', plan: 'pay_in_4', reason_codes: ['AA-08', 'AA-22'] });
    expect(approve.status, JSON.stringify(approve.body)).toBe(200);
    clock.advance(20 * 60_000);
    const r = await noticeOf(members.underwriter, referred.decision_id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const notice = r.body.notice as Notice;
    expect(notice.action).toBe('counteroffer');
    expect(notice.action_taken_at).toBe(approvedAt.toISOString());
    expect(notice.due_by).toBe(new Date(approvedAt.getTime() + 89 * DAY).toISOString().slice(0, 10));
    expect(notice.counteroffer).toMatchObject({ amount: '250.00', plan: 'pay_in_4' });
    expect(notice.principal_reasons.reasons).toEqual([
      { code: 'AA-08', reason: 'Income insufficient for amount of credit requested' },
      { code: 'AA-22', reason: 'Number of recent inquiries on credit bureau report' },
    ]);
    expect(notice.applicant.name).toBe('Rosa Applicant');
    // Over /v1 the same notice, counteroffer, APR and score included, without the applicant.
    const viaApi = await t.app.inject({ method: 'GET', url: `/v1/decisions/bnpl/${referred.decision_id}/adverse-action-notice`, headers: bearer(apiKey) });
    expect(viaApi.statusCode, viaApi.body).toBe(200);
    const { applicant: _rosa, ...withoutApplicant } = notice as Notice & Record<string, unknown>;
    expect(viaApi.json()).toEqual(withoutApplicant);
    expect((viaApi.json() as { counteroffer: { apr: string | null } }).counteroffer.apr).toMatch(/^\d+\.\d{2}$/);
    // The referral screen says so too, once worked (it was null while referred: the open referral above).
    expect(((await members.underwriter.get(`/portal/api/referrals/sandbox/${referred.decision_id}`)).body.referral as { adverse_action: string | null }).adverse_action).toBe('counteroffer');
    // The decision page says a notice is owed, from the same rule.
    expect(((await members.underwriter.get(`/portal/api/decisions/sandbox/${referred.decision_id}`)).body.summary as { adverse_action: string | null }).adverse_action).toBe('counteroffer');

    // The explorer lists the decisions that owe a notice: its WHERE clause and the notice's rule
    // agree on every decision of the tenant (an approval in full, a counteroffer, a decline, an open
    // referral, a pending verification).
    const declined = await decide(apiKey, '0000', '150.00', 'Dora');
    const open2 = await decide(apiKey, '1111', '120.00', 'Otto');
    expect([declined.outcome, open2.outcome]).toEqual(['declined', 'referred']);
    // The full amount on another plan than the one asked for is a counteroffer too (ADR 0046).
    const otherPlan = await decide(apiKey, '1111', '200.00', 'Pia', { plan_preference: 'pay_in_4' });
    expect(otherPlan.outcome).toBe('referred');
    const onPayIn6 = await members.underwriter.post(`/portal/api/referrals/sandbox/${otherPlan.decision_id}/approve`, { expected_version: 1, amount: '200.00', plan: 'pay_in_6', reason_codes: ['AA-09'] });
    expect(onPayIn6.status, JSON.stringify(onPayIn6.body)).toBe(200);
    const pending = await t.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { ...bearer(apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({ consumer: { consumer_id: seeded[1]!.id }, transaction: { amount: '600.00', currency: 'USD', merchant_name: 'Acme', merchant_category: 'general' } }),
    });
    expect((pending.json() as { status: string }).status).toBe('needs_consumer_action');
    const list = async (query: string) => ((await members.underwriter.get(`/portal/api/decisions/sandbox?${query}`)).body.data as Array<{ decision_id: string; adverse_action: string | null }>);
    const all = await list('limit=100');
    expect(all).toHaveLength(6);
    const expected = new Map([
      [(approved.json() as { decision_id: string }).decision_id, null],
      [referred.decision_id, 'counteroffer'],
      [declined.decision_id, 'declined'],
      [otherPlan.decision_id, 'counteroffer'],
      [open2.decision_id, null],
      [(pending.json() as { decision_id: string }).decision_id, null],
    ]);
    expect(new Map(all.map((d) => [d.decision_id, d.adverse_action]))).toEqual(expected);
    for (const d of all) {
      const explained = (await members.underwriter.get(`/portal/api/decisions/sandbox/${d.decision_id}`)).body.summary as { adverse_action: string | null };
      expect(explained.adverse_action, d.decision_id).toBe(d.adverse_action);
    }
    const ids = (rows: Array<{ decision_id: string }>) => rows.map((d) => d.decision_id).sort();
    expect(ids(await list('adverse_action=any'))).toEqual([referred.decision_id, declined.decision_id, otherPlan.decision_id].sort());
    expect(ids(await list('adverse_action=counteroffer'))).toEqual([referred.decision_id, otherPlan.decision_id].sort());
    expect(ids(await list('adverse_action=declined'))).toEqual([declined.decision_id]);
    expect((await members.underwriter.get('/portal/api/decisions/sandbox?adverse_action=maybe')).status).toBe(400);
    const csv = await members.underwriter.get('/portal/api/decisions/sandbox/export.csv?adverse_action=any');
    const rows = parseCsv(String(csv.raw.body));
    const column = rows[0]!.indexOf('adverse_action');
    expect(column).toBe(rows[0]!.length - 2);
    expect(new Map(rows.slice(1).map((r) => [r[0], r[column]]))).toEqual(
      new Map([
        [referred.decision_id, 'counteroffer'],
        [declined.decision_id, 'declined'],
        [otherPlan.decision_id, 'counteroffer'],
      ]),
    );
  });

  it("the CSV's and the list's notice_due_by are the notice's due_by: a decline's from its completion, an underwriter's counteroffer from the approval, the next UTC day", async () => {
    // Decided at 23:50 UTC, approved at 00:10 the next day (well within a portal session).
    clock.advance(DAY - ((clock.now().getTime() - 23 * 3_600_000 - 50 * 60_000) % DAY + DAY) % DAY);
    expect(clock.now().toISOString().slice(11, 16)).toBe('23:50');
    const { apiKey, members } = await team('Due Date Lending');
    const declined = await decide(apiKey, '0000', '150.00', 'Dana');
    const referred = await decide(apiKey, '1111', '300.00', 'Ravi');
    const inFull = await decide(apiKey, '2468', '100.00', 'Ines');
    expect([declined.outcome, referred.outcome, inFull.outcome]).toEqual(['declined', 'referred', 'approved']);
    const completedAt = clock.now();
    clock.advance(20 * 60_000);
    const approvedAt = clock.now();
    expect(approvedAt.toISOString().slice(0, 10)).not.toBe(completedAt.toISOString().slice(0, 10));
    const approve = await members.underwriter.post(`/portal/api/referrals/sandbox/${referred.decision_id}/approve`, { expected_version: 1, amount: '200.00', plan: 'pay_in_4', reason_codes: ['AA-08'] });
    expect(approve.status, JSON.stringify(approve.body)).toBe(200);
    clock.advance(5 * 60_000);

    const apiNotice = async (id: string) => (await t.app.inject({ method: 'GET', url: `/v1/decisions/bnpl/${id}/adverse-action-notice`, headers: bearer(apiKey) })).json() as { due_by: string };
    const expected = new Map([
      [declined.decision_id, (await apiNotice(declined.decision_id)).due_by],
      [referred.decision_id, (await apiNotice(referred.decision_id)).due_by],
    ]);
    // The two rules, from their two instants (UTC days less one).
    expect(expected.get(declined.decision_id)).toBe(new Date(completedAt.getTime() + 29 * DAY).toISOString().slice(0, 10));
    expect(expected.get(referred.decision_id)).toBe(new Date(approvedAt.getTime() + 89 * DAY).toISOString().slice(0, 10));

    const csv = await members.underwriter.get('/portal/api/decisions/sandbox/export.csv?adverse_action=any');
    const rows = parseCsv(String(csv.raw.body));
    const [idColumn, dueColumn] = [rows[0]!.indexOf('decision_id'), rows[0]!.indexOf('notice_due_by')];
    expect(new Map(rows.slice(1).map((r) => [r[idColumn], r[dueColumn]]))).toEqual(expected);
    const listed = (await members.underwriter.get('/portal/api/decisions/sandbox?adverse_action=any')).body.data as Array<{ decision_id: string; notice_due_by: string | null }>;
    expect(new Map(listed.map((d) => [d.decision_id, d.notice_due_by]))).toEqual(expected);
    // No adverse action, no date.
    const all = (await members.underwriter.get('/portal/api/decisions/sandbox?limit=100')).body.data as Array<{ decision_id: string; adverse_action: string | null; notice_due_by: string | null }>;
    expect(all.find((d) => d.decision_id === inFull.decision_id)).toMatchObject({ adverse_action: null, notice_due_by: null });
  });

  it("the explorer's filter and the notice's rule agree on every shape of row, missing plans and terms included", async () => {
    const { tenantId, apiKey } = await team('Shapes Lending');
    const base = await decide(apiKey, '0000', '300.00', 'Sam');
    const row = await t.ctx.storage.db.selectFrom('decisions').selectAll().where('id', '=', base.decision_id).executeTakeFirstOrThrow();
    // Variants of one stored row, written directly: shapes the API makes today and ones it may not
    // (no approved amount, no plan or term on an approval), compared with noticeActionOf.
    const approved = { outcome: 'approved' as const, status: 'complete' as const, approved_amount_cents: 30_000, plan: 'pay_in_6', term_months: 6, requested_plan: null, requested_term_months: null };
    const shapes: Array<Partial<DecisionsTable>> = [
      { outcome: 'declined' },
      { outcome: 'referred' },
      { status: 'needs_consumer_action', outcome: null },
      approved,
      { ...approved, approved_amount_cents: 29_999 },
      { ...approved, approved_amount_cents: null },
      { ...approved, requested_plan: 'pay_in_6' },
      { ...approved, requested_plan: 'pay_in_4' },
      { ...approved, requested_plan: 'pay_in_4', plan: null },
      { ...approved, plan: null },
      { ...approved, requested_plan: 'monthly', plan: 'monthly', requested_term_months: 12, term_months: 12 },
      { ...approved, requested_plan: 'monthly', plan: 'monthly', requested_term_months: 12, term_months: 18 },
      { ...approved, requested_plan: 'monthly', plan: 'monthly', requested_term_months: 12, term_months: null },
      { ...approved, requested_term_months: 6, term_months: null },
    ];
    const variants = shapes.map((shape) => ({ ...row, ...shape, id: randomUUID(), application_id: randomUUID() }));
    await t.ctx.storage.db.insertInto('decisions').values(variants).execute();
    const scope = { tenantId, environment: 'sandbox' as const };
    const listed = async (adverseAction: 'any' | 'declined' | 'counteroffer') =>
      (await t.ctx.reporting.listDecisions(scope, { adverseAction }, { limit: 100 })).items.map((i) => i.decisionId).filter((id) => id !== base.decision_id).sort();
    const expected = (kind: 'any' | 'declined' | 'counteroffer') =>
      variants.filter((v) => (kind === 'any' ? noticeActionOf(v) !== null : noticeActionOf(v) === kind)).map((v) => v.id).sort();
    for (const kind of ['any', 'declined', 'counteroffer'] as const) expect(await listed(kind), kind).toEqual(expected(kind));
    // Not trivially: both kinds occur, missing plans and terms among the counteroffers.
    expect(expected('counteroffer').length).toBe(6);
    expect(expected('declined').length).toBe(1);
  });

  it('over /v1: the portal\'s notice without the applicant, nothing recorded; no_adverse_action for an approval in full; another product or tenant is not found', async () => {
    const { apiKey, members } = await team('API Notice Lending');
    expect((await members.admin.put('/portal/api/settings/notices', SETTINGS)).status).toBe(200);
    const declined = await decide(apiKey, '0000', '400.00', 'Vera');
    expect(declined.outcome).toBe('declined');
    const get = (product: string, id: string, key = apiKey) => t.app.inject({ method: 'GET', url: `/v1/decisions/${product}/${id}/adverse-action-notice`, headers: bearer(key) });

    const r = await get('bnpl', declined.decision_id);
    expect(r.statusCode, r.body).toBe(200);
    const viaApi = r.json() as Record<string, unknown>;
    // Nothing of the applicant: neither the field nor her name, street or town anywhere in it.
    expect(viaApi).not.toHaveProperty('applicant');
    expect(r.body).not.toMatch(/Vera|Birch|Boise|83702/);
    // So nothing was revealed, and nothing is recorded.
    expect(await t.ctx.storage.db.selectFrom('underwriting_actions').select('id').where('decision_id', '=', declined.decision_id).execute()).toEqual([]);
    // Otherwise the very notice the portal makes (same clock, same settings), with the reasons the API gave.
    const portal = (await noticeOf(members.admin, declined.decision_id)).body.notice as Notice & Record<string, unknown>;
    const { applicant: _applicant, ...portalWithoutApplicant } = portal;
    expect(viaApi).toEqual(portalWithoutApplicant);
    expect((viaApi as unknown as Notice).principal_reasons.reasons).toEqual(declined.decline_reasons);

    // An approval in full took no adverse action: its own code (a 404, as the notice does not exist).
    const approved = await decide(apiKey, '2468', '100.00', 'Ines');
    expect(approved.outcome).toBe('approved');
    const none = await get('bnpl', approved.decision_id);
    expect(none.statusCode).toBe(404);
    expect(errorOf(none)).toMatchObject({ error: 'no_adverse_action', message: 'This decision has no adverse-action notice: it was approved as requested.' });

    // A BNPL decision is not an auto loan; another tenant does not have it; a malformed id is 400.
    expect(errorOf(await get('auto-loan', declined.decision_id))).toMatchObject({ error: 'not_found', message: 'No auto-loan decision with this decision_id exists for this API key.' });
    const other = await team('Other API Lending');
    expect(errorOf(await get('bnpl', declined.decision_id, other.apiKey))).toMatchObject({ error: 'not_found' });
    expect((await get('bnpl', 'not-a-uuid')).statusCode).toBe(400);
  });

  it('over /v1, an auto loan: its own path finds its notice, the BNPL path does not', async () => {
    const { apiKey } = await team('Auto Notice Lending');
    const created = await t.app.inject({
      method: 'POST',
      url: '/v1/decisions/auto-loan',
      headers: { ...bearer(apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({
        consumer: { first_name: 'Abe', last_name: 'Auto', email: `abe.${++counter}@example.com`, phone: '+14155550177', dob: '1979-09-09', ssn_last4: '0000', address: { line1: '4 Depot Road', city: 'Lincoln', state: 'NE', zip: '68508' } },
        vehicle: { vin: '1HGCM8262RA004352', year: 2024, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00' },
        loan: { amount: '16000.00', down_payment: '2000.00', trade_in_value: '1000.00', term_months: 60, currency: 'USD' },
        channel: 'direct',
      }),
    });
    expect(created.statusCode, created.body).toBe(200);
    const auto = created.json() as { decision_id: string; outcome: string };
    expect(auto.outcome).toBe('declined');
    const r = await t.app.inject({ method: 'GET', url: `/v1/decisions/auto-loan/${auto.decision_id}/adverse-action-notice`, headers: bearer(apiKey) });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json()).toMatchObject({ product: 'auto_loan', action: 'declined', application: { amount: '13000.00', term_months: 60 }, missing_settings: ['creditor_name', 'creditor_address', 'agency', 'cra_name', 'cra_address', 'cra_phone'] });
    const wrong = await t.app.inject({ method: 'GET', url: `/v1/decisions/bnpl/${auto.decision_id}/adverse-action-notice`, headers: bearer(apiKey) });
    expect(errorOf(wrong)).toMatchObject({ error: 'not_found', message: 'No BNPL decision with this decision_id exists for this API key.' });
  });

  it("an underwriter's decline of a referral made without credit data: no Part II, due 30 days after the application, not after the decline", async () => {
    const { apiKey, members } = await team('Unavailable Lending');
    const referred = await decide(apiKey, '3333', '200.00', 'Uma');
    expect(referred.outcome).toBe('referred');
    const completedAt = clock.now();
    clock.advance(20 * 60_000);
    const declined = await members.underwriter.post(`/portal/api/referrals/sandbox/${referred.decision_id}/decline`, { expected_version: 1, reason_codes: ['AA-10'] });
    expect(declined.status, JSON.stringify(declined.body)).toBe(200);
    const r = await noticeOf(members.underwriter, referred.decision_id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const notice = r.body.notice as Notice;
    expect(notice.action).toBe('declined');
    expect(notice.action_taken_at).toBe(clock.now().toISOString());
    expect(notice.due_by).toBe(new Date(completedAt.getTime() + 29 * DAY).toISOString().slice(0, 10));
    expect(notice.principal_reasons.reasons).toEqual([{ code: 'AA-10', reason: 'Unable to verify income' }]);
    // The credit data never answered (AA-25's referral): no consumer report was used.
    expect(notice.consumer_report).toBeNull();
    expect(notice.missing_settings).toEqual(['creditor_name', 'creditor_address', 'agency']);
  });
});
