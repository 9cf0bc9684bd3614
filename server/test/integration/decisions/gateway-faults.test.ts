/**
 * The credit-data gateway failing, seen through the HTTP API on a live key (issue 11, dependency
 * faults). live-credit-data.test.ts shows each failure kind becomes a referral with AA-25, and
 * gateway-connector.test.ts drives the connector's breaker directly; this adds what only the whole
 * path shows:
 * - the latency budget: a gateway that would answer in 5 s costs a decision only the configured
 *   budget, as the service itself reports it (the audit record's credit_data.latency_ms and
 *   timings.creditDataMs, measured by the service, not by this test's wall clock);
 * - the circuit breaker, with the connector's clock injected: after N failed creates it opens, and
 *   creates (even a burst at once) are referred with AA-25 without a single request reaching the
 *   fake gateway; after the cool-down one trial create goes through (a concurrent one is still
 *   refused), and its success closes the breaker so creates are approved again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { createGatewayConnector, type GatewayConnector } from '../../../src/modules/credit-data/gateway-connector.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { FAKE_GATEWAY_TOKEN, startFakeCreditGateway, type FakeCreditGateway } from '../../support/fake-credit-gateway.js';
import { pollUntil } from '../../support/server-process.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';

const BUDGET_MS = 300;
const GATEWAY_DELAY_MS = 5_000;
const THRESHOLD = 3;
const COOLDOWN_MS = 30_000;

const consumer = (n: number) => ({
  first_name: 'Lena',
  last_name: `Live${n}`,
  email: `lena${n}@example.com`,
  dob: '1984-07-09',
  ssn_last4: '5678',
  address: { line1: '9 Elm Street', city: 'Denver', state: 'CO', zip: '80202' },
});
const transaction = { amount: '180.00', currency: 'USD', merchant_name: 'Outdoor Co', merchant_category: 'sporting_goods' };

interface Audit {
  credit_data: { status: string; reason?: string; latency_ms: number };
  timings: { creditDataMs: number; preparedMs: number };
}

describe('credit-data gateway faults through the HTTP API (live key)', () => {
  let gateway: FakeCreditGateway;
  const dbs: TestDatabase[] = [];
  const apps: TestApp[] = [];
  const connectors: GatewayConnector[] = [];

  async function liveApp(options: Parameters<typeof createGatewayConnector>[0]): Promise<{ t: TestApp; connector: GatewayConnector }> {
    const db = await createTestDatabase('sqlite');
    dbs.push(db);
    const connector = createGatewayConnector(options);
    connectors.push(connector);
    const t = await createTestApp(db, { overrides: { creditData: { live: connector } } });
    apps.push(t);
    return { t, connector };
  }

  beforeAll(async () => {
    gateway = await startFakeCreditGateway();
  });
  afterAll(async () => {
    for (const t of apps) await t.close();
    for (const c of connectors) c.close();
    await gateway?.stop();
    for (const db of dbs) await db.drop();
  });

  let n = 0;
  const create = async (t: TestApp) => {
    n += 1;
    const r = await t.app.inject({ method: 'POST', url: '/v1/decisions/bnpl', headers: { ...bearer(t.tenant.live.apiKey), 'content-type': 'application/json' }, payload: JSON.stringify({ consumer: consumer(n), transaction }) });
    expect(r.statusCode, r.body).toBe(200);
    const body = r.json<{ decision_id: string; outcome: string; decline_reasons?: Array<{ code: string }> }>();
    const audit = (await t.ctx.decisions.getAuditRecord({ tenantId: t.tenant.tenantId, environment: 'live' }, body.decision_id)) as Audit;
    const events = (await t.ctx.storage.db.selectFrom('events').select('type').where('subject_id', '=', body.decision_id).execute()).map((e) => e.type);
    return { body, audit, events };
  };
  const expectAa25 = (d: Awaited<ReturnType<typeof create>>, reason: string) => {
    expect(d.body.outcome).toBe('referred');
    expect(d.body.decline_reasons).toEqual([{ code: 'AA-25', reason: 'Credit information temporarily unavailable' }]);
    expect(d.audit.credit_data).toMatchObject({ status: 'unavailable', reason });
    expect(d.events).toContain('score.errored');
  };

  it('a gateway slower than the budget costs the decision the budget, as the service reports it: AA-25, reason timeout', async () => {
    const { t } = await liveApp({ baseUrl: gateway.url, token: FAKE_GATEWAY_TOKEN, ca: gateway.ca, timeoutMs: BUDGET_MS, cache: { maxEntries: 0 }, circuitBreaker: { failureThreshold: 1000 } });
    gateway.setMode({ kind: 'file', delayMs: GATEWAY_DELAY_MS });
    const requestsBefore = gateway.requests.length;
    const slow = await create(t);
    gateway.setMode({ kind: 'stalled_body' }); // headers, half a body, then silence
    const stalled = await create(t);
    for (const d of [slow, stalled]) {
      expectAa25(d, 'timeout');
      // The service gave up at its budget: the pull took at least the budget and far less than the gateway's answer would have.
      expect(d.audit.credit_data.latency_ms).toBeGreaterThanOrEqual(BUDGET_MS - 5);
      expect(d.audit.credit_data.latency_ms).toBeLessThan(GATEWAY_DELAY_MS);
      expect(d.audit.timings.creditDataMs).toBeGreaterThanOrEqual(d.audit.credit_data.latency_ms - 5);
      expect(d.audit.timings.creditDataMs).toBeLessThan(GATEWAY_DELAY_MS);
    }
    // Each create made exactly one pull (no retry past the budget).
    expect(gateway.requests.length - requestsBefore).toBe(2);
  });

  it('the breaker opens after N failed creates, refers without calling the gateway while open, half-opens after the cool-down and closes on a good trial', async () => {
    const clock = new ManualClock('2026-03-02T09:00:00.000Z');
    const { t, connector } = await liveApp({
      baseUrl: gateway.url, token: FAKE_GATEWAY_TOKEN, ca: gateway.ca, timeoutMs: 2_000, clock,
      cache: { maxEntries: 0 }, circuitBreaker: { failureThreshold: THRESHOLD, cooldownMs: COOLDOWN_MS },
    });
    const sent = () => gateway.requests.length;

    gateway.setMode('file');
    expect((await create(t)).body.outcome).toBe('approved');
    const afterHealthy = sent();

    // N failures in a row: each reached the gateway and was referred; then the breaker is open.
    gateway.setMode('server_error');
    for (let i = 0; i < THRESHOLD; i++) expectAa25(await create(t), 'error');
    expect(sent() - afterHealthy).toBe(THRESHOLD);
    expect(connector.circuitState()).toBe('open');

    // Open: the gateway is healthy again, but nothing reaches it, not even a burst at once.
    gateway.setMode('file');
    const refused = await Promise.all(Array.from({ length: 6 }, () => create(t)));
    for (const d of refused) expectAa25(d, 'circuit_open');
    clock.advance(COOLDOWN_MS - 1);
    expectAa25(await create(t), 'circuit_open');
    expect(sent() - afterHealthy, 'requests reached the gateway while the breaker was open').toBe(THRESHOLD);

    // Cool-down over: exactly one trial goes out; a create arriving meanwhile is still refused.
    clock.advance(1);
    gateway.setMode({ kind: 'file', delayMs: 1_000 });
    const trial = create(t);
    // Once the trial is at the gateway (and held there a second), another create arrives.
    await pollUntil(async () => sent() - afterHealthy === THRESHOLD + 1, { timeoutMs: 10_000, intervalMs: 5 });
    const bystander = await create(t);
    expectAa25(bystander, 'circuit_open');
    expect((await trial).body.outcome).toBe('approved');
    expect(sent() - afterHealthy).toBe(THRESHOLD + 1);
    expect(connector.circuitState()).toBe('closed');

    // Closed: every create goes to the gateway again.
    gateway.setMode('file');
    const after = await Promise.all(Array.from({ length: 3 }, () => create(t)));
    expect(after.map((d) => d.body.outcome)).toEqual(['approved', 'approved', 'approved']);
    expect(sent() - afterHealthy).toBe(THRESHOLD + 4);
  });
});
