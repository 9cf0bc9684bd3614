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

type AutoTables = {
  grades: Array<{ grade: string; min_score: number | null; band: string; limit: string; max_ltv_pct: number | null }>;
  buy_rates: Array<{ grade: string; up_to_48: string | null; months_60: string | null; months_72: string | null; months_84: string | null }>;
  used_vehicle_adder: string;
  markup_caps: { up_to_60_months: string; above_60_months: string };
  dealer_reserve_share_pct: number;
  kyc_tiers: { enhanced_from: string; hard_from: string };
  amount_financed: { min: string; max: string };
};

describe.each(await dialectMatrix())('auto-loan credit policy versions [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  const clock = new ManualClock('2026-04-06T10:00:00.000Z');
  let admin: PortalClient;
  let tenantId: string;
  let apiKey: string;
  let bundledTables: AutoTables;
  const base = '/portal/api/policy/sandbox/auto_loan';

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock, env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' } });
    admin = new PortalClient(t.app);
    const r = await admin.signUp({ company: 'Motor Lending', email: uniqueEmail('motor') });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    tenantId = (r.body as { tenant: { id: string } }).tenant.id;
    apiKey = (r.body as { sandbox_api_key: string }).sandbox_api_key;
    const current = await admin.get(`${base}/current`);
    expect(current.status, JSON.stringify(current.body)).toBe(200);
    bundledTables = current.body.tables as AutoTables;
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const scope = () => ({ tenantId, environment: 'sandbox' as const });
  const tablesWith = (edit: (x: AutoTables) => void): AutoTables => {
    const copy = structuredClone(bundledTables);
    edit(copy);
    return copy;
  };
  /** Grade A at 60 months priced at `rate` (a visible change on a prime applicant's used-car loan). */
  const gradeA60 = (rate: string) => tablesWith((x) => void (x.buy_rates.find((r) => r.grade === 'A')!.months_60 = rate));

  /** A direct used-car loan for a prime applicant: 13,000.00 financed over 60 months at LTV 86.67 (grade A). */
  async function decide(salt: string, key = apiKey) {
    const who = primeIdentity(`Auto${salt}`);
    const r = await t.app.inject({
      method: 'POST',
      url: '/v1/decisions/auto-loan',
      headers: { ...bearer(key), 'content-type': 'application/json' },
      payload: JSON.stringify({
        consumer: {
          first_name: who.firstName, last_name: who.lastName, email: 'driver@example.com', phone: '+14155550177', dob: who.dob, ssn_last4: '4821',
          address: { line1: '9 Garage Lane', city: 'Dayton', state: 'OH', zip: '45402' },
        },
        vehicle: { vin: '1HGCM8262RA004352', year: 2024, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00' },
        loan: { amount: '16000.00', down_payment: '2000.00', trade_in_value: '1000.00', term_months: 60, currency: 'USD' },
        channel: 'direct',
      }),
    });
    expect(r.statusCode, r.body).toBe(200);
    const body = r.json() as { decision_id: string; outcome: string; buy_rate?: string; contract_rate?: string };
    const finalized = await t.ctx.storage.db.selectFrom('events').selectAll().where('subject_id', '=', body.decision_id).where('type', '=', 'decision.finalized').executeTakeFirstOrThrow();
    return { body, engineVersion: JSON.parse(finalized.data_json).engine_version as string };
  }

  it('lists auto loans beside BNPL, on the bundled default with its structured view', async () => {
    const r = await admin.get('/portal/api/policy/sandbox');
    const products = r.body.products as Array<Record<string, unknown>>;
    expect(products.map((p) => p.product)).toEqual(['bnpl', 'auto_loan']);
    expect(products[1]).toMatchObject({ label: 'Auto loans', version_count: 0, current: { source: 'bundled', name: 'auto-policy-2026.11.1' }, scorecard_versions: ['auto-sc-2026.11.1'] });
    expect(bundledTables.grades.map((g) => [g.grade, g.min_score, g.max_ltv_pct, g.limit])).toEqual([
      ['A', 720, 130, '100000.00'], ['B', 660, 120, '75000.00'], ['C', 620, 110, '40000.00'], ['D', 580, 100, '25000.00'], ['E', null, null, '0.00'],
    ]);
    expect(bundledTables.buy_rates[0]).toEqual({ grade: 'A', up_to_48: '5.49', months_60: '5.99', months_72: '6.49', months_84: '6.99' });
    expect(bundledTables).toMatchObject({ used_vehicle_adder: '1.00', markup_caps: { up_to_60_months: '1.25', above_60_months: '1.00' }, dealer_reserve_share_pct: 75, amount_financed: { min: '5000.00', max: '100000.00' } });
    const before = await decide('a');
    expect(before.body).toMatchObject({ outcome: 'approved', buy_rate: '6.99' });
    expect(before.engineVersion).toBe('engine-1.0.0+auto-sc-2026.11.1+auto-policy-2026.11.1');
  });

  it('validates an edited version, listing every problem of a bad one, and stores nothing', async () => {
    const malformed = tablesWith((x) => {
      x.buy_rates[0]!.months_60 = 'cheap';
      x.dealer_reserve_share_pct = 140;
      x.markup_caps.up_to_60_months = '1.5';
    });
    const first = await admin.post(`${base}/validate`, { tables: malformed });
    expect(first.status).toBe(200);
    expect((first.body.problems as Array<{ path: string; rule: string }>).map((p) => [p.path, p.rule])).toEqual([
      ['/tables/buy_rates/0/months_60', 'rate_format'],
      ['/tables/dealer_reserve_share_pct', 'reserve_share_range'],
      ['/tables/markup_caps/up_to_60_months', 'rate_format'],
    ]);
    const bad = tablesWith((x) => {
      x.buy_rates[2]!.months_72 = '36.50';
      x.grades[1]!.min_score = 730;
      x.grades[3]!.max_ltv_pct = 140;
      x.kyc_tiers.enhanced_from = '50000.00';
      x.amount_financed = { min: '90000.00', max: '80000.00' };
      x.markup_caps = { up_to_60_months: '1.00', above_60_months: '1.50' };
    });
    const r = await admin.post(`${base}/validate`, { tables: bad });
    expect(r.body.valid).toBe(false);
    const rules = (r.body.problems as Array<{ rule: string }>).map((p) => p.rule).sort();
    expect(rules).toEqual(['amount_range_ordered', 'cutoffs_ordered', 'ltv_ordered', 'markup_caps_ordered', 'rate_range', 'tier_thresholds_ordered']);
    const created = await admin.post(`${base}/versions`, { tables: bad });
    expect(created.status).toBe(422);
    expect(errorOf(created.raw).error).toBe('invalid_policy');
    expect(errorOf(created.raw).message).toContain('(markup_caps_ordered)');
    const good = await admin.post(`${base}/validate`, { tables: gradeA60('4.75') });
    expect(good.body).toMatchObject({ valid: true, problems: [], based_on: 'auto-policy-2026.11.1', scorecard_version: 'auto-sc-2026.11.1' });
    expect((await t.ctx.creditPolicy.listVersions(scope(), 'auto_loan', { limit: 10, offset: 0 })).total).toBe(0);
  });

  it('creates, tests against the sandbox without writing, and promotes a version the next decision uses and names', async () => {
    const created = await admin.post(`${base}/versions`, { tables: gradeA60('4.75'), note: 'A 60 months 4.75' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const v1 = created.body.version as { id: string; name: string; version: number; status: string; engine_version: string };
    expect([v1.version, v1.name, v1.status]).toEqual([1, 'auto_loan-policy-sandbox-v1', 'draft']);
    expect(v1.engine_version).toBe('engine-1.0.0+auto-sc-2026.11.1+auto_loan-policy-sandbox-v1');
    expect((created.body.tables as AutoTables).buy_rates[0]!.months_60).toBe('4.75');
    // BNPL numbering is its own.
    expect((await t.ctx.creditPolicy.listVersions(scope(), 'bnpl', { limit: 10, offset: 0 })).total).toBe(0);

    const count = async () => Number((await t.ctx.storage.db.selectFrom('decisions').select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow()).n);
    const decisionsBefore = await count();
    const tested = await admin.post(`${base}/versions/${v1.id}/test`);
    expect(tested.status, JSON.stringify(tested.body)).toBe(200);
    expect(tested.body.against).toBe('auto-policy-2026.11.1');
    type Row = { id: string; label: string; active: { outcome: string; risk_grade: string | null; apr: string | null; plan: string }; draft: { outcome: string; apr: string | null; plan: string }; changed: string[] };
    const rows = tested.body.rows as Row[];
    expect(rows.length).toBeGreaterThanOrEqual(12);
    expect(rows.some((r) => r.label.includes('indirect'))).toBe(true);
    expect(rows.some((r) => r.label.includes(', new '))).toBe(true);
    expect(new Set(rows.map((r) => r.active.risk_grade)).size).toBeGreaterThanOrEqual(3);
    expect(rows.find((r) => r.id === 'magic-0000')!.active.outcome).toBe('declined');
    expect(rows.find((r) => r.id === 'magic-3333')!.active.outcome).toBe('referred');
    // Grade A at 60 months reprices; nothing else moves.
    const primeDirect60 = rows.find((r) => r.id === 'prime-direct-new-60-1')!;
    expect(primeDirect60.active.plan).toContain('buy rate 5.99%');
    expect(primeDirect60.draft.plan).toContain('buy rate 4.75%');
    expect(primeDirect60.changed).toEqual(['plan', 'apr']);
    expect(Number(primeDirect60.draft.apr)).toBeLessThan(Number(primeDirect60.active.apr));
    for (const r of rows) if (r.changed.length > 0) expect(r.active.risk_grade === 'A' && r.label.includes('60 mo')).toBe(true);
    expect(tested.body.changed_count).toBe(rows.filter((r) => r.changed.length > 0).length);
    expect(await count()).toBe(decisionsBefore);

    const before = await decide('b');
    expect(before.body.buy_rate).toBe('6.99');
    const promoted = await admin.post(`${base}/versions/${v1.id}/promote`);
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
    expect(promoted.body.version).toMatchObject({ status: 'active', name: 'auto_loan-policy-sandbox-v1' });
    // The very next auto-loan decision: 4.75 + 1.00 used-vehicle adder, named by its version.
    const after = await decide('b');
    expect(after.body).toMatchObject({ outcome: 'approved', buy_rate: '5.75', contract_rate: '5.75' });
    expect(after.engineVersion).toBe('engine-1.0.0+auto-sc-2026.11.1+auto_loan-policy-sandbox-v1');
    const audit = (await t.ctx.decisions.getAuditRecord(scope(), after.body.decision_id)) as { engine: { versions: { policy: string } } };
    expect(audit.engine.versions.policy).toBe('auto_loan-policy-sandbox-v1');
    // BNPL still decides with its own bundled default.
    expect((await t.ctx.creditPolicy.documentsFor(scope(), 'bnpl')).policy.version).toBe('bnpl-policy-2026.11.1');
  });

  it('keeps tenants and environments apart', async () => {
    const mine = await admin.post(`${base}/versions`, { tables: gradeA60('4.50') });
    expect(mine.status).toBe(201);
    const id = (mine.body.version as { id: string }).id;
    expect((await admin.get('/portal/api/policy/live/auto_loan/current')).body.version).toMatchObject({ source: 'bundled', name: 'auto-policy-2026.11.1' });
    expect((await admin.get(`/portal/api/policy/live/auto_loan/versions/${id}`)).status).toBe(404);
    expect((await admin.post(`/portal/api/policy/live/auto_loan/versions/${id}/promote`)).status).toBe(404);
    // The id under the other product is not found either.
    expect((await admin.get(`/portal/api/policy/sandbox/bnpl/versions/${id}`)).status).toBe(404);

    const other = new PortalClient(t.app);
    const signed = await other.signUp({ company: 'Other Motors', email: uniqueEmail('othermotor') });
    expect(signed.status).toBe(201);
    expect((await other.get(`${base}/versions/${id}`)).status).toBe(404);
    expect((await other.post(`${base}/versions/${id}/test`)).status).toBe(404);
    expect((await other.get(`${base}/current`)).body.version).toMatchObject({ source: 'bundled' });
    // The other tenant's auto-loan decisions keep the bundled buy rate while ours use v1.
    const theirs = await decide('c', (signed.body as { sandbox_api_key: string }).sandbox_api_key);
    expect(theirs.body.buy_rate).toBe('6.99');
    expect(theirs.engineVersion).toBe('engine-1.0.0+auto-sc-2026.11.1+auto-policy-2026.11.1');
    const liveFirst = await admin.post('/portal/api/policy/live/auto_loan/versions', { tables: gradeA60('4.25') });
    expect(liveFirst.body.version).toMatchObject({ version: 1, name: 'auto_loan-policy-live-v1', environment: 'live' });
  });
});
