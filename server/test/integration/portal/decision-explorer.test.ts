/**
 * The portal's decision explorer and dashboard (/portal/api/decisions, /portal/api/dashboard) on
 * SQLite and PostgreSQL, through the real app: decisions are made through /v1 on a manual clock,
 * delivered to a real HTTPS receiver (one endpoint answering 200, one 500), then searched,
 * explained, exported and aggregated. Expected numbers are computed from what the API itself
 * answered, not restated by hand; percentiles are checked on a hand-made set of stored latencies.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { csvCell } from '../../../src/modules/reporting/csv.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { PortalClient } from '../../support/portal-client.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';
import { parseCsv } from '../../support/csv.js';

const HOUR = 3600_000;
const txn = (amount: string, merchant = 'Acme Outdoor') => ({ amount, currency: 'USD', merchant_name: merchant, merchant_category: 'sporting_goods' });
const newConsumer = (first: string, ssn: string) => ({
  first_name: first,
  last_name: 'Applicant',
  email: `${first.toLowerCase()}@example.com`,
  phone: '+14155550199',
  dob: '1985-05-20',
  ssn_last4: ssn,
  address: { line1: '1 Main Street', city: 'Austin', state: 'TX', zip: '73301' },
});
let emailCounter = 0;

interface Explanation {
  versions: { engine_version: string; engine: string; scorecard: string; policy: string };
  partial_scores: Array<{ points: number; max_points: number; points_below_maximum: number; reason: string | null }>;
  inputs: { request: unknown; credit_file: unknown };
  timings: { preparedMs?: unknown };
}
interface DeliveryBody {
  event_id: string;
  endpoint_url: string | null;
  attempt_history: unknown[];
}
type Counts = Record<'approved' | 'declined' | 'referred' | 'pending' | 'total', number>;
interface DashboardBody {
  hours: Array<Counts & { hour: string; approval_rate: number | null }>;
  totals: Counts & { approval_rate: number | null };
  latency: { count: number; p50_ms: number | null; p99_ms: number | null };
  pending_verifications: { as_of: string; total: number; buckets: Array<{ key: string; count: number }> };
  webhooks: Array<{ endpoint_id: string; url: string; success_rate: number | null }>;
}

interface Made {
  id: string;
  consumerId: string;
  createdAt: number;
}


describe('CSV cells', () => {
  it('quotes per RFC 4180 and guards formulas', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\r\nlines')).toBe('"two\r\nlines"');
    expect(csvCell('=HYPERLINK("x")')).toBe(`"'=HYPERLINK(""x"")"`);
    for (const start of ['+', '-', '@', '\t']) expect(csvCell(`${start}1`)).toBe(`'${start}1`);
    expect(csvCell(null)).toBe('');
    expect(csvCell(12.5)).toBe('12.5');
  });
});

describe.each(await dialectMatrix())('decision explorer and dashboard [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  let receiver: WebhookReceiver;
  const clock = new ManualClock('2026-03-02T09:00:00.000Z');
  const start = clock.now().getTime();
  let client: PortalClient;
  let email = '';
  let apiKey = '';
  let consumers: { soft: string; enhanced: string; hard: string };
  const made: Made[] = [];

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    receiver.setMode('/down', 500);
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, {
      clock,
      env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' },
      overrides: { webhookDelivery: { ca: receiver.ca, timeoutMs: 2_000, leaseMs: 30_000, schedule: { delaysMs: [] } } },
    });
    client = new PortalClient(t.app);
    email = `risk.${++emailCounter}@lender.example.com`;
    const signed = await client.signUp({ company: 'Explorer Lending', email });
    expect(signed.status, JSON.stringify(signed.body)).toBe(201);
    apiKey = String(signed.body.sandbox_api_key);
    const seeded = (await client.get('/portal/api/sandbox/consumers?seeded=true')).body.data as Array<{ id: string; tier: string }>;
    consumers = { soft: seeded[0]!.id, enhanced: seeded[1]!.id, hard: seeded[2]!.id };
    for (const path of ['/up', '/down']) {
      const r = await client.post('/portal/api/webhooks/sandbox/endpoints', { url: receiver.url(path), events: ['decision.created', 'decision.finalized'] });
      expect(r.status).toBe(201);
    }
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await receiver?.stop();
  });

  /** Sign in again after the clock jumped past the session's 30-minute idle limit. */
  async function signIn(): Promise<void> {
    const r = await client.login(email);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  }

  async function decide(body: unknown): Promise<Record<string, unknown>> {
    const r = await t.app.inject({ method: 'POST', url: '/v1/decisions/bnpl', headers: { ...bearer(apiKey), 'content-type': 'application/json' }, payload: JSON.stringify(body) });
    expect(r.statusCode, r.body).toBe(200);
    const json = r.json() as Record<string, unknown>;
    const stored = await t.ctx.storage.db.selectFrom('decisions').select('consumer_id').where('id', '=', String(json.decision_id)).executeTakeFirstOrThrow();
    made.push({ id: String(json.decision_id), consumerId: stored.consumer_id, createdAt: clock.now().getTime() });
    return json;
  }

  /** What the API says each decision is now: outcome, or pending while the consumer must act. */
  async function outcomesNow(): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const m of made) {
      const r = await t.app.inject({ method: 'GET', url: `/v1/decisions/bnpl/${m.id}`, headers: bearer(apiKey) });
      const body = r.json() as { status: string; outcome: string | null };
      out.set(m.id, body.status === 'needs_consumer_action' ? 'pending' : String(body.outcome));
    }
    return out;
  }

  it('makes the data set through /v1 on the manual clock', async () => {
    clock.set(new Date(start + 5 * 60_000)); // 09:05
    expect((await decide({ consumer: { consumer_id: consumers.soft }, transaction: txn('100.00') })).outcome).toBe('approved');
    clock.advance(60_000);
    // A merchant name a spreadsheet would run as a formula, with a comma and quotes to escape.
    expect((await decide({ consumer: { consumer_id: consumers.soft }, transaction: txn('120.00', '=HYPERLINK("http://x.example","Go, now")') })).outcome).toBe('approved');
    clock.advance(4 * 60_000);
    expect((await decide({ consumer: newConsumer('Dora', '0000'), transaction: txn('200.00') })).outcome).toBe('declined');
    clock.set(new Date(start + HOUR + 15 * 60_000)); // 10:15
    expect((await decide({ consumer: newConsumer('Rafe', '1111'), transaction: txn('200.00') })).outcome).toBe('referred');
    clock.advance(60_000);
    expect((await decide({ consumer: { consumer_id: consumers.enhanced }, transaction: txn('600.00') })).status).toBe('needs_consumer_action');
    clock.set(new Date(start + 2 * HOUR + 30 * 60_000)); // 11:30
    expect((await decide({ consumer: { consumer_id: consumers.hard }, transaction: txn('6000.00') })).status).toBe('needs_consumer_action');
    clock.advance(60_000);
    expect((await decide({ consumer: { consumer_id: consumers.soft }, transaction: txn('50.00') })).outcome).toBe('approved');
    await t.ctx.webhookDelivery.deliverDue();
    expect(receiver.requestsTo('/up').length).toBeGreaterThan(0);
    await signIn();
  });

  it('lists newest first with keyset pages, filters, and names a bad parameter', async () => {
    const all = await client.get('/portal/api/decisions/sandbox?limit=3');
    expect(all.status).toBe(200);
    const ids: string[] = [];
    let page = all.body;
    for (;;) {
      ids.push(...(page.data as Array<{ decision_id: string }>).map((d) => d.decision_id));
      if (!page.has_more) break;
      page = (await client.get(`/portal/api/decisions/sandbox?limit=3&cursor=${String(page.next_cursor)}`)).body;
    }
    expect(ids).toEqual([...made].reverse().map((m) => m.id));
    const first = (all.body.data as Array<Record<string, unknown>>)[0]!;
    expect(first).toMatchObject({ decision_id: made[6]!.id, outcome: 'approved', requested_amount: '50.00', currency: 'USD', product: 'bnpl', created_at: new Date(made[6]!.createdAt).toISOString() });
    expect(first.latency_ms).toEqual(expect.any(Number));
    expect(JSON.stringify(all.body)).not.toMatch(/Riley|riley|Returning|@sandbox/);

    const now = await outcomesNow();
    for (const outcome of ['approved', 'declined', 'referred', 'pending']) {
      const r = await client.get(`/portal/api/decisions/sandbox?outcome=${outcome}`);
      expect((r.body.data as Array<{ decision_id: string }>).map((d) => d.decision_id).sort(), outcome).toEqual(made.filter((m) => now.get(m.id) === outcome).map((m) => m.id).sort());
    }
    const byConsumer = await client.get(`/portal/api/decisions/sandbox?consumer_id=${consumers.soft}`);
    expect((byConsumer.body.data as unknown[]).length).toBe(3);
    const byId = await client.get(`/portal/api/decisions/sandbox?decision_id=${made[2]!.id}`);
    expect((byId.body.data as Array<{ outcome: string; reason_codes: string[] }>)).toMatchObject([{ outcome: 'declined', reason_codes: expect.arrayContaining(['AA-21']) }]);
    const window = await client.get(`/portal/api/decisions/sandbox?from=${new Date(start + HOUR).toISOString()}&to=${new Date(start + 2 * HOUR).toISOString()}`);
    expect((window.body.data as Array<{ decision_id: string }>).map((d) => d.decision_id)).toEqual([made[4]!.id, made[3]!.id]);
    expect((await client.get('/portal/api/decisions/sandbox?product=bnpl')).body.data).toHaveLength(7);
    expect((await client.get('/portal/api/decisions/sandbox?product=auto_loan')).body.data).toHaveLength(0);

    for (const [query, message] of [
      ['outcome=maybe', /outcome must be one of: approved, declined, referred, pending/],
      ['decision_id=123', /decision_id must be a UUID such as/],
      ['from=yesterday', /from must be an ISO 8601 date-time/],
      ['limit=500', /limit must be a whole number from 1 to 100/],
      ['colour=red', /colour is not a recognised query parameter; allowed query parameters: decision_id/],
      ['cursor=bm90LWEtY3Vyc29y', /cursor is not a cursor this list returned/],
      [`from=${new Date(start + HOUR).toISOString()}&to=${new Date(start).toISOString()}`, /from must be earlier than to/],
    ] as const) {
      const r = await client.get(`/portal/api/decisions/sandbox?${query}`);
      expect(r.status, query).toBe(400);
      expect(errorOf(r.raw), query).toMatchObject({ error: 'invalid_request', message: expect.stringMatching(message) });
    }
  });

  it('explains one decision: inputs masked, partial scores below maximum, versions, timings, events and deliveries with attempts', async () => {
    const approved = made[0]!;
    const r = await client.get(`/portal/api/decisions/sandbox/${approved.id}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const polled = (await t.app.inject({ method: 'GET', url: `/v1/decisions/bnpl/${approved.id}`, headers: bearer(apiKey) })).json();
    expect(r.body.decision).toEqual(polled);
    const x = r.body.explanation as unknown as Explanation;
    expect(x.versions.engine_version).toMatch(/^engine-.+\+.+\+.+$/);
    expect(x.versions.engine_version).toBe(`engine-${x.versions.engine}+${x.versions.scorecard}+${x.versions.policy}`);
    expect(x.partial_scores.length).toBeGreaterThan(0);
    for (const p of x.partial_scores) expect(p.points_below_maximum).toBeCloseTo(p.max_points - p.points, 6);
    expect(x.partial_scores.every((p) => p.reason === null || p.reason.length > 3)).toBe(true);
    expect(x.inputs.request).toMatchObject({ amount: '100.00', currency: 'USD' });
    expect(x.inputs.credit_file).toMatchObject({ hasFile: true });
    expect(typeof x.timings.preparedMs).toBe('number');
    expect(r.body.summary).toMatchObject({ latency_ms: x.timings.preparedMs });
    // No PII of the seeded consumer anywhere in the explanation.
    expect(JSON.stringify(r.body)).not.toMatch(/Riley|Returning|riley\.returning|1988-03-14|94105|\+14155550101/);

    const events = r.body.events as Array<{ id: string; type: string }>;
    expect(events.map((e) => e.type)).toEqual(['application.created', 'decision.created', 'score.completed', 'decision.finalized']);
    const deliveries = r.body.deliveries as unknown as DeliveryBody[];
    // Two endpoints subscribed to decision.created and decision.finalized: four deliveries.
    expect(deliveries).toHaveLength(4);
    for (const d of deliveries) {
      expect(events.map((e) => e.id)).toContain(d.event_id);
      expect(d.attempt_history).toHaveLength(1);
      if (String(d.endpoint_url).endsWith('/up')) expect(d).toMatchObject({ state: 'delivered', attempt_history: [{ response_status: 200, error_kind: null }] });
      else expect(d).toMatchObject({ state: 'failed', attempt_history: [{ response_status: 500, error_kind: 'http_status' }] });
    }

    // A pending decision: the verification link is the consumer's, never shown here.
    const pending = await client.get(`/portal/api/decisions/sandbox/${made[5]!.id}`);
    expect(pending.body.decision).toMatchObject({ status: 'needs_consumer_action', consumer_complete_url: expect.stringMatching(/\/verify\/••••$/) });
    expect(pending.body.explanation).toMatchObject({ partial_scores: [], kyc: { tier: 'hard', status: 'pending' } });
  });

  it('isolates tenants and environments: another tenant or environment sees 404 and none of the rows', async () => {
    const other = new PortalClient(t.app);
    expect((await other.signUp({ company: 'Other Lending', email: `other.${++emailCounter}@lender.example.com` })).status).toBe(201);
    const theirs = await other.get(`/portal/api/decisions/sandbox/${made[0]!.id}`);
    expect(theirs.status).toBe(404);
    expect(errorOf(theirs.raw).error).toBe('not_found');
    expect((await other.get('/portal/api/decisions/sandbox')).body.data).toEqual([]);
    expect((await other.get(`/portal/api/decisions/sandbox?decision_id=${made[0]!.id}`)).body.data).toEqual([]);
    const csv = await other.get('/portal/api/decisions/sandbox/export.csv');
    expect(parseCsv(csv.raw.body)).toHaveLength(1);
    const theirDashboard = await other.get(`/portal/api/dashboard/sandbox?from=${new Date(start).toISOString()}&to=${new Date(start + 4 * HOUR).toISOString()}`);
    expect(theirDashboard.body).toMatchObject({ totals: { total: 0 }, webhooks: [], pending_verifications: { total: 0 } });

    expect((await client.get(`/portal/api/decisions/live/${made[0]!.id}`)).status).toBe(404);
    expect((await client.get('/portal/api/decisions/live')).body.data).toEqual([]);
    expect((await client.get('/portal/api/decisions/staging')).status).toBe(400);
    expect((await new PortalClient(t.app).get('/portal/api/decisions/sandbox')).status).toBe(401);
  });

  it('exports the filtered list as CSV: every page, a header, quoting, money and times, no PII', async () => {
    const r = await client.get('/portal/api/decisions/sandbox/export.csv');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(r.headers['content-disposition']).toBe(`attachment; filename=decisions-sandbox-${clock.now().toISOString().slice(0, 10)}.csv`);
    const rows = parseCsv(r.raw.body);
    const [header, ...data] = rows;
    expect(header).toEqual(['decision_id', 'application_id', 'created_at', 'completed_at', 'consumer_id', 'product', 'status', 'outcome', 'kyc_tier', 'kyc_status', 'currency', 'merchant_name', 'merchant_category', 'requested_amount', 'approved_amount', 'plan', 'term_months', 'apr', 'score', 'risk_grade', 'reason_codes', 'engine_version', 'latency_ms', 'adverse_action', 'notice_due_by']);
    expect(data.map((d) => d[0])).toEqual([...made].reverse().map((m) => m.id));
    const col = (name: string) => header!.indexOf(name);
    const declined = data.find((d) => d[0] === made[2]!.id)!;
    expect(declined[col('requested_amount')]).toBe('200.00');
    expect(declined[col('created_at')]).toBe(new Date(made[2]!.createdAt).toISOString());
    expect(declined[col('consumer_id')]).toBe(made[2]!.consumerId);
    expect(declined[col('reason_codes')]).toMatch(/^AA-21( AA-\d\d)*$/);
    // The decline owes a notice; nothing else in this set does (approvals in full, a referral, pending).
    expect(data.filter((d) => d[col('adverse_action')] !== '').map((d) => [d[0], d[col('adverse_action')]])).toEqual([[made[2]!.id, 'declined']]);
    for (const d of data) {
      expect(d).toHaveLength(header!.length);
      expect(d[col('requested_amount')]).toMatch(/^\d+\.\d\d$/);
      if (d[col('approved_amount')] !== '') expect(d[col('approved_amount')]).toMatch(/^\d+\.\d\d$/);
    }
    expect(r.raw.body).not.toMatch(/Dora|Rafe|Riley|Applicant|@example\.com|73301|1985-05-20/);
    // Quoted (comma and quotes inside), quotes doubled, and guarded against formula execution.
    expect(r.raw.body).toContain(`,"'=HYPERLINK(""http://x.example"",""Go, now"")",`);
    expect(data.find((d) => d[0] === made[1]!.id)![col('merchant_name')]).toBe(`'=HYPERLINK("http://x.example","Go, now")`);
    expect(data.find((d) => d[0] === made[0]!.id)![col('merchant_name')]).toBe('Acme Outdoor');

    // Page by page gives the same file: pages of 2 rows walk the keyset across every boundary.
    const tenantId = (await t.ctx.storage.db.selectFrom('decisions').select('tenant_id').where('id', '=', made[0]!.id).executeTakeFirstOrThrow()).tenant_id;
    let paged = '';
    let chunks = 0;
    for await (const chunk of await t.ctx.reporting.exportDecisionsCsv({ tenantId, environment: 'sandbox' }, {}, { pageSize: 2 })) {
      paged += chunk;
      chunks++;
    }
    expect(paged).toBe(r.raw.body);
    expect(chunks).toBe(1 + Math.ceil(made.length / 2));

    const filtered = parseCsv((await client.get('/portal/api/decisions/sandbox/export.csv?outcome=approved')).raw.body);
    expect(filtered.slice(1).map((d) => d[col('outcome')])).toEqual(['approved', 'approved', 'approved']);
    expect((await client.get('/portal/api/decisions/sandbox/export.csv?outcome=nope')).status).toBe(400);
  });

  it('dashboard: counts per hour by outcome, approval rate, latency, pending by age and webhook success match the API', async () => {
    // The enhanced decision passes verification at 12:00: it leaves "pending" for its outcome.
    clock.set(new Date(start + 3 * HOUR));
    const verified = await t.app.inject({ method: 'POST', url: `/v1/sandbox/decisions/${made[4]!.id}/verification`, headers: { ...bearer(apiKey), 'content-type': 'application/json' }, payload: '{"result":"pass"}' });
    expect(verified.statusCode, verified.body).toBe(200);
    await t.ctx.webhookDelivery.deliverDue();
    await signIn();

    const from = new Date(start).toISOString();
    const to = new Date(start + 4 * HOUR).toISOString();
    const r = await client.get(`/portal/api/dashboard/sandbox?from=${from}&to=${to}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const d = r.body as unknown as DashboardBody;

    const now = await outcomesNow();
    expect(now.get(made[4]!.id)).not.toBe('pending');
    const hours = d.hours;
    expect(hours.map((h) => h.hour)).toEqual([0, 1, 2, 3].map((i) => new Date(start + i * HOUR).toISOString()));
    for (const h of hours) {
      const inHour = made.filter((m) => Math.floor(m.createdAt / HOUR) * HOUR === new Date(h.hour).getTime());
      for (const outcome of ['approved', 'declined', 'referred', 'pending'] as const) expect(h[outcome], `${h.hour} ${outcome}`).toBe(inHour.filter((m) => now.get(m.id) === outcome).length);
      expect(h.total).toBe(inHour.length);
    }
    expect(hours[0]).toMatchObject({ approved: 2, declined: 1, total: 3, approval_rate: 0.6667 });
    const count = (o: string) => made.filter((m) => now.get(m.id) === o).length;
    expect(d.totals).toMatchObject({ approved: count('approved'), declined: count('declined'), referred: count('referred'), pending: count('pending'), total: 7 });
    expect(d.totals.approval_rate).toBe(Math.round((count('approved') / (count('approved') + count('declined') + count('referred'))) * 10_000) / 10_000);

    // Latency: the nearest-rank p50/p99 of the latencies the detail view reports for each decided decision.
    const latencies: number[] = [];
    for (const m of made) {
      const detail = await client.get(`/portal/api/decisions/sandbox/${m.id}`);
      const l = (detail.body.summary as { latency_ms: number | null }).latency_ms;
      if (l !== null) latencies.push(l);
    }
    latencies.sort((a, b) => a - b);
    expect(latencies.length).toBe(6); // everything but the hard-tier decision still pending
    expect(d.latency).toEqual({ count: 6, p50_ms: latencies[2], p99_ms: latencies[5] });

    // Pending at 13:00: the hard decision made at 11:30 (1.5 h old).
    expect(d.pending_verifications).toMatchObject({ as_of: to, total: 1 });
    expect(d.pending_verifications.buckets.map((b) => [b.key, b.count])).toEqual([
      ['under_1h', 0],
      ['1h_to_6h', 1],
      ['6h_to_24h', 0],
      ['24h_to_72h', 0],
      ['over_72h', 0],
    ]);
    // As of 11:45 both the enhanced (1.5 h) and the hard (15 min) decisions were waiting.
    const earlier = await client.get(`/portal/api/dashboard/sandbox?from=${from}&to=${new Date(start + 2 * HOUR + 45 * 60_000).toISOString()}`);
    expect((earlier.body.pending_verifications as { buckets: Array<{ count: number }> }).buckets.map((b) => b.count)).toEqual([1, 1, 0, 0, 0]);

    // Webhooks: per endpoint, from the endpoints' own delivery history.
    const endpoints = (await client.get('/portal/api/webhooks/sandbox/endpoints')).body.data as Array<{ id: string; url: string }>;
    for (const e of endpoints) {
      const history = (await client.get(`/portal/api/webhooks/sandbox/endpoints/${e.id}/deliveries?page_size=100`)).body.data as Array<{ state: string }>;
      const row = d.webhooks.find((w) => w.endpoint_id === e.id)!;
      const n = (s: string) => history.filter((h) => h.state === s).length;
      expect(row).toMatchObject({ url: e.url, delivered: n('delivered'), failed: n('failed'), pending: n('pending'), finished: n('delivered') + n('failed') });
      expect(row.success_rate).toBe(e.url.endsWith('/up') ? 1 : 0);
    }
    expect(d.webhooks.length).toBe(2);

    // A period outside the data is all zeros; the default period is the last 24 hours.
    const empty = await client.get(`/portal/api/dashboard/sandbox?from=${new Date(start - 5 * HOUR).toISOString()}&to=${new Date(start - HOUR).toISOString()}`);
    expect(empty.body).toMatchObject({ totals: { total: 0, approval_rate: null }, latency: { count: 0, p50_ms: null, p99_ms: null } });
    const byDefault = await client.get('/portal/api/dashboard/sandbox');
    expect(byDefault.body).toMatchObject({ to: clock.now().toISOString(), from: new Date(clock.now().getTime() - 24 * HOUR).toISOString(), totals: { total: 7 } });
    expect((byDefault.body.hours as unknown[]).length).toBe(24);

    for (const [query, message] of [
      [`from=${to}&to=${from}`, /from must be earlier than to/],
      [`from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z`, /at most 31 days/],
      ['to=soon', /to must be an ISO 8601 date-time/],
    ] as const) {
      const bad = await client.get(`/portal/api/dashboard/sandbox?${query}`);
      expect(bad.status, query).toBe(400);
      expect(errorOf(bad.raw).message).toMatch(message);
    }
  });

  it('percentiles are nearest-rank over the stored latencies, identical on both dialects', async () => {
    // A hand-made set: 10 decisions' stored latencies replaced by known values in a fresh hour.
    clock.set(new Date(start + 10 * HOUR));
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(String((await decide({ consumer: { consumer_id: consumers.soft }, transaction: txn('30.00') })).decision_id));
    const values = [12.5, 3.25, 7, 0.75, 100.01, 45, 9.5, 2, 30.3, 5];
    await signIn();
    for (const [i, id] of ids.entries()) await t.ctx.storage.db.updateTable('decisions').set({ latency_ms: values[i]! }).where('id', '=', id).execute();
    const r = await client.get(`/portal/api/dashboard/sandbox?from=${new Date(start + 10 * HOUR).toISOString()}&to=${new Date(start + 11 * HOUR).toISOString()}`);
    // Sorted: 0.75 2 3.25 5 7 9.5 12.5 30.3 45 100.01 -> p50 = 5th = 7, p99 = 10th = 100.01.
    expect(r.body.latency).toEqual({ count: 10, p50_ms: 7, p99_ms: 100.01 });
    expect((r.body.hours as Array<Record<string, unknown>>)[0]).toMatchObject({ latency_count: 10, latency_p50_ms: 7, latency_p99_ms: 100.01, approved: 10, approval_rate: 1 });
  });
  it('percentiles per hour and over the period, as the database ranks them: one value, ties, and an hour where p99 is not the maximum', async () => {
    // Three fresh hours: 1 decision, 7 (with ties), 150 (two of them without a latency).
    const base = start + 20 * HOUR;
    const plan: Array<{ hour: number; values: Array<number | null> }> = [
      { hour: 0, values: [4.5] },
      { hour: 1, values: [8, 2, 8, 8, 1.25, 2, 30] },
      { hour: 2, values: Array.from({ length: 150 }, (_, i) => (i === 17 || i === 90 ? null : ((i * 37) % 149) + 0.5)) },
    ];
    const written: Array<{ hour: number; value: number | null }> = [];
    for (const { hour, values } of plan) {
      clock.set(new Date(base + hour * HOUR + 60_000));
      for (const value of values) {
        const id = String((await decide({ consumer: { consumer_id: consumers.soft }, transaction: txn('30.00') })).decision_id);
        await t.ctx.storage.db.updateTable('decisions').set({ latency_ms: value }).where('id', '=', id).execute();
        written.push({ hour, value });
      }
    }
    await signIn();
    const r = await client.get(`/portal/api/dashboard/sandbox?from=${new Date(base).toISOString()}&to=${new Date(base + 3 * HOUR).toISOString()}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    // Computed here from what was written: sort, then the value at rank ceil(p/100 * n).
    const nearestRank = (values: number[], p: number) => {
      const sorted = [...values].sort((a, b) => a - b);
      return sorted.length === 0 ? null : sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1]!;
    };
    const present = (hour?: number) => written.filter((w) => w.value !== null && (hour === undefined || w.hour === hour)).map((w) => w.value!);
    const hours = r.body.hours as Array<{ latency_count: number; latency_p50_ms: number | null; latency_p99_ms: number | null; total: number }>;
    for (const hour of [0, 1, 2]) {
      expect(hours[hour], `hour ${hour}`).toMatchObject({
        total: plan[hour]!.values.length,
        latency_count: present(hour).length,
        latency_p50_ms: nearestRank(present(hour), 50),
        latency_p99_ms: nearestRank(present(hour), 99),
      });
    }
    expect(hours[2]!.latency_p99_ms).not.toBe(Math.max(...present(2)));
    expect(hours[1]).toMatchObject({ latency_p50_ms: 8, latency_p99_ms: 30 });
    expect(r.body.latency).toEqual({ count: 156, p50_ms: nearestRank(present(), 50), p99_ms: nearestRank(present(), 99) });
  });
});
