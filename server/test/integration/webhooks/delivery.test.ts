/**
 * Webhook delivery against a real HTTPS receiver on loopback, on SQLite and PostgreSQL, with the
 * clock driven by the test (a ManualClock; nothing sleeps to make business time pass):
 * fan-out in the event's transaction; the exact envelope, headers and signature (verified by
 * Stripe's verifier); every failure kind; the whole 8-attempt schedule; auto-disable at 50 and
 * the reset on success; rotation; the portal operations; retention; fairness between endpoints.
 */
import { sql, type Kysely } from 'kysely';
import Stripe from 'stripe';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../../src/db/schema.js';
import { ManualClock } from '../../../src/lib/clock.js';
import type { EventType } from '../../../src/modules/events/outbox.js';
import { createDeliveryWorker, DEFAULT_DELIVERY_OPTIONS, type DeliveryWorker, type DeliveryWorkerOptions } from '../../../src/modules/webhooks/delivery-worker.js';
import { DEFAULT_RETRY_SCHEDULE } from '../../../src/modules/webhooks/retry-schedule.js';
import type { WebhookScope } from '../../../src/modules/webhooks/webhooks.service.js';
import { UUID_V4, UUID_V7, unixMsOfUuid7 } from '../../support/ids.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';
import { documentedEventFields } from '../../support/webhook-docs.js';
import { pollUntil } from '../../support/server-process.js';
import { appendEvents } from '../../support/webhook-events.js';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../../support/webhook-receiver.js';

const stripeSignature = Stripe.webhooks.signature!;
const SPEC_HEADERS = ['Svc-Signature', 'Svc-Webhook-Id', 'Svc-Webhook-Type', 'Content-Type', 'User-Agent'];
/** What HTTP framing adds to every request (Node's client): nothing else may appear. */
const TRANSPORT_HEADERS = ['Content-Length', 'Host', 'Connection'];
const FINALIZED_FIELDS = ['decision_id', 'application_id', 'outcome', 'score', 'confidence', 'recommended_amount', 'recommended_rate_pct', 'risk_grade', 'reason_codes', 'engine_version'];
const H = 3600_000;

/** Stripe's independent verifier, its clock pinned to `nowMs`, tolerance 300 s. */
function stripeVerifies(req: ReceivedWebhook, secret: string, nowMs: number): boolean {
  try {
    stripeSignature.verifyHeader(req.body, req.headers['svc-signature']!, secret, 300, undefined, nowMs);
    return true;
  } catch {
    return false;
  }
}

function v1Count(req: ReceivedWebhook): number {
  return req.headers['svc-signature']!.split(',').filter((p) => p.startsWith('v1=')).length;
}

describe.each(await dialectMatrix())('webhook delivery [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  let receiver: WebhookReceiver;
  let untrusted: WebhookReceiver;
  const clock = new ManualClock('2026-02-02T10:00:00.000Z');
  let sandbox: WebhookScope;
  let store: Kysely<Database>;
  const extraWorkers: DeliveryWorker[] = [];

  beforeAll(async () => {
    [receiver, untrusted] = await Promise.all([startWebhookReceiver(), startWebhookReceiver({ certificate: 'untrusted' })]);
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, {
      clock,
      env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' },
      overrides: { webhookDelivery: { ca: receiver.ca, timeoutMs: 2_000, leaseMs: 30_000 } },
    });
    sandbox = { tenantId: t.tenant.tenantId, environment: 'sandbox' };
    store = t.ctx.storage.db;
  });
  afterEach(async () => {
    // Each test starts with an empty queue: what it left pending must not be sent by the next one.
    await store.updateTable('webhook_deliveries').set({ state: 'cancelled', next_attempt_at: null, lease_token: null, leased_until: null }).where('state', '=', 'pending').execute();
    await store.updateTable('webhook_endpoints').set({ state: 'deleted' }).where('state', '<>', 'deleted').execute();
    receiver.clear();
    receiver.setMode('*', 200);
  });
  afterAll(async () => {
    for (const w of extraWorkers) await w.stop();
    await t?.close();
    await db?.drop();
    await Promise.all([receiver?.stop(), untrusted?.stop()]);
  });

  /** Another worker on the same database, with its own knobs. */
  function worker(options: Partial<DeliveryWorkerOptions>): DeliveryWorker {
    const ctx = t.ctx;
    const w = createDeliveryWorker(
      { db: ctx.storage.db, dialect: ctx.storage.dialect, walSync: ctx.storage.walSync, pipelined: ctx.storage.pipelined, offLoopWriter: ctx.storage.offLoopWriter, clock, random: ctx.random, secretBox: ctx.secretBox, logger: ctx.logger },
      { ca: receiver.ca, allowPrivateNetworks: true, timeoutMs: 2_000, leaseMs: 30_000, ...options },
    );
    extraWorkers.push(w);
    return w;
  }

  async function endpoint(path: string, events: readonly EventType[] | '*' = '*', scope = sandbox, url = receiver.url(path)) {
    return t.ctx.webhooks.createEndpoint(scope, { url, events, description: `test ${path}` });
  }

  const append = (count: number, type: EventType = 'decision.created', scope = sandbox): Promise<string[]> => appendEvents(t, scope, count, type);

  const deliveriesOf = (endpointId: string) => store.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId).orderBy('created_at').orderBy('id').execute();
  const attemptsOf = (endpointId: string) => store.selectFrom('webhook_attempts').selectAll().where('endpoint_id', '=', endpointId).orderBy('created_at').orderBy('attempt').execute();
  const endpointRow = (id: string) => store.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  const createDecision = (body: unknown) =>
    t.app.inject({ method: 'POST', url: '/v1/decisions/bnpl', headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  const softConsumer = () => t.tenant.sandbox.consumers.find((c) => c.tier === 'soft')!.consumerId;
  const txn = (amount: string) => ({ amount, currency: 'USD', merchant_name: 'Acme Outdoor', merchant_category: 'sporting_goods' });

  describe('fan-out', () => {
    it('a decision\'s events become one delivery per subscribed active endpoint of its tenant and environment', async () => {
      const all = await endpoint('/all');
      const finalizedOnly = await endpoint('/finalized', ['decision.finalized']);
      const disabled = await endpoint('/disabled');
      await store.updateTable('webhook_endpoints').set({ state: 'disabled', disabled_reason: 'test' }).where('id', '=', disabled.endpoint.id).execute();
      const live = await endpoint('/live', '*', { ...sandbox, environment: 'live' });
      const other = await t.ctx.tenants.createTenant({ name: 'Other Lender' });
      const othersEndpoint = await endpoint('/other', '*', { tenantId: other.tenantId, environment: 'sandbox' });

      const r = await createDecision({ consumer: { consumer_id: softConsumer() }, transaction: txn('120.00') });
      expect(r.statusCode, r.body).toBe(200);
      const decisionId = r.json<{ decision_id: string }>().decision_id;
      const events = await store.selectFrom('events').select(['id', 'type']).where('subject_id', '=', decisionId).execute();
      expect(events.map((e) => e.type).sort()).toEqual(['application.created', 'decision.created', 'decision.finalized', 'score.completed']);

      const toAll = await deliveriesOf(all.endpoint.id);
      expect(toAll.map((d) => d.event_id).sort()).toEqual(events.map((e) => e.id).sort());
      expect(toAll.every((d) => d.state === 'pending' && d.attempts === 0 && d.next_attempt_at === clock.now().getTime())).toBe(true);
      expect((await deliveriesOf(finalizedOnly.endpoint.id)).map((d) => d.event_type)).toEqual(['decision.finalized']);
      expect(await deliveriesOf(disabled.endpoint.id)).toEqual([]);
      expect(await deliveriesOf(live.endpoint.id)).toEqual([]);
      expect(await deliveriesOf(othersEndpoint.endpoint.id)).toEqual([]);
    });

    it('events and deliveries commit together: a rolled-back transaction leaves neither', async () => {
      const e = await endpoint('/rollback');
      await expect(
        store.transaction().execute(async (trx) => {
          await t.ctx.outbox.append(trx, sandbox, [{ type: 'decision.created', subjectId: 'rolled-back', data: {} }]);
          expect(await trx.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', e.endpoint.id).execute()).toHaveLength(1);
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      expect(await store.selectFrom('events').select('id').where('subject_id', '=', 'rolled-back').execute()).toEqual([]);
      expect(await deliveriesOf(e.endpoint.id)).toEqual([]);
    });

    it('an endpoint created just now gets the very next event (nothing cached)', async () => {
      await append(1);
      const e = await endpoint('/fresh');
      await append(1);
      expect(await deliveriesOf(e.endpoint.id)).toHaveLength(1);
    });
  });

  describe('sending', () => {
    it('POSTs the envelope with exactly the spec headers, signed so that Stripe verifies it, and records the attempt', async () => {
      const { endpoint: ep, secret } = await endpoint('/exact');
      receiver.setMode('/exact', { kind: 'status', status: 200, body: 'ok' });
      const r = await createDecision({ consumer: { consumer_id: softConsumer() }, transaction: txn('80.00') });
      const decisionId = r.json<{ decision_id: string }>().decision_id;
      const events = await store.selectFrom('events').selectAll().where('subject_id', '=', decisionId).execute();

      expect(await t.ctx.webhookDelivery.deliverDue()).toBe(4);
      const got = receiver.requestsTo('/exact');
      expect(got).toHaveLength(4);
      for (const req of got) {
        expect(req.method).toBe('POST');
        expect(req.rawHeaders.map(([k]) => k).sort()).toEqual([...SPEC_HEADERS, ...TRANSPORT_HEADERS].sort());
        expect(req.headers['content-type']).toBe('application/json');
        expect(req.headers['user-agent']).toBe('Svc-Webhooks/1.0');
        expect(req.headers['svc-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
        expect(req.headers['svc-signature']!.startsWith(`t=${Math.floor(clock.now().getTime() / 1000)},`)).toBe(true);
        const body = JSON.parse(req.body) as Record<string, unknown>;
        expect(Object.keys(body)).toEqual(['id', 'type', 'created', 'attempt', 'data']);
        const event = events.find((e) => e.id === body.id)!;
        expect(event).toBeDefined();
        expect(req.headers['svc-webhook-id']).toBe(event.id);
        expect(req.headers['svc-webhook-type']).toBe(event.type);
        expect(body.type).toBe(event.type);
        expect(body.created).toBe(Math.floor(event.created_at / 1000));
        expect(body.attempt).toBe(1);
        expect(body.data).toEqual(JSON.parse(event.data_json));
        expect(stripeVerifies(req, secret, clock.now().getTime())).toBe(true);
        if (body.type === 'decision.finalized') expect(Object.keys(body.data as object).sort()).toEqual([...FINALIZED_FIELDS].sort());
      }

      const deliveries = await deliveriesOf(ep.id);
      expect(deliveries.every((d) => d.state === 'delivered' && d.attempts === 1 && d.last_response_status === 200 && d.leased_until === null)).toBe(true);
      const attempts = await attemptsOf(ep.id);
      expect(attempts).toHaveLength(4);
      // Appended rows have time-ordered ids carrying the clock's time (ADR 0022); the decision's stays version 4.
      for (const id of [...events.map((e) => e.id), ...deliveries.map((d) => d.id), ...attempts.map((a) => a.id)]) {
        expect(id).toMatch(UUID_V7);
        expect(unixMsOfUuid7(id)).toBe(clock.now().getTime());
      }
      expect(decisionId).toMatch(UUID_V4);
      for (const a of attempts) {
        const sent = got.find((g) => JSON.parse(g.body).id === JSON.parse(a.request_body).id)!;
        expect(a.request_body).toBe(sent.body);
        const headers = JSON.parse(a.request_headers_json) as Record<string, string>;
        for (const name of SPEC_HEADERS) expect(headers[name]).toBe(sent.headers[name.toLowerCase()]);
        expect(a).toMatchObject({ attempt: 1, response_status: 200, response_body: 'ok', error_kind: null, created_at: clock.now().getTime() });
        expect(a.duration_ms).toBeGreaterThanOrEqual(0);
      }
      const views = await t.ctx.webhooks.listAttempts(sandbox, deliveries[0]!.id);
      expect(views).toHaveLength(1);
      expect(views[0]!.requestHeaders['Svc-Webhook-Id']).toBe(deliveries[0]!.event_id);
    });

    it('keeps only the first 4 KiB of a response body', async () => {
      const { endpoint: ep } = await endpoint('/big');
      receiver.setMode('/big', { kind: 'status', status: 200, body: 'x'.repeat(10_000) });
      await append(1);
      await t.ctx.webhookDelivery.deliverDue();
      const [a] = await attemptsOf(ep.id);
      expect(a!.response_status).toBe(200);
      expect(a!.response_body).toHaveLength(4096);
    });

    it('a response body with NUL characters, quotes and backslashes is recorded (NUL as U+FFFD, which text columns can hold), and the delivery ends delivered', async () => {
      const { endpoint: ep } = await endpoint('/nul');
      receiver.setMode('/nul', { kind: 'status', status: 200, body: 'ok\u0000"quoted" \\ back\u0000slash é' });
      await append(1);
      expect(await t.ctx.webhookDelivery.deliverDue()).toBe(1);
      const [a] = await attemptsOf(ep.id);
      expect(a!.response_status).toBe(200);
      expect(a!.response_body).toBe('ok\uFFFD"quoted" \\ back\uFFFDslash é');
      expect((await deliveriesOf(ep.id)).map((d) => d.state)).toEqual(['delivered']);
    });

    it('every payload has exactly the fields docs/webhooks.md documents for its type, and no PII reaches a payload or a log line', async () => {
      await endpoint('/pii');
      const identity = (ssn: string) => ({
        first_name: 'Zebulon', last_name: 'Quackenbush', email: 'zebulon.q@example.org', phone: '+14155550142', dob: '1979-04-23', ssn_last4: ssn,
        address: { line1: '742 Evergreen Terrace', city: 'Springfield', state: 'OR', zip: '97477' },
      });
      // An ordinary applicant, one whose identity check fails (sandbox 2222), one without credit data (3333).
      for (const ssn of ['4827', '2222', '3333']) {
        const r = await createDecision({ consumer: identity(ssn), transaction: txn('150.00') });
        expect(r.statusCode, r.body).toBe(200);
      }
      await t.ctx.webhookDelivery.deliverDue();
      const received = receiver.requestsTo('/pii');
      const documented = documentedEventFields();
      const types = new Set<string>();
      for (const q of received) {
        const { type, data } = JSON.parse(q.body) as { type: string; data: Record<string, unknown> };
        types.add(type);
        expect(Object.keys(data).sort(), type).toEqual([...documented.get(type)!].sort());
      }
      expect([...types].sort()).toEqual(['application.created', 'application.kyc_completed', 'application.kyc_failed', 'decision.created', 'decision.finalized', 'score.completed', 'score.errored']);
      const stored = (await store.selectFrom('webhook_attempts').select(['request_body', 'request_headers_json']).execute()).map((a) => a.request_body + a.request_headers_json);
      // Digit-only values are matched as whole tokens: "4827" may occur inside a random UUID.
      const leaks = [/Zebulon/, /Quackenbush/, /zebulon\.q@example\.org/, /4155550142/, /1979-04-23/, /Evergreen/, /Springfield/, /(?<![0-9a-f-])4827(?![0-9a-f-])/i, /(?<![0-9a-f-])97477(?![0-9a-f-])/i];
      for (const text of [...received.map((q) => q.body), ...stored, t.logs.text]) {
        for (const pii of leaks) expect(text).not.toMatch(pii);
      }
    });
  });

  describe('failures: a failed attempt is recorded with its kind and the next one is scheduled 1 minute later', () => {
    async function failOnce(path: string, w: DeliveryWorker = t.ctx.webhookDelivery, url?: string) {
      const { endpoint: ep } = await endpoint(path, '*', sandbox, url);
      await append(1);
      const before = clock.now().getTime();
      await w.deliverDue();
      const [delivery] = await deliveriesOf(ep.id);
      expect(delivery).toMatchObject({ state: 'pending', attempts: 1, next_attempt_at: before + 60_000, leased_until: null });
      const [attempt] = await attemptsOf(ep.id);
      return { attempt: attempt!, delivery: delivery! };
    }

    it('5xx and 4xx', async () => {
      receiver.setMode('/500', { kind: 'status', status: 500, body: '{"error":"boom"}' });
      const { attempt, delivery } = await failOnce('/500');
      expect(attempt).toMatchObject({ response_status: 500, response_body: '{"error":"boom"}', error_kind: 'http_status', error_detail: 'HTTP 500' });
      expect(delivery).toMatchObject({ last_response_status: 500, last_error_kind: 'http_status' });
      receiver.setMode('/410', 410);
      expect((await failOnce('/410')).attempt).toMatchObject({ response_status: 410, error_kind: 'http_status' });
    });

    it('a redirect is a failure and is not followed', async () => {
      receiver.setMode('/moved', { kind: 'redirect', status: 302 });
      expect((await failOnce('/moved')).attempt).toMatchObject({ response_status: 302, error_kind: 'http_status' });
      receiver.setMode('/moved-permanently', { kind: 'redirect', status: 308 });
      expect((await failOnce('/moved-permanently')).attempt).toMatchObject({ response_status: 308, error_kind: 'http_status' });
      expect(receiver.requestsTo('/redirected')).toEqual([]);
    });

    it('an answer slower than the time-out, and no answer at all, are time-outs; a quick one succeeds', async () => {
      const quick = worker({ timeoutMs: 300, leaseMs: 5_000 });
      receiver.setMode('/hang', { kind: 'hang' });
      const started = performance.now();
      const hang = await failOnce('/hang', quick);
      expect(hang.attempt).toMatchObject({ response_status: null, error_kind: 'timeout' });
      expect(hang.attempt.duration_ms).toBeGreaterThanOrEqual(290);
      expect(performance.now() - started).toBeLessThan(2_000);
      receiver.setMode('/slow', { kind: 'status', status: 200, delayMs: 600 });
      expect((await failOnce('/slow', quick)).attempt).toMatchObject({ response_status: null, error_kind: 'timeout' });

      const { endpoint: ok } = await endpoint('/quick-enough');
      receiver.setMode('/quick-enough', { kind: 'status', status: 204, delayMs: 50 });
      await append(1);
      await quick.deliverDue();
      expect((await deliveriesOf(ok.id))[0]).toMatchObject({ state: 'delivered', last_response_status: 204 });
    });

    it('a connection reset is a connection failure', async () => {
      receiver.setMode('/reset', { kind: 'reset' });
      expect((await failOnce('/reset')).attempt).toMatchObject({ response_status: null, error_kind: 'connection' });
    });

    it('a certificate from an untrusted CA is a TLS failure, and nothing reaches that receiver', async () => {
      const { attempt } = await failOnce('/tls', t.ctx.webhookDelivery, untrusted.url('/tls'));
      expect(attempt).toMatchObject({ response_status: null, error_kind: 'tls' });
      expect(untrusted.requests).toEqual([]);
    });

    it('plain HTTP is refused when the endpoint is created', async () => {
      await expect(t.ctx.webhooks.createEndpoint(sandbox, { url: receiver.url('/x').replace('https:', 'http:') })).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/https/) });
    });

    it('without the opt-in, loopback and private addresses are refused at delivery, literal or resolved, and nothing is sent', async () => {
      const strict = worker({ allowPrivateNetworks: false });
      const literal = await failOnce('/blocked', strict);
      expect(literal.attempt).toMatchObject({ error_kind: 'blocked_address', response_status: null });
      expect(literal.attempt.error_detail).toMatch(/loopback/);

      const resolvedTo: string[] = [];
      const dnsPrivate = worker({
        allowPrivateNetworks: false,
        resolve: async (host) => {
          resolvedTo.push(host);
          return [{ address: '10.1.2.3', family: 4 }, { address: '::ffff:7f00:1', family: 6 }];
        },
      });
      const named = await failOnce('/blocked-name', dnsPrivate, `https://localhost:${receiver.port}/blocked-name`);
      expect(named.attempt).toMatchObject({ error_kind: 'blocked_address' });
      expect(named.attempt.error_detail).toMatch(/localhost resolves to a private address \(10\.1\.2\.3\)/);
      expect(resolvedTo).toEqual(['localhost']);
      expect(receiver.requestsTo('/blocked')).toEqual([]);
      expect(receiver.requestsTo('/blocked-name')).toEqual([]);
    });

    it('the sender connects only to an address it checked: a metadata answer is dropped, the checked one is used, TLS still checks the name', async () => {
      const pinned = worker({
        resolve: async () => [{ address: '169.254.169.254', family: 4 }, { address: '127.0.0.1', family: 4 }],
      });
      const { endpoint: ep } = await endpoint('/pinned', '*', sandbox, `https://localhost:${receiver.port}/pinned`);
      await append(1);
      await pinned.deliverDue();
      expect((await deliveriesOf(ep.id))[0]!.state).toBe('delivered');
      expect(receiver.requestsTo('/pinned')[0]!.headers.host).toBe(`localhost:${receiver.port}`);
    });
  });

  describe('the whole schedule, driven by the clock', () => {
    it('8 attempts at once, +1 min, +5 min, +30 min, +2 h, +6 h, +24 h, +72 h; fresh signature each time; then failed', async () => {
      const { endpoint: ep, secret } = await endpoint('/always-500');
      receiver.setMode('/always-500', 500);
      const [eventId] = await append(1, 'decision.finalized');
      const sentAt: number[] = [];
      for (let attempt = 1; attempt <= 8; attempt++) {
        if (attempt > 1) {
          const delay = DEFAULT_RETRY_SCHEDULE.delaysMs[attempt - 2]!;
          clock.advance(delay - 1_000);
          expect(await t.ctx.webhookDelivery.deliverDue(), `attempt ${attempt} must not go early`).toBe(0);
          clock.advance(1_000);
        }
        expect(await t.ctx.webhookDelivery.deliverDue()).toBe(1);
        sentAt.push(clock.now().getTime());
        const req = receiver.requestsTo('/always-500')[attempt - 1]!;
        const body = JSON.parse(req.body) as { id: string; attempt: number };
        expect(body).toMatchObject({ id: eventId, attempt });
        expect(req.headers['svc-webhook-id']).toBe(eventId);
        expect(req.headers['svc-signature']).toMatch(new RegExp(`^t=${Math.floor(clock.now().getTime() / 1000)},v1=`));
        expect(stripeVerifies(req, secret, clock.now().getTime())).toBe(true);
      }
      const gaps = sentAt.slice(1).map((at, i) => at - sentAt[i]!);
      expect(gaps).toEqual([...DEFAULT_RETRY_SCHEDULE.delaysMs]);
      const reqs = receiver.requestsTo('/always-500');
      expect(new Set(reqs.map((r) => r.headers['svc-signature'])).size).toBe(8);
      // Apart from `attempt`, every attempt carries the same bytes.
      expect(new Set(reqs.map((r) => r.body.replace(/"attempt":\d+/, ''))).size).toBe(1);

      const [delivery] = await deliveriesOf(ep.id);
      expect(delivery).toMatchObject({ state: 'failed', attempts: 8, next_attempt_at: null, finished_at: sentAt[7] });
      expect((await attemptsOf(ep.id)).map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect((await endpointRow(ep.id)).consecutive_failures).toBe(1);
      clock.advance(365 * 24 * H);
      expect(await t.ctx.webhookDelivery.deliverDue()).toBe(0);
    });
  });

  /** Run every attempt, moving the clock to each next due time, until the endpoint has nothing pending. */
  async function driveUntilSettled(endpointId: string): Promise<void> {
    for (let round = 0; round < 10; round++) {
      await t.ctx.webhookDelivery.deliverDue();
      const pending = (await deliveriesOf(endpointId)).filter((d) => d.state === 'pending');
      if (pending.length === 0) return;
      clock.set(new Date(Math.min(...pending.map((d) => d.next_attempt_at!))));
    }
    throw new Error('deliveries still pending after the whole schedule');
  }

  describe('auto-disable', () => {
    it('counts failed deliveries in a row, resets on a success, disables at the 50th and keeps what it has for a resend after re-enabling', async () => {
      const since = clock.now();
      const { endpoint: ep } = await endpoint('/flaky');
      receiver.setMode('/flaky', 503);
      await append(2);
      await driveUntilSettled(ep.id);
      expect((await endpointRow(ep.id)).consecutive_failures).toBe(2);

      receiver.setMode('/flaky', 200);
      await append(1);
      await driveUntilSettled(ep.id);
      expect((await endpointRow(ep.id)).consecutive_failures).toBe(0);

      receiver.setMode('/flaky', 503);
      await append(49);
      await driveUntilSettled(ep.id);
      expect(await endpointRow(ep.id)).toMatchObject({ consecutive_failures: 49, state: 'active' });
      await append(1);
      await driveUntilSettled(ep.id);
      const disabled = await endpointRow(ep.id);
      expect(disabled).toMatchObject({ consecutive_failures: 50, state: 'disabled' });
      expect(disabled.disabled_reason).toMatch(/50 consecutive failed deliveries.*HTTP 503/);
      const view = await t.ctx.webhooks.getEndpoint(sandbox, ep.id);
      expect(view).toMatchObject({ state: 'disabled', consecutiveFailures: 50 });

      // Disabled: new events are not fanned out to it, and nothing is sent.
      await append(3);
      expect((await deliveriesOf(ep.id)).length).toBe(53);
      const sentBefore = receiver.requestsTo('/flaky').length;
      clock.advance(72 * H);
      await t.ctx.webhookDelivery.deliverDue();
      expect(receiver.requestsTo('/flaky').length).toBe(sentBefore);
      await expect(t.ctx.webhooks.resendFailedSince(sandbox, ep.id, since)).rejects.toMatchObject({ code: 'unprocessable_entity' });

      // The owner fixes the receiver, re-enables, and resends everything failed (and missed) since then.
      receiver.setMode('/flaky', 200);
      expect(await t.ctx.webhooks.reenableEndpoint(sandbox, ep.id)).toMatchObject({ state: 'active', consecutiveFailures: 0, disabledReason: null });
      expect(await t.ctx.webhooks.resendFailedSince(sandbox, ep.id, since)).toEqual({ requeued: 52, recovered: 3 });
      receiver.clear();
      await t.ctx.webhookDelivery.deliverDue();
      const deliveries = await deliveriesOf(ep.id);
      expect(deliveries).toHaveLength(56);
      expect(deliveries.every((d) => d.state === 'delivered')).toBe(true);
      expect(receiver.requestsTo('/flaky')).toHaveLength(55);
      expect(receiver.requestsTo('/flaky').every((r) => JSON.parse(r.body).attempt === 1)).toBe(true);
      expect((await endpointRow(ep.id)).consecutive_failures).toBe(0);
    });
  });

  describe('secret rotation', () => {
    it('signs with the new secret at once, adds the old one as a second v1 for the overlap, then drops it', async () => {
      const { endpoint: ep, secret: first } = await endpoint('/rotate');
      const rotated = await t.ctx.webhooks.rotateSecret(sandbox, ep.id, { overlapMs: H });
      expect(rotated.secret).toMatch(/^whsec_/);
      expect(rotated.secret).not.toBe(first);
      expect(rotated.previousSecretExpiresAt).toEqual(new Date(clock.now().getTime() + H));

      await append(1);
      await t.ctx.webhookDelivery.deliverDue();
      const during = receiver.requestsTo('/rotate')[0]!;
      expect(v1Count(during)).toBe(2);
      expect(during.headers['svc-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
      expect(stripeVerifies(during, rotated.secret, clock.now().getTime())).toBe(true);
      expect(stripeVerifies(during, first, clock.now().getTime())).toBe(true);

      clock.advance(H + 1_000);
      await append(1);
      await t.ctx.webhookDelivery.deliverDue();
      const after = receiver.requestsTo('/rotate')[1]!;
      expect(v1Count(after)).toBe(1);
      expect(stripeVerifies(after, rotated.secret, clock.now().getTime())).toBe(true);
      expect(stripeVerifies(after, first, clock.now().getTime())).toBe(false);

      const again = await t.ctx.webhooks.rotateSecret(sandbox, ep.id, { overlapMs: 0 });
      expect(again.previousSecretExpiresAt).toBeNull();
      await append(1);
      await t.ctx.webhookDelivery.deliverDue();
      const immediate = receiver.requestsTo('/rotate')[2]!;
      expect(v1Count(immediate)).toBe(1);
      expect(stripeVerifies(immediate, again.secret, clock.now().getTime())).toBe(true);
      expect(stripeVerifies(immediate, rotated.secret, clock.now().getTime())).toBe(false);
      await expect(t.ctx.webhooks.rotateSecret(sandbox, ep.id, { overlapMs: 8 * 24 * H })).rejects.toMatchObject({ code: 'invalid_request' });
    });

    it('the default overlap is 24 hours, and secrets are stored sealed', async () => {
      const { endpoint: ep, secret } = await endpoint('/rotate-default');
      const row = await endpointRow(ep.id);
      expect(row.secret_sealed).not.toContain(secret.slice(6));
      expect(row.secret_sealed.startsWith('v1.')).toBe(true);
      const r = await t.ctx.webhooks.rotateSecret(sandbox, ep.id);
      expect(r.previousSecretExpiresAt).toEqual(new Date(clock.now().getTime() + 24 * H));
    });
  });

  describe('operations for the portal', () => {
    it('a test event goes to that endpoint only (subscribed to it or not) and is delivered within seconds by a running worker', async () => {
      const { endpoint: target, secret } = await endpoint('/test-target', ['decision.finalized']);
      await endpoint('/bystander', '*');
      const running = worker({ pollIntervalMs: 50 });
      running.start();
      const started = Date.now();
      const { eventId, deliveryId } = await t.ctx.webhooks.sendTestEvent(sandbox, target.id);
      await receiver.waitFor((reqs) => reqs.some((r) => r.path === '/test-target'), 5_000);
      expect(Date.now() - started).toBeLessThan(2_000);
      await running.stop();
      const req = receiver.requestsTo('/test-target')[0]!;
      expect(JSON.parse(req.body)).toMatchObject({ id: eventId, type: 'webhook.test', attempt: 1, data: { endpoint_id: target.id } });
      expect(Object.keys(JSON.parse(req.body).data as object).sort()).toEqual([...documentedEventFields().get('webhook.test')!].sort());
      expect(req.headers['svc-webhook-type']).toBe('webhook.test');
      expect(stripeVerifies(req, secret, clock.now().getTime())).toBe(true);
      expect(receiver.requestsTo('/bystander')).toEqual([]);
      expect((await t.ctx.webhooks.listDeliveries(sandbox, target.id))[0]).toMatchObject({ id: deliveryId, state: 'delivered', eventType: 'webhook.test' });
    });

    it('resends one delivery, from attempt 1', async () => {
      const { endpoint: ep } = await endpoint('/resend');
      await append(1);
      await t.ctx.webhookDelivery.deliverDue();
      const [delivered] = await t.ctx.webhooks.listDeliveries(sandbox, ep.id);
      expect(delivered!.state).toBe('delivered');
      const view = await t.ctx.webhooks.resendDelivery(sandbox, delivered!.id);
      expect(view).toMatchObject({ state: 'pending', attempts: 0 });
      await t.ctx.webhookDelivery.deliverDue();
      const reqs = receiver.requestsTo('/resend');
      expect(reqs).toHaveLength(2);
      expect(JSON.parse(reqs[1]!.body).id).toBe(JSON.parse(reqs[0]!.body).id);
      expect((await t.ctx.webhooks.listAttempts(sandbox, delivered!.id)).map((a) => a.attempt)).toEqual([1, 1]);
    });

    it('updates, scopes by tenant and environment, limits to 16, and deletes (cancelling what was pending)', async () => {
      const { endpoint: ep } = await endpoint('/ops', ['decision.created']);
      expect(ep.version).toBe(1);
      const updated = await t.ctx.webhooks.updateEndpoint(sandbox, ep.id, { url: receiver.url('/ops-2'), events: ['decision.finalized', 'webhook.test'], description: 'renamed' }, 1);
      expect(updated).toMatchObject({ url: receiver.url('/ops-2'), events: ['decision.finalized', 'webhook.test'], description: 'renamed', version: 2 });
      await expect(t.ctx.webhooks.updateEndpoint(sandbox, ep.id, { events: ['decision.exploded'] }, 2)).rejects.toMatchObject({ code: 'invalid_request' });
      await expect(t.ctx.webhooks.updateEndpoint(sandbox, ep.id, { url: 'https://user:pw@example.com/' }, 2)).rejects.toMatchObject({ code: 'invalid_request' });
      // An edit of the version before is 409, and a refused one changes nothing (the version included).
      await expect(t.ctx.webhooks.updateEndpoint(sandbox, ep.id, { description: 'stale' }, 1)).rejects.toMatchObject({ code: 'endpoint_version_conflict' });
      expect(await t.ctx.webhooks.getEndpoint(sandbox, ep.id)).toMatchObject({ description: 'renamed', version: 2 });
      await expect(t.ctx.webhooks.getEndpoint({ ...sandbox, environment: 'live' }, ep.id)).rejects.toMatchObject({ code: 'not_found' });
      await expect(t.ctx.webhooks.updateEndpoint({ ...sandbox, environment: 'live' }, ep.id, { description: 'elsewhere' }, 2)).rejects.toMatchObject({ code: 'not_found' });
      const other = await t.ctx.tenants.createTenant({ name: 'Nosy Lender' });
      await expect(t.ctx.webhooks.getEndpoint({ tenantId: other.tenantId, environment: 'sandbox' }, ep.id)).rejects.toMatchObject({ code: 'not_found' });
      await expect(t.ctx.webhooks.updateEndpoint({ tenantId: other.tenantId, environment: 'sandbox' }, ep.id, { description: 'taken' }, 2)).rejects.toMatchObject({ code: 'not_found' });

      for (let i = 0; i < 15; i++) await endpoint(`/many-${i}`);
      await expect(endpoint('/seventeenth')).rejects.toMatchObject({ code: 'unprocessable_entity' });
      expect(await t.ctx.webhooks.listEndpoints(sandbox)).toHaveLength(16);
      await endpoint('/live-is-separate', '*', { ...sandbox, environment: 'live' });

      await append(1, 'decision.finalized');
      const [pending] = await deliveriesOf(ep.id);
      expect(pending!.state).toBe('pending');
      await t.ctx.webhooks.deleteEndpoint(sandbox, ep.id);
      expect((await deliveriesOf(ep.id))[0]!.state).toBe('cancelled');
      await expect(t.ctx.webhooks.getEndpoint(sandbox, ep.id)).rejects.toMatchObject({ code: 'not_found' });
      expect(await t.ctx.webhooks.listEndpoints(sandbox)).toHaveLength(15);
      await endpoint('/room-again');
    });

    it('purges attempt history and finished deliveries after 30 days, keeps pending ones', async () => {
      const { endpoint: done } = await endpoint('/old-ok');
      const { endpoint: waiting } = await endpoint('/old-waiting', '*', sandbox);
      receiver.setMode('/old-waiting', 500);
      await append(1);
      await t.ctx.webhookDelivery.deliverDue();
      await store.updateTable('webhook_endpoints').set({ state: 'disabled' }).where('id', '=', waiting.id).execute();
      clock.advance(30 * 24 * H - 1_000);
      await t.ctx.webhooks.purgeHistory();
      expect(await attemptsOf(done.id)).toHaveLength(1);
      expect(await deliveriesOf(done.id)).toHaveLength(1);
      clock.advance(2_000);
      const purged = await t.ctx.webhooks.purgeHistory();
      expect(purged.attempts).toBeGreaterThanOrEqual(2);
      expect(purged.deliveries).toBeGreaterThanOrEqual(1);
      expect(await attemptsOf(done.id)).toEqual([]);
      expect(await attemptsOf(waiting.id)).toEqual([]);
      expect(await deliveriesOf(done.id)).toEqual([]);
      expect((await deliveriesOf(waiting.id)).map((d) => d.state)).toEqual(['pending']);
    });
  });

  describe('fairness', () => {
    it('an endpoint that hangs until the time-out does not slow another endpoint down, and never holds more than its cap', async () => {
      const { endpoint: hanging } = await endpoint('/hangs');
      receiver.setMode('/hangs', { kind: 'hang' });
      // The hanging endpoint's backlog is the oldest: fair must not mean "oldest first, whoever it is".
      await append(20);
      clock.advance(1_000);
      const { endpoint: healthy } = await endpoint('/healthy');
      await append(20);
      const running = worker({ timeoutMs: 2_000, leaseMs: 10_000, concurrency: 8, perEndpointConcurrency: 2, pollIntervalMs: 20 });
      const started = performance.now();
      running.start();
      await receiver.waitFor((reqs) => reqs.filter((r) => r.path === '/healthy').length >= 20, 10_000);
      const healthyDoneMs = performance.now() - started;
      // All 20 healthy deliveries went through before even one hanging attempt had timed out.
      const hangingFinishedMeanwhile = (await attemptsOf(hanging.id)).length;
      await running.stop();
      expect(hangingFinishedMeanwhile).toBe(0);
      expect(healthyDoneMs).toBeLessThan(2_000);
      expect(receiver.maxConcurrent('/hangs')).toBeLessThanOrEqual(2);
      expect(receiver.requestsTo('/hangs').length).toBeLessThanOrEqual(4);
      expect((await deliveriesOf(healthy.id)).every((d) => d.state === 'delivered')).toBe(true);
      const hangAttempts = await attemptsOf(hanging.id);
      expect(hangAttempts.every((a) => a.error_kind === 'timeout')).toBe(true);
    });
  });

  describe('claiming ahead (ADR 0031)', () => {
    // (On by default: the suite's other tests run with it too, and turn it off where they look at what plain claims hold.)
    const aheadWorker = (options: Partial<DeliveryWorkerOptions>) => worker({ claimAhead: true, ...options });
    const inFlightOf = async (endpointId: string, workerId?: string) =>
      (await store.selectFrom('webhook_in_flight').select(['worker_id', 'sends']).where('endpoint_id', '=', endpointId).execute())
        .filter((r) => (workerId === undefined ? r.worker_id !== 'another-worker' : r.worker_id === workerId))
        .map((r) => Number(r.sends));
    const stateOf = async (endpointId: string) =>
      (await deliveriesOf(endpointId)).map((d) => (d.state === 'pending' && d.lease_token !== null ? 'leased' : d.state)).sort();

    it('claims up to twice what it may send, sends no more than the cap less the other workers\' sends, and the rest as slots free, without another claim', async () => {
      const { endpoint: e } = await endpoint('/ahead');
      receiver.setMode('/ahead', { kind: 'status', status: 200, delayMs: 300 });
      await append(8);
      // Another worker holds 3 of the cap of 5 (its row live for the whole test: the clock stays).
      await store.insertInto('webhook_in_flight').values({ endpoint_id: e.id, worker_id: 'another-worker', sends: 3, held_until: clock.now().getTime() + 5_000 }).execute();
      const w = aheadWorker({ concurrency: 16, perEndpointConcurrency: 5, timeoutMs: 10_000, leaseMs: 30_000 });

      // May send 5 - 3 = 2 at once, so holds up to 4: all four leased, the stored count says 4.
      expect(await w.tick()).toBe(4);
      expect(await inFlightOf(e.id)).toEqual([4]);
      expect(await w.tick()).toBe(0);
      await w.settle();
      // All four went out, two at a time, on that one claim: the two that waited started as sends ended.
      expect(receiver.requestsTo('/ahead')).toHaveLength(4);
      expect(receiver.maxConcurrent('/ahead')).toBe(2);
      expect(w.stats()).toMatchObject({ claims: 1, delivered: 4, leasesLost: 0 });
      expect(await inFlightOf(e.id)).toEqual([0]);
      expect(await stateOf(e.id)).toEqual([...Array(4).fill('delivered'), ...Array(4).fill('pending')]);
    });

    it('with the default lease and time-out, holds four times what it may send: the last waits behind three sends that ran to their time-out, a second late in all, and still starts', async () => {
      const { endpoint: e } = await endpoint('/four-ahead');
      receiver.setMode('/four-ahead', { kind: 'status', status: 200, delayMs: 200 });
      await append(10);
      const givenBack = () => t.logs.lines.filter((l) => l.includes('given back unsent')).length;
      const givenBackBefore = givenBack();
      // The defaults: lease 75 s, time-out 10 s (claimAheadFactor: 4). Cap 2: holds up to 8.
      const w = aheadWorker({ concurrency: 16, perEndpointConcurrency: 2, timeoutMs: DEFAULT_DELIVERY_OPTIONS.timeoutMs, leaseMs: DEFAULT_DELIVERY_OPTIONS.leaseMs });
      expect(await w.tick()).toBe(8);
      expect(await inFlightOf(e.id)).toEqual([8]);
      expect(await w.tick()).toBe(0);
      // Three sends' worth of the time-out and a second pass while the first two are out: the last
      // ones waiting then have 44 s of their lease left, more than a send must start with
      // (10 s + (75 - 10) / 2 = 42.5 s).
      clock.advance(3 * DEFAULT_DELIVERY_OPTIONS.timeoutMs + 1_000);
      await w.settle();
      // All eight went out on that one claim, two at a time, none given back.
      expect(receiver.requestsTo('/four-ahead')).toHaveLength(8);
      expect(receiver.maxConcurrent('/four-ahead')).toBe(2);
      expect(w.stats()).toMatchObject({ claims: 1, delivered: 8, leasesLost: 0 });
      expect(givenBack()).toBe(givenBackBefore);
      expect(await stateOf(e.id)).toEqual([...Array(8).fill('delivered'), 'pending', 'pending']);
    });

    it('two workers claiming ahead at one endpoint never send more than its cap at once, and each delivery goes once', async () => {
      const { endpoint: e } = await endpoint('/two-workers');
      receiver.setMode('/two-workers', { kind: 'status', status: 200, delayMs: 100 });
      const eventIds = await append(40);
      const options = { concurrency: 16, perEndpointConcurrency: 4, timeoutMs: 10_000, leaseMs: 30_000, pollIntervalMs: 20 };
      // B sends 2 at most (its concurrency binds, so it holds no more); A claims while B's are out:
      // it may send 4 - 2 at once, and holds up to twice that.
      const [a, b] = [aheadWorker(options), aheadWorker({ ...options, concurrency: 2 })];
      expect(await b.tick()).toBe(2);
      expect(await a.tick()).toBe(4);
      a.start();
      b.start();
      await pollUntil(async () => (await deliveriesOf(e.id)).every((d) => d.state === 'delivered'), { timeoutMs: 20_000, intervalMs: 50 });
      await Promise.all([a.stop(), b.stop()]);
      expect(receiver.maxConcurrent('/two-workers')).toBeLessThanOrEqual(4);
      const received = receiver.requestsTo('/two-workers').map((r) => (JSON.parse(r.body) as { id: string }).id);
      expect(received.sort()).toEqual([...eventIds].sort());
      expect(a.stats().leasesLost + b.stats().leasesLost).toBe(0);
      expect((await inFlightOf(e.id)).every((n) => n === 0)).toBe(true);
    });

    it('what waits is given back unsent when the worker stops: due again at once, its count lowered, nothing sent twice', async () => {
      const { endpoint: e } = await endpoint('/stopping');
      receiver.setMode('/stopping', { kind: 'status', status: 200, delayMs: 400 });
      const eventIds = await append(6);
      const w = aheadWorker({ concurrency: 16, perEndpointConcurrency: 2, timeoutMs: 10_000, leaseMs: 30_000 });
      expect(await w.tick()).toBe(4);
      await w.stop();
      // The two sends in flight finished and were recorded; the two waiting were never sent.
      expect(receiver.requestsTo('/stopping')).toHaveLength(2);
      expect(await stateOf(e.id)).toEqual(['delivered', 'delivered', 'pending', 'pending', 'pending', 'pending']);
      expect((await deliveriesOf(e.id)).filter((d) => d.state === 'pending').every((d) => d.attempts === 0 && d.next_attempt_at! <= clock.now().getTime())).toBe(true);
      expect(await inFlightOf(e.id)).toEqual([0]);
      expect(t.logs.lines.some((l) => l.includes('given back unsent'))).toBe(true);

      // Another worker sends the rest, each once.
      receiver.setMode('/stopping', 200);
      expect(await aheadWorker({}).deliverDue()).toBe(4);
      const received = receiver.requestsTo('/stopping').map((r) => (JSON.parse(r.body) as { id: string }).id);
      expect(received.sort()).toEqual([...eventIds].sort());
    });

    it('a waiting delivery with too little of its lease left is given back, not sent on a lease that could pass mid-send', async () => {
      const { endpoint: e } = await endpoint('/stale');
      receiver.setMode('/stale', { kind: 'status', status: 200, delayMs: 300 });
      await append(4);
      // Time-out 2 s, lease 10 s: a waiting delivery starts only with at least 2 + 4 = 6 s of its lease left.
      const w = aheadWorker({ concurrency: 16, perEndpointConcurrency: 2, timeoutMs: 2_000, leaseMs: 10_000 });
      expect(await w.tick()).toBe(4);
      // While the first two are with the receiver, 5 s pass: the two waiting have 5 s left.
      clock.advance(5_000);
      await w.settle();
      expect(receiver.requestsTo('/stale')).toHaveLength(2);
      expect(await stateOf(e.id)).toEqual(['delivered', 'delivered', 'pending', 'pending']);
      expect(await inFlightOf(e.id)).toEqual([0]);
      // Due again at once, and sent by the next claim.
      expect(await w.deliverDue()).toBe(2);
      expect(await stateOf(e.id)).toEqual(Array(4).fill('delivered'));
    });

    it('what waits for an endpoint its results just disabled is given back, not sent', async () => {
      const { endpoint: e } = await endpoint('/disabling');
      // The first send fails at once, the others after 800 ms.
      receiver.setMode('/disabling', { kind: 'status', status: 503, delaysMs: [0, 800] });
      await append(6);
      // One attempt per delivery, the endpoint disabled at its first failure.
      const w = aheadWorker({ concurrency: 16, perEndpointConcurrency: 2, timeoutMs: 10_000, leaseMs: 30_000, schedule: { delaysMs: [] }, autoDisableThreshold: 1 });
      expect(await w.tick()).toBe(4);
      await w.settle();
      expect(await endpointRow(e.id)).toMatchObject({ state: 'disabled' });
      // The first failure freed a slot, and the third started in it before the result disabled the
      // endpoint; the fourth was still waiting then (both slots busy), and was given back unsent.
      expect(receiver.requestsTo('/disabling')).toHaveLength(3);
      expect(await stateOf(e.id)).toEqual(['failed', 'failed', 'failed', 'pending', 'pending', 'pending']);
      expect((await deliveriesOf(e.id)).every((d) => d.lease_token === null)).toBe(true);
      expect(await inFlightOf(e.id)).toEqual([0]);
    });

    it('is on by default', async () => {
      await endpoint('/default');
      receiver.setMode('/default', { kind: 'status', status: 200, delayMs: 100 });
      await append(6);
      const w = worker({ concurrency: 16, perEndpointConcurrency: 2, timeoutMs: 10_000, leaseMs: 30_000 });
      expect(await w.tick()).toBe(4);
      await w.settle();
    });

    it('a worker whose own concurrency binds (more endpoints than it can send to) does not claim ahead: what it holds, it sends', async () => {
      const { endpoint: e1 } = await endpoint('/bound-1');
      const { endpoint: e2 } = await endpoint('/bound-2');
      receiver.setMode('*', { kind: 'status', status: 200, delayMs: 300 });
      await append(8);
      // Two endpoints of cap 2 could take 4 sends; this worker sends 2 at most. Claiming ahead would
      // hold rows another worker could be sending.
      const w = aheadWorker({ concurrency: 2, perEndpointConcurrency: 2, timeoutMs: 10_000, leaseMs: 30_000 });
      expect(await w.tick()).toBe(2);
      expect([...(await inFlightOf(e1.id)), ...(await inFlightOf(e2.id))]).toEqual([1, 1]);
      await w.settle();
    });
  });

  describe('sends in flight (ADR 0021)', () => {
    const inFlightRows = (endpointId: string) =>
      store.selectFrom('webhook_in_flight').select(['worker_id', 'sends', 'held_until']).where('endpoint_id', '=', endpointId).orderBy('worker_id').execute();

    it('each worker writes what it holds per endpoint with its claims and results; the cap counts every live row, an expired one nothing', async () => {
      const { endpoint: slow } = await endpoint('/held');
      // Sends that stay in flight while the test looks (well within the time-out).
      receiver.setMode('/held', { kind: 'status', status: 200, delayMs: 1_500 });
      await append(8);
      // Another worker process, as it left its row: 3 sends held until after now.
      await store.insertInto('webhook_in_flight').values({ endpoint_id: slow.id, worker_id: 'another-worker', sends: 3, held_until: clock.now().getTime() + 5_000 }).execute();
      // Without claiming ahead (ADR 0031), what it holds is what it sends: the counts in their plainest form.
      const w = worker({ concurrency: 16, perEndpointConcurrency: 5, timeoutMs: 10_000, leaseMs: 30_000, claimAhead: false });

      // Room for 5 - 3: two claimed, and the row says so, held for a lease's length.
      expect(await w.tick()).toBe(2);
      let rows = await inFlightRows(slow.id);
      const own = rows.find((r) => r.worker_id !== 'another-worker')!;
      expect(own).toEqual({ worker_id: own.worker_id, sends: 2, held_until: clock.now().getTime() + 30_000 });
      expect(await w.tick()).toBe(0);

      // The other worker's count has expired (it died; its leases would have passed): 5 - 2.
      await store.updateTable('webhook_in_flight').set({ held_until: clock.now().getTime() }).where('worker_id', '=', 'another-worker').execute();
      expect(await w.tick()).toBe(3);
      expect((await inFlightRows(slow.id)).find((r) => r.worker_id === own.worker_id)!.sends).toBe(5);
      expect(receiver.maxConcurrent('/held')).toBeLessThanOrEqual(5);

      // Every result written: this worker holds nothing there any more.
      await w.settle();
      rows = await inFlightRows(slow.id);
      expect(rows.find((r) => r.worker_id === own.worker_id)!.sends).toBe(0);
      expect((await deliveriesOf(slow.id)).filter((d) => d.state === 'delivered')).toHaveLength(5);
      receiver.setMode('/held', 200);
      expect(await w.deliverDue()).toBe(3);
      expect((await deliveriesOf(slow.id)).every((d) => d.state === 'delivered')).toBe(true);
      expect((await inFlightRows(slow.id)).find((r) => r.worker_id === own.worker_id)!.sends).toBe(0);
    });

    it('a cycle that records results and claims counts the slots its results free, and every other worker\'s live sends', async () => {
      // On PostgreSQL the results and the claim's listing are one statement, whose snapshot still
      // shows this worker's count before the results: the listing must use the count after them.
      const { endpoint: e } = await endpoint('/freed');
      receiver.setMode('/freed', { kind: 'status', status: 200, delayMs: 20 });
      await append(5);
      // Cap 3, another worker holding 2: one send at a time here.
      await store.insertInto('webhook_in_flight').values({ endpoint_id: e.id, worker_id: 'another-worker', sends: 2, held_until: clock.now().getTime() + 600_000 }).execute();
      // No poll within the test: only a finished send wakes the worker, and that cycle records its
      // result and claims the next. Had the freed slot not counted, the listing would have seen
      // 1 + 2 = the cap and the worker would have stopped after its first send until a poll.
      // (Without claiming ahead: with it, the next delivery would already be claimed and waiting.)
      const w = worker({ concurrency: 16, perEndpointConcurrency: 3, pollIntervalMs: 600_000, claimAhead: false });
      w.start();
      await pollUntil(async () => (await deliveriesOf(e.id)).every((d) => d.state === 'delivered'), { timeoutMs: 10_000, intervalMs: 50 });
      await w.stop();
      expect(receiver.requestsTo('/freed')).toHaveLength(5);
      expect(receiver.maxConcurrent('/freed')).toBe(1);
      expect(w.stats()).toMatchObject({ delivered: 5, leasesLost: 0, claims: 5 });
    });

    it('the purge drops counts that expired more than 30 days ago and keeps the others', async () => {
      const { endpoint: e } = await endpoint('/purge-held');
      const now = clock.now().getTime();
      await store
        .insertInto('webhook_in_flight')
        .values([
          { endpoint_id: e.id, worker_id: 'stopped-long-ago', sends: 1, held_until: now - 30 * 24 * H - 1 },
          { endpoint_id: e.id, worker_id: 'stopped-lately', sends: 0, held_until: now - 1_000 },
        ])
        .execute();
      await t.ctx.webhooks.purgeHistory();
      expect((await inFlightRows(e.id)).map((r) => r.worker_id)).toEqual(['stopped-lately']);
    });

    it.skipIf(dialect !== 'postgres')('PostgreSQL: a claim changes no indexed column of the delivery, so it is a HOT update (no new index entries)', async () => {
      // What a claim writes must stay out of every index of the table: an index on any of these
      // turns each claim into a new entry in all of them, which every later claim walks until VACUUM.
      const claimColumns = ['leased_until', 'lease_token', 'updated_at'];
      const indexes = await sql<{ indexdef: string }>`select indexdef from pg_indexes where tablename = 'webhook_deliveries'`.execute(store);
      expect(indexes.rows.length).toBeGreaterThan(0);
      for (const { indexdef } of indexes.rows) for (const column of claimColumns) expect(indexdef).not.toContain(column);
      const options = await sql<{ reloptions: string[] }>`select reloptions from pg_class where relname = 'webhook_deliveries' and relkind = 'r'`.execute(store);
      // Half of each page free (migration 0026, ADR 0049): a claim's new versions stay in their pages.
      expect(options.rows[0]!.reloptions).toContain('fillfactor=50');

      // And PostgreSQL does make them HOT: its statistics count the claims' updates as such.
      const hotUpdates = async () => Number((await sql<{ n: string }>`select n_tup_hot_upd as n from pg_stat_user_tables where relname = 'webhook_deliveries'`.execute(store)).rows[0]!.n);
      const before = await hotUpdates();
      await endpoint('/hot');
      await append(4);
      // One claim of 4 rows from one fresh page, then the results (which move the rows in the due indexes: not HOT).
      expect(await t.ctx.webhookDelivery.deliverDue()).toBe(4);
      // A backend reports its statistics at a transaction's end once a second at most, and an idle
      // one after 10 s (PostgreSQL 15's PGSTAT_IDLE_INTERVAL).
      await pollUntil(async () => (await hotUpdates()) - before >= 4, { timeoutMs: 25_000, intervalMs: 200 });
    });
  });
});
