/**
 * Transport behaviour against a scripted local HTTP server: retries and their bounds, one
 * Idempotency-Key per call reused on every retry, Retry-After, which answers are never retried,
 * the error class of every catalogue code, time-outs, cancellation and polling.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  APIConnectionError,
  APITimeoutError,
  APIUserAbortError,
  AuthenticationError,
  CreditDecisions,
  CreditDecisionsError,
  IdempotencyConflictError,
  InternalServerError,
  InvalidRequestError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  PollTimeoutError,
  ProductNotAvailableError,
  RateLimitError,
  ServiceUnavailableError,
  UnprocessableEntityError,
  UnsupportedMediaTypeError,
  type ClientOptions,
} from '../src/index.js';
import { backoffDelay, decideRetry, DEFAULT_RETRY_POLICY } from '../src/core/retry.js';
import { parseRetryAfter } from '../src/core/errors.js';
import { pollInterval } from '../src/lib/polling.js';
import { declinedDecision, errorBody, pendingDecision, startFakeServer, type FakeServer } from './support/fake-server.js';

const ID = '6f1c2a8e-3b7d-4c1e-9a55-1f7b3c2d9e10';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const params = {
  consumer: { consumer_id: '11111111-1111-4111-8111-111111111111' },
  transaction: { amount: '149.97', currency: 'USD', merchant_name: 'Acme', merchant_category: 'furniture' as const },
};

let fake: FakeServer;
const client = (options: Partial<ClientOptions> = {}) =>
  new CreditDecisions({ apiKey: 'svc_test_fake', baseUrl: fake.baseUrl, initialRetryDelayMs: 5, maxRetryDelayMs: 20, ...options });

beforeAll(async () => {
  fake = await startFakeServer();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => fake.script([]));

describe('retries and idempotency keys', () => {
  it('retries dropped connections with one generated Idempotency-Key reused on every attempt', async () => {
    fake.script(['drop', 'drop', { status: 200, body: declinedDecision(ID) }]);
    const decision = await client().decisions.bnpl.create(params);
    expect(decision.isDeclined).toBe(true);
    expect(fake.requests).toHaveLength(3);
    const keys = fake.requests.map((r) => r.headers['idempotency-key']);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^cds-node-retry-/);
    expect(String(keys[0]).slice('cds-node-retry-'.length)).toMatch(UUID);
    expect(fake.requests.every((r) => r.body === JSON.stringify(params))).toBe(true);
    expect(decision.lastResponse?.retries).toBe(2);
    expect(decision.lastResponse?.idempotencyKey).toBe(keys[0]);
  });

  it("uses the caller's key on every attempt", async () => {
    fake.script([{ status: 500, body: errorBody('internal_error') }, { status: 200, body: declinedDecision(ID) }]);
    await client().decisions.bnpl.create(params, { idempotencyKey: 'order-1234-attempt' });
    expect(fake.requests.map((r) => r.headers['idempotency-key'])).toEqual(['order-1234-attempt', 'order-1234-attempt']);
  });

  it('generates a different key for each logical call', async () => {
    fake.script([{ status: 200, body: declinedDecision(ID) }]);
    const c = client();
    await c.decisions.bnpl.create(params);
    await c.decisions.bnpl.create(params);
    const [a, b] = fake.requests.map((r) => r.headers['idempotency-key']);
    expect(a).not.toBe(b);
  });

  it('sends the sandbox helper with a key too, and no key on GET', async () => {
    fake.script(['drop', { status: 200, body: declinedDecision(ID) }]);
    await client().sandbox.verification.complete(ID, 'pass');
    expect(fake.requests.map((r) => r.url)).toEqual([`/v1/sandbox/decisions/${ID}/verification`, `/v1/sandbox/decisions/${ID}/verification`]);
    expect(fake.requests[0]!.headers['idempotency-key']).toBe(fake.requests[1]!.headers['idempotency-key']);
    expect(JSON.parse(fake.requests[0]!.body)).toEqual({ result: 'pass' });

    fake.script(['drop', { status: 200, body: declinedDecision(ID) }]);
    await client().decisions.bnpl.retrieve(ID);
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests.every((r) => r.method === 'GET' && r.headers['idempotency-key'] === undefined)).toBe(true);
  });

  it('sends the documented headers', async () => {
    fake.script([{ status: 200, body: declinedDecision(ID) }]);
    await client().decisions.bnpl.create(params);
    const h = fake.requests[0]!.headers;
    expect(h.authorization).toBe('Bearer svc_test_fake');
    expect(h['content-type']).toBe('application/json');
    expect(h.accept).toBe('application/json');
    expect(h['user-agent']).toMatch(/^cds-node\/\d+\.\d+\.\d+ node\/v\d+/);
  });

  it('retries 5xx, with backoff between the bounds', async () => {
    fake.script([{ status: 500, body: errorBody('internal_error') }, { status: 502, body: '<html>bad gateway</html>' }, { status: 200, body: declinedDecision(ID) }]);
    const decision = await client({ initialRetryDelayMs: 40, maxRetryDelayMs: 1_000 }).decisions.bnpl.retrieve(ID);
    expect(decision.decision_id).toBe(ID);
    const [a, b, c] = fake.requests.map((r) => r.at);
    expect(b! - a!).toBeGreaterThanOrEqual(28); // 40 ms * (0.75..1], minus timer slack
    expect(c! - b!).toBeGreaterThanOrEqual(58); // 80 ms * (0.75..1]
  });

  it('gives up after maxRetries and raises the class of the last answer', async () => {
    fake.script([{ status: 500, body: errorBody('internal_error') }]);
    const error = await client().decisions.bnpl.create(params).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    expect(fake.requests).toHaveLength(3);

    fake.script([{ status: 503, body: errorBody('service_unavailable'), headers: { 'retry-after': '0' } }]);
    const unavailable = await client({ maxRetries: 1 }).decisions.bnpl.create(params).catch((e: unknown) => e);
    expect(unavailable).toBeInstanceOf(ServiceUnavailableError);
    expect(unavailable).toBeInstanceOf(InternalServerError);
    expect(fake.requests).toHaveLength(2);

    fake.script([{ status: 500, body: errorBody('internal_error') }]);
    await expect(client({ maxRetries: 0 }).decisions.bnpl.create(params)).rejects.toBeInstanceOf(InternalServerError);
    expect(fake.requests).toHaveLength(1);
  });

  it('honours Retry-After on a 503 (and does not wait for an unreasonable one)', async () => {
    fake.script([{ status: 503, body: errorBody('service_unavailable'), headers: { 'retry-after': '1' } }, { status: 200, body: declinedDecision(ID) }]);
    await client().decisions.bnpl.create(params);
    const [a, b] = fake.requests.map((r) => r.at);
    expect(b! - a!).toBeGreaterThanOrEqual(980);
    expect(b! - a!).toBeLessThan(1_800);

    fake.script([{ status: 503, body: errorBody('service_unavailable'), headers: { 'retry-after': '3600' } }]);
    await expect(client().decisions.bnpl.create(params)).rejects.toBeInstanceOf(ServiceUnavailableError);
    expect(fake.requests).toHaveLength(1);
  });

  it('raises 429 by default and retries it after Retry-After when asked to', async () => {
    fake.script([{ status: 429, body: errorBody('rate_limited'), headers: { 'retry-after': '2', 'ratelimit-limit': '50' } }, { status: 200, body: declinedDecision(ID) }]);
    const error = (await client().decisions.bnpl.create(params).catch((e: unknown) => e)) as RateLimitError;
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error.retryAfterSeconds).toBe(2);
    expect(error.headers['ratelimit-limit']).toBe('50');
    expect(fake.requests).toHaveLength(1);

    fake.script([{ status: 429, body: errorBody('rate_limited'), headers: { 'retry-after': '0.2' } }, { status: 200, body: declinedDecision(ID) }]);
    const decision = await client({ retryRateLimited: true }).decisions.bnpl.create(params);
    expect(decision.isDeclined).toBe(true);
    const [a, b] = fake.requests.map((r) => r.at);
    expect(b! - a!).toBeGreaterThanOrEqual(180);
    expect(fake.requests[0]!.headers['idempotency-key']).toBe(fake.requests[1]!.headers['idempotency-key']);
  });

  it('never retries other 4xx, and maps every catalogue code to its class', async () => {
    const cases: Array<[number, string, new (...args: never[]) => CreditDecisionsError]> = [
      [400, 'invalid_request', InvalidRequestError],
      [401, 'invalid_api_key', AuthenticationError],
      [404, 'not_found', NotFoundError],
      [404, 'product_not_available', ProductNotAvailableError],
      [405, 'method_not_allowed', MethodNotAllowedError],
      [409, 'idempotency_conflict', IdempotencyConflictError],
      [413, 'payload_too_large', PayloadTooLargeError],
      [415, 'unsupported_media_type', UnsupportedMediaTypeError],
      [422, 'unprocessable_entity', UnprocessableEntityError],
    ];
    for (const [status, code, Class] of cases) {
      fake.script([{ status, body: errorBody(code, `message for ${code}`), headers: { 'request-id': 'req_fake0000000000000000' } }]);
      const error = (await client().decisions.bnpl.create(params).catch((e: unknown) => e)) as CreditDecisionsError;
      expect(error, code).toBeInstanceOf(Class);
      expect(error.status).toBe(status);
      expect(error.code).toBe(code);
      expect(error.message).toBe(`message for ${code}`);
      expect(error.requestId).toBe('req_fake0000000000000000');
      expect(error.headers['request-id']).toBe('req_fake0000000000000000');
      expect(error.name).toBe(Class.name);
      expect(fake.requests, code).toHaveLength(1);
    }
    // A code this version does not know falls back to the class of its status, or the base class.
    fake.script([{ status: 418, body: errorBody('teapot') }]);
    const unknown = (await client().decisions.bnpl.create(params).catch((e: unknown) => e)) as CreditDecisionsError;
    expect(unknown.constructor).toBe(CreditDecisionsError);
    expect(unknown.code).toBe('teapot');
  });

  it('retries a 409 only when it answers a retry (our own first attempt still running)', async () => {
    fake.script(['drop', { status: 409, body: errorBody('idempotency_conflict') }, { status: 200, body: declinedDecision(ID) }]);
    const decision = await client().decisions.bnpl.create(params);
    expect(decision.isDeclined).toBe(true);
    expect(fake.requests).toHaveLength(3);
    expect(new Set(fake.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });

  it('treats a 2xx that is not JSON as a transport failure (retried)', async () => {
    fake.script([{ status: 200, body: '<html>captive portal</html>' }, { status: 200, body: declinedDecision(ID) }]);
    const decision = await client().decisions.bnpl.retrieve(ID);
    expect(decision.decision_id).toBe(ID);
    expect(fake.requests).toHaveLength(2);
  });

  it('does not follow a redirect: the key and the body go nowhere else, and it is not retried', async () => {
    const elsewhere = await startFakeServer();
    try {
      elsewhere.script([{ status: 200, body: declinedDecision(ID) }]);
      for (const status of [302, 307]) {
        fake.script([{ status, headers: { Location: `${elsewhere.baseUrl}/v1/decisions/bnpl` }, body: '' }]);
        const error = await client().decisions.bnpl.create(params).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(CreditDecisionsError);
        expect((error as CreditDecisionsError).status).toBe(status);
        expect((error as Error).message).toMatch(/redirect to .* not followed/);
        expect(fake.requests).toHaveLength(1);
      }
      expect(elsewhere.requests).toHaveLength(0);
    } finally {
      await elsewhere.close();
    }
  });

  it('raises APIConnectionError when nothing listens', async () => {
    const closed = await startFakeServer();
    const url = closed.baseUrl;
    await closed.close();
    const error = await new CreditDecisions({ apiKey: 'k', baseUrl: url, initialRetryDelayMs: 1 }).decisions.bnpl.retrieve(ID).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIConnectionError);
    expect(error).not.toBeInstanceOf(APITimeoutError);
    expect((error as APIConnectionError).status).toBeUndefined();
  });
});

describe('time-outs and cancellation', () => {
  it('raises APITimeoutError when no answer comes in time', async () => {
    fake.script(['hang']);
    const started = Date.now();
    const error = await client({ timeoutMs: 100, maxRetries: 0 }).decisions.bnpl.create(params).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APITimeoutError);
    expect(error).toBeInstanceOf(APIConnectionError);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('counts a body that never ends as a time-out', async () => {
    fake.script(['stall-body']);
    await expect(client({ timeoutMs: 150, maxRetries: 0 }).decisions.bnpl.retrieve(ID)).rejects.toBeInstanceOf(APITimeoutError);
  });

  it('retries a time-out with the same key', async () => {
    fake.script(['hang', { status: 200, body: declinedDecision(ID) }]);
    const decision = await client({ timeoutMs: 100 }).decisions.bnpl.create(params, { idempotencyKey: 'k-timeout' });
    expect(decision.isDeclined).toBe(true);
    expect(fake.requests.map((r) => r.headers['idempotency-key'])).toEqual(['k-timeout', 'k-timeout']);
  });

  it('per-request timeoutMs and maxRetries override the client', async () => {
    fake.script(['hang']);
    await expect(client({ timeoutMs: 10_000 }).decisions.bnpl.retrieve(ID, { timeoutMs: 80, maxRetries: 0 })).rejects.toBeInstanceOf(APITimeoutError);
    expect(fake.requests).toHaveLength(1);
  });

  it('aborts a request in flight, without retrying', async () => {
    fake.script(['hang']);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    const error = await client().decisions.bnpl.create(params, { signal: controller.signal }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIUserAbortError);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(fake.requests).toHaveLength(1);
  });

  it('aborts during the wait before a retry, and sends nothing with an aborted signal', async () => {
    fake.script([{ status: 503, body: errorBody('service_unavailable'), headers: { 'retry-after': '30' } }]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    await expect(client().decisions.bnpl.create(params, { signal: controller.signal })).rejects.toBeInstanceOf(APIUserAbortError);
    expect(fake.requests).toHaveLength(1);

    fake.script([{ status: 200, body: declinedDecision(ID) }]);
    await expect(client().decisions.bnpl.retrieve(ID, { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(APIUserAbortError);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('polling', () => {
  it('polls until complete and returns the final decision', async () => {
    fake.script([{ status: 200, body: pendingDecision(ID) }, { status: 200, body: pendingDecision(ID) }, { status: 200, body: declinedDecision(ID) }]);
    const seen: string[] = [];
    const decision = await client().decisions.bnpl.poll(ID, { intervalMs: 30, clampInterval: false, onPending: (d) => seen.push(d.status) });
    expect(decision.isDeclined).toBe(true);
    expect(seen).toEqual(['needs_consumer_action', 'needs_consumer_action']);
    expect(fake.requests.map((r) => r.url)).toEqual(Array(3).fill(`/v1/decisions/bnpl/${ID}`));
    expect(fake.requests[1]!.at - fake.requests[0]!.at).toBeGreaterThanOrEqual(25);
  });

  it('stops at the deadline with the last pending state', async () => {
    fake.script([{ status: 200, body: pendingDecision(ID) }]);
    const started = Date.now();
    const error = (await client()
      .decisions.bnpl.poll(ID, { intervalMs: 20, clampInterval: false, timeoutMs: 150 })
      .catch((e: unknown) => e)) as PollTimeoutError;
    expect(error).toBeInstanceOf(PollTimeoutError);
    expect((error.decision as { decision_id: string }).decision_id).toBe(ID);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(Date.now() - started).toBeLessThan(1_000);

    fake.script([{ status: 200, body: pendingDecision(ID) }]);
    await expect(client().decisions.bnpl.poll({ decision_id: ID }, { deadline: new Date(Date.now() + 50) })).rejects.toBeInstanceOf(PollTimeoutError);
  });

  it('never polls sooner than the interval, the last poll before the deadline included', async () => {
    fake.script([{ status: 200, body: pendingDecision(ID) }]);
    // Polls at about 0, 200 and 400 ms; one at the 500 ms deadline would come 100 ms after the last.
    await expect(client().decisions.bnpl.poll(ID, { intervalMs: 200, clampInterval: false, timeoutMs: 500 })).rejects.toBeInstanceOf(PollTimeoutError);
    const at = fake.requests.map((r) => r.at);
    expect(at.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!, `gap before poll ${i + 1}`).toBeGreaterThanOrEqual(195);
  });

  it('is cancelled by its signal', async () => {
    fake.script([{ status: 200, body: pendingDecision(ID) }]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 120);
    await expect(client().decisions.bnpl.poll(ID, { intervalMs: 2_500, signal: controller.signal })).rejects.toBeInstanceOf(APIUserAbortError);
    expect(fake.requests).toHaveLength(1);
  });

  it('clamps the interval to the recommended 2-3 s unless told otherwise', () => {
    expect(pollInterval({})).toBe(2_500);
    expect(pollInterval({ intervalMs: 10 })).toBe(2_000);
    expect(pollInterval({ intervalMs: 60_000 })).toBe(3_000);
    expect(pollInterval({ intervalMs: 2_200 })).toBe(2_200);
    expect(pollInterval({ intervalMs: 10, clampInterval: false })).toBe(10);
    expect(() => pollInterval({ intervalMs: -1 })).toThrow(TypeError);
  });
});

describe('retry rules (pure)', () => {
  const policy = { ...DEFAULT_RETRY_POLICY };
  const response = (status: number, headers: Record<string, string> = {}, code?: string) => ({ kind: 'response' as const, status, code, headers });

  it('backs off exponentially with jitter inside (0.75, 1] of the capped base', () => {
    for (const [retry, base] of [[1, 500], [2, 1_000], [3, 2_000], [4, 4_000], [5, 8_000], [6, 8_000]] as const) {
      expect(backoffDelay(retry, policy, 0)).toBe(base);
      expect(backoffDelay(retry, policy, 0.999999)).toBeGreaterThan(base * 0.75);
    }
  });

  it('decides what is retried', () => {
    expect(decideRetry({ kind: 'connection' }, 0, 'POST', policy, 0)).toEqual({ retry: true, delayMs: 500 });
    expect(decideRetry({ kind: 'timeout' }, 1, 'GET', policy, 0)).toEqual({ retry: true, delayMs: 1_000 });
    expect(decideRetry({ kind: 'connection' }, 2, 'POST', policy, 0).retry).toBe(false); // maxRetries 2
    expect(decideRetry(response(500), 0, 'POST', policy, 0).retry).toBe(true);
    expect(decideRetry(response(503, { 'retry-after': '7' }), 0, 'POST', policy, 0)).toEqual({ retry: true, delayMs: 7_000 });
    expect(decideRetry(response(503, { 'retry-after': '61' }), 0, 'POST', policy, 0).retry).toBe(false);
    expect(decideRetry(response(429, { 'retry-after': '1' }), 0, 'POST', policy, 0).retry).toBe(false);
    expect(decideRetry(response(429, { 'retry-after': '1' }), 0, 'POST', { ...policy, retryRateLimited: true }, 0)).toEqual({ retry: true, delayMs: 1_000 });
    for (const status of [400, 401, 404, 405, 413, 415, 422]) expect(decideRetry(response(status), 0, 'POST', policy, 0).retry).toBe(false);
    expect(decideRetry(response(409, {}, 'idempotency_conflict'), 0, 'POST', policy, 0).retry).toBe(false);
    expect(decideRetry(response(409, {}, 'idempotency_conflict'), 1, 'POST', policy, 0).retry).toBe(true);
    expect(decideRetry(response(500), 0, 'POST', { ...policy, maxRetries: 0 }, 0).retry).toBe(false);
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3_000);
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5_000);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});

describe('client options', () => {
  it('requires an API key and a base URL', () => {
    expect(() => new CreditDecisions({ apiKey: '', baseUrl: 'http://x' })).toThrow(TypeError);
    expect(() => new CreditDecisions({ apiKey: 'k', baseUrl: 'x' })).toThrow(TypeError);
    // A pasted placeholder could never be sent as a header: told at once, not as a connection error.
    expect(() => new CreditDecisions({ apiKey: 'svc_test_\u2026', baseUrl: 'http://x' })).toThrow(/printable ASCII/);
    expect(() => new CreditDecisions({ apiKey: 'svc_test_ab cd', baseUrl: 'http://x' })).toThrow(/printable ASCII/);
  });

  it('refuses an Idempotency-Key the service would refuse, before sending anything', async () => {
    const error = await client().decisions.bnpl.create(params, { idempotencyKey: 'caf\u00e9' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(fake.requests).toHaveLength(0);
  });

  it('uses a custom fetch and trims the base URL', async () => {
    const urls: string[] = [];
    const c = new CreditDecisions({
      apiKey: 'k',
      baseUrl: 'http://example.invalid/',
      fetch: async (url) => {
        urls.push(url);
        return new Response(JSON.stringify(declinedDecision(ID)), { status: 200, headers: { 'content-type': 'application/json' } });
      },
    });
    const d = await c.decisions.bnpl.retrieve(ID);
    expect(urls).toEqual([`http://example.invalid/v1/decisions/bnpl/${ID}`]);
    expect(d.isDeclined && !d.isApproved && !d.isPending && !d.isReferred).toBe(true);
    expect(JSON.parse(JSON.stringify(d))).toEqual(declinedDecision(ID));
  });
});
