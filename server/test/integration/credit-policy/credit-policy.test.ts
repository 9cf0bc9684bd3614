/**
 * Credit policy versions on SQLite and PostgreSQL, through the portal API and /v1: validation
 * before acceptance, numbering, the sandbox test (nothing written), the atomic promote, isolation
 * across tenants and environments, roles, the next decision using and naming the promoted version,
 * replay on the version that decided, and a second app instance on the same database switching
 * within the documented freshness bound.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { sandboxProfileFor } from '../../../src/modules/credit-data/sandbox-connector.js';
import { POLICY_FRESHNESS_MS } from '../../../src/modules/credit-policy/credit-policy.service.js';
import { replay, type BnplEngineDecision } from '../../../src/modules/engine/index.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { PortalClient } from '../../support/portal-client.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';

let emailCounter = 0;
const uniqueEmail = (who: string) => `${who}.${++emailCounter}@policy.example.com`;

function primeIdentity(salt: string) {
  for (let i = 0; i < 5000; i++) {
    const who = { firstName: `Policy${salt}${i}`, lastName: 'Applicant', dob: '1984-02-11' };
    if (sandboxProfileFor(who) === 'prime') return who;
  }
  throw new Error('no prime identity');
}

type Tables = {
  grades: Array<{ grade: string; min_score: number | null; band: string; limit: string }>;
  pricing: Array<{ grade: string; pay_in_4: string | null; pay_in_6: string | null; monthly: string | null }>;
  kyc_tiers: { enhanced_from: string; hard_from: string };
  plan_minimums: Record<string, string>;
  default_plan: Record<string, string>;
};

describe.each(await dialectMatrix())('credit policy versions [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  const clock = new ManualClock('2026-04-06T10:00:00.000Z');
  let admin: PortalClient;
  let tenantId: string;
  let apiKey: string;
  let bundledTables: Tables;
  const base = '/portal/api/policy/sandbox/bnpl';

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock, env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' } });
    admin = new PortalClient(t.app);
    const r = await admin.signUp({ company: 'Policy Lending', email: uniqueEmail('admin') });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    tenantId = (r.body as { tenant: { id: string } }).tenant.id;
    apiKey = (r.body as { sandbox_api_key: string }).sandbox_api_key;
    const current = await admin.get(`${base}/current`);
    bundledTables = current.body.tables as Tables;
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const scope = () => ({ tenantId, environment: 'sandbox' as const });
  const tablesWith = (edit: (t: Tables) => void): Tables => {
    const copy = structuredClone(bundledTables);
    edit(copy);
    return copy;
  };
  /** Every grade's limit capped at `limit` (a lower grade never gets more): a visible change on a prime applicant. */
  const lowerLimit = (limit: string) =>
    tablesWith((x) => {
      for (const g of x.grades) if (Number(g.limit.replace('.', '')) > Number(limit.replace('.', ''))) g.limit = limit;
    });

  async function decide(amount: string, salt: string, app: TestApp = t, extra: Record<string, unknown> = {}) {
    const who = primeIdentity(salt);
    const r = await app.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { ...bearer(apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({
        consumer: { first_name: who.firstName, last_name: who.lastName, email: 'a@example.com', phone: '+14155550123', dob: who.dob, address: { line1: '1 Main Street', city: 'Austin', state: 'TX', zip: '73301' } },
        transaction: { amount, currency: 'USD', merchant_name: 'Acme', merchant_category: 'furniture', ...extra },
      }),
    });
    expect(r.statusCode, r.body).toBe(200);
    const body = r.json() as { decision_id: string; outcome: string; approved_amount?: string; apr?: string };
    const audit = (await app.ctx.decisions.getAuditRecord(scope(), body.decision_id)) as { engine: BnplEngineDecision };
    return { body, engine: audit.engine };
  }

  async function createDraft(tables: Tables, note = 'test') {
    const r = await admin.post(`${base}/versions`, { tables, note });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.version as { id: string; name: string; version: number; status: string; engine_version: string };
  }

  it('starts on the bundled default, named as engine_version names it', async () => {
    const r = await admin.get('/portal/api/policy/sandbox');
    expect(r.status).toBe(200);
    const [bnpl] = r.body.products as Array<Record<string, unknown>>;
    expect(bnpl).toMatchObject({ product: 'bnpl', version_count: 0, current: { source: 'bundled', name: 'bnpl-policy-2026.11.1', status: 'active' } });
    const { engine } = await decide('300.00', 'a');
    expect(engine.engineVersion).toBe('engine-1.0.0+bnpl-sc-2026.11.1+bnpl-policy-2026.11.1');
    expect(bundledTables.grades.map((g) => g.min_score)).toEqual([720, 660, 600, 560, null]);
    expect(bundledTables.pricing[0]).toEqual({ grade: 'A', pay_in_4: '0.00', pay_in_6: '0.00', monthly: '9.99' });
  });

  it('validates without storing, listing every problem with its path and rule', async () => {
    const bad = tablesWith((x) => {
      x.pricing[1]!.monthly = '40.00';
      x.grades[2]!.min_score = 700; // above grade B's 660
      x.kyc_tiers.enhanced_from = '6000.00'; // above hard_from
      x.grades[0]!.limit = 'lots';
    });
    const r = await admin.post(`${base}/validate`, { tables: bad });
    expect(r.status).toBe(200);
    expect(r.body.valid).toBe(false);
    // A malformed field stops before the document is built: only it is reported.
    expect(r.body.problems).toEqual([{ path: '/tables/grades/0/limit', rule: 'money_format', message: expect.stringContaining('grades.0.limit') }]);
    bad.grades[0]!.limit = '30000.00';
    const again = await admin.post(`${base}/validate`, { tables: bad });
    const rules = (again.body.problems as Array<{ path: string; rule: string }>).map((p) => p.rule).sort();
    expect(rules).toEqual(['cutoffs_ordered', 'rate_range', 'tier_thresholds_ordered']);
    const good = await admin.post(`${base}/validate`, { tables: lowerLimit('250.00') });
    expect(good.body).toMatchObject({ valid: true, problems: [], based_on: 'bnpl-policy-2026.11.1', scorecard_version: 'bnpl-sc-2026.11.1' });
    expect((await t.ctx.creditPolicy.listVersions(scope(), 'bnpl', { limit: 10, offset: 0 })).total).toBe(0);
  });

  it('refuses an invalid upload with 422 invalid_policy naming every problem, and stores nothing', async () => {
    const current = await admin.get(`${base}/current`);
    const doc = structuredClone(current.body.document) as { nodes: Array<{ id: string; type: string; content: { rules?: Array<Record<string, string>> } }> };
    doc.nodes.find((n) => n.id === 'knockouts')!.content.rules![0]!['ko-out-code'] = '"AA-99"';
    doc.nodes.push({ id: 'js', type: 'functionNode', content: {} });
    const r = await admin.post(`${base}/versions`, { document: doc });
    expect(r.status).toBe(422);
    const error = errorOf(r.raw);
    expect(error.error).toBe('invalid_policy');
    expect(error.message).toContain('(node_kind_allowed)');
    expect(error.message).toContain('(adverse_action_code_known)');
    expect(error.message).toContain('AA-99');
    const unparsable = await admin.post(`${base}/versions`, { document_json: '{"nodes": [' });
    expect(unparsable.status).toBe(422);
    expect(errorOf(unparsable.raw).message).toContain('/document_json (json_parse)');
    expect((await t.ctx.creditPolicy.listVersions(scope(), 'bnpl', { limit: 10, offset: 0 })).total).toBe(0);
  });

  it('numbers versions per scope, tests a draft against the sandbox without writing, and promotes it for the very next decision', async () => {
    const v1 = await createDraft(lowerLimit('250.00'), 'A limit 250.00');
    const v2 = await createDraft(lowerLimit('400.00'), 'A limit 400.00');
    expect([v1.version, v1.name, v1.status]).toEqual([1, 'bnpl-policy-sandbox-v1', 'draft']);
    expect([v2.version, v2.name]).toEqual([2, 'bnpl-policy-sandbox-v2']);
    expect(v1.engine_version).toBe('engine-1.0.0+bnpl-sc-2026.11.1+bnpl-policy-sandbox-v1');

    const decisionsBefore = await t.ctx.storage.db.selectFrom('decisions').select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow();
    const tested = await admin.post(`${base}/versions/${v1.id}/test`);
    expect(tested.status, JSON.stringify(tested.body)).toBe(200);
    expect(tested.body.against).toBe('bnpl-policy-2026.11.1');
    const rows = tested.body.rows as Array<{ id: string; active: { amount: string | null; outcome: string }; draft: { amount: string | null }; changed: string[] }>;
    expect(rows.map((r) => r.id)).toEqual(expect.arrayContaining(['seeded-soft', 'seeded-enhanced', 'seeded-hard', 'magic-0000', 'magic-1111', 'magic-3333']));
    const seeded = Object.fromEntries(rows.filter((r) => r.id.startsWith('seeded')).map((r) => [r.id, r]));
    expect(seeded['seeded-soft']!.changed).toEqual([]); // 150.00 is under the new limit
    expect(seeded['seeded-enhanced']).toMatchObject({ active: { outcome: 'approved', amount: '1500.00' }, draft: { amount: '250.00' }, changed: expect.arrayContaining(['amount']) });
    expect(tested.body.changed_count).toBe(rows.filter((r) => r.changed.length > 0).length);
    const decisionsAfter = await t.ctx.storage.db.selectFrom('decisions').select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow();
    expect(Number(decisionsAfter.n)).toBe(Number(decisionsBefore.n));

    const before = await decide('300.00', 'b');
    expect(before.body).toMatchObject({ outcome: 'approved', approved_amount: '300.00' });

    const promoted = await admin.post(`${base}/versions/${v1.id}/promote`);
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
    expect(promoted.body.version).toMatchObject({ status: 'active', promoted_at: clock.now().toISOString(), promoted_by: { name: 'Alex Admin' }, created_by: { name: 'Alex Admin' } });

    // Same process, no clock movement: the very next decision uses v1 and names it.
    const after = await decide('300.00', 'b');
    expect(after.body).toMatchObject({ outcome: 'approved', approved_amount: '250.00' });
    expect(after.engine.engineVersion).toBe('engine-1.0.0+bnpl-sc-2026.11.1+bnpl-policy-sandbox-v1');
    const finalized = await t.ctx.storage.db.selectFrom('events').selectAll().where('subject_id', '=', after.body.decision_id).where('type', '=', 'decision.finalized').executeTakeFirstOrThrow();
    expect(JSON.parse(finalized.data_json).engine_version).toBe('engine-1.0.0+bnpl-sc-2026.11.1+bnpl-policy-sandbox-v1');

    // Promote v2: v1 retired, one active, the head points at v2.
    const p2 = await admin.post(`${base}/versions/${v2.id}/promote`);
    expect(p2.status).toBe(200);
    const list = await admin.get(`${base}/versions`);
    expect((list.body.data as Array<{ name: string; status: string }>).map((v) => [v.name, v.status])).toEqual([
      ['bnpl-policy-sandbox-v2', 'active'],
      ['bnpl-policy-sandbox-v1', 'retired'],
    ]);
    const third = await decide('300.00', 'c');
    expect(third.body.approved_amount).toBe('300.00');
    expect(third.engine.versions.policy).toBe('bnpl-policy-sandbox-v2');
    const again = await admin.post(`${base}/versions/${v2.id}/promote`);
    expect(again.status).toBe(422);

    // Replay: the v1 decision replays on v1 (found by the name it carries), and differs on v2.
    const docs = await t.ctx.creditPolicy.documentsForVersions(scope(), 'bnpl', after.engine.versions);
    expect((await replay(after.engine, docs)).differences).toEqual([]);
    const whatIf = await replay(after.engine, await t.ctx.creditPolicy.documentsFor(scope(), 'bnpl'));
    expect(whatIf.differences).toEqual(expect.arrayContaining(['$.approvedAmountCents', '$.engineVersion']));
    // A bundled-version decision still replays without a lookup.
    expect((await replay(before.engine)).differences).toEqual([]);

    // Rolling back = promoting a retired version.
    const back = await admin.post(`${base}/versions/${v1.id}/promote`);
    expect(back.body.version).toMatchObject({ name: 'bnpl-policy-sandbox-v1', status: 'active' });
    expect((await decide('300.00', 'd')).body.approved_amount).toBe('250.00');
  });

  it('promotes atomically: concurrent promotes leave exactly one active version', async () => {
    const a = await createDraft(lowerLimit('500.00'));
    const b = await createDraft(lowerLimit('600.00'));
    const results = await Promise.all([admin.post(`${base}/versions/${a.id}/promote`), admin.post(`${base}/versions/${b.id}/promote`)]);
    expect(results.map((r) => r.status)).toEqual([200, 200]);
    const active = await t.ctx.storage.db.selectFrom('policy_versions').select('id').where('tenant_id', '=', tenantId).where('environment', '=', 'sandbox').where('status', '=', 'active').execute();
    expect(active).toHaveLength(1);
    const head = await t.ctx.storage.db.selectFrom('policy_heads').selectAll().where('tenant_id', '=', tenantId).where('environment', '=', 'sandbox').executeTakeFirstOrThrow();
    expect(head.active_version_id).toBe(active[0]!.id);
    const docs = await t.ctx.creditPolicy.documentsFor(scope(), 'bnpl');
    const activeRow = await t.ctx.creditPolicy.getVersion(scope(), 'bnpl', active[0]!.id);
    expect(docs.policy.version).toBe(activeRow.name);
  });

  it('keeps tenants and environments apart', async () => {
    const mine = await createDraft(lowerLimit('700.00'));
    const live = await admin.get('/portal/api/policy/live/bnpl/current');
    expect(live.body.version).toMatchObject({ source: 'bundled', name: 'bnpl-policy-2026.11.1' });
    expect((await admin.get(`/portal/api/policy/live/bnpl/versions/${mine.id}`)).status).toBe(404);
    expect((await admin.post(`/portal/api/policy/live/bnpl/versions/${mine.id}/promote`)).status).toBe(404);
    expect((await admin.get('/portal/api/policy/live/bnpl/versions')).body.total).toBe(0);

    const other = new PortalClient(t.app);
    expect((await other.signUp({ company: 'Other Lending', email: uniqueEmail('other') })).status).toBe(201);
    expect((await other.get(`${base}/versions/${mine.id}`)).status).toBe(404);
    expect((await other.post(`${base}/versions/${mine.id}/test`)).status).toBe(404);
    expect((await other.get(`${base}/current`)).body.version).toMatchObject({ source: 'bundled' });
    // Numbering is per scope: the other tenant's first version is v1.
    const theirs = await other.post(`${base}/versions`, { tables: lowerLimit('800.00') });
    expect(theirs.body.version).toMatchObject({ version: 1, name: 'bnpl-policy-sandbox-v1' });
    const liveFirst = await admin.post('/portal/api/policy/live/bnpl/versions', { tables: lowerLimit('800.00') });
    expect(liveFirst.body.version).toMatchObject({ version: 1, name: 'bnpl-policy-live-v1', environment: 'live' });
  });

  it('lets every role read and only admins write', async () => {
    const draft = await createDraft(lowerLimit('900.00'));
    for (const role of ['developer', 'underwriter', 'viewer'] as const) {
      const invite = await admin.post('/portal/api/invitations', { email: uniqueEmail(role), role });
      const token = String(invite.body.invite_url).split('#')[1]!;
      const member = new PortalClient(t.app);
      await member.get('/portal/api/session');
      expect((await member.post('/portal/api/invitation-links/accept', { token, name: `${role} person`, password: 'another long passphrase' })).status).toBe(201);
      expect((await member.get('/portal/api/policy/sandbox')).status).toBe(200);
      expect((await member.get(`${base}/versions/${draft.id}`)).status).toBe(200);
      for (const [url, body] of [
        [`${base}/validate`, { tables: bundledTables }],
        [`${base}/versions`, { tables: bundledTables }],
        [`${base}/versions/${draft.id}/test`, {}],
        [`${base}/versions/${draft.id}/promote`, {}],
      ] as const) {
        const r = await member.post(url, body);
        expect(r.status, `${role} ${url}`).toBe(403);
        expect(errorOf(r.raw).error).toBe('forbidden');
      }
    }
    expect((await t.ctx.creditPolicy.getVersion(scope(), 'bnpl', draft.id)).status).toBe('draft');
  });

  it('a second app instance on the same database switches within the freshness bound', async () => {
    const otherClock = new ManualClock(clock.now().toISOString());
    const second = await createTestApp(db, { clock: otherClock, env: { RATE_LIMIT_SANDBOX_PER_S: '100000' } });
    try {
      const warm = await decide('300.00', 'e', second);
      const draft = await createDraft(lowerLimit('150.00'));
      expect((await admin.post(`${base}/versions/${draft.id}/promote`)).status).toBe(200);
      // Promoted through the first instance; the second still holds its cached version.
      const stale = await decide('300.00', 'e', second);
      expect(stale.engine.versions.policy).toBe(warm.engine.versions.policy);
      otherClock.advance(POLICY_FRESHNESS_MS);
      const fresh = await decide('300.00', 'e', second);
      expect(fresh.engine.versions.policy).toBe(draft.name);
      expect(fresh.body.approved_amount).toBe('150.00');
    } finally {
      await second.close();
    }
  });
});
