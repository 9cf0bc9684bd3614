/**
 * The gateway connector against a real HTTPS server on loopback (test/support/fake-credit-gateway.ts).
 * Time that matters to the connector's logic (cache TTL, breaker cool-down) runs on a manual clock;
 * only the timeout budget uses real time, and it is asserted loosely.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { ManualClock } from '../../../src/lib/clock.js';
import type { CreditDataResult, CreditSubject } from '../../../src/modules/credit-data/credit-data.types.js';
import {
  GATEWAY_CONNECTOR_DEFAULTS,
  createGatewayConnector,
  type GatewayConnector,
  type GatewayConnectorOptions,
} from '../../../src/modules/credit-data/gateway-connector.js';
import {
  fakeWireFile,
  startFakeCreditGateway,
  stopFakeCreditGateway,
  type FakeCreditGateway,
} from '../../support/fake-credit-gateway.js';

const PII = ['Philomena', 'Quackenbush', '1979-03-14', '7395', '30341'];

function subject(n = 0): CreditSubject {
  return {
    consumerId: `6f1c1d0e-9a9b-4a47-8c53-0d7d1b0e2f${String(10 + n).padStart(2, '0')}`,
    firstName: n === 0 ? 'Philomena' : `Philomena${'x'.repeat(n)}`,
    lastName: 'Quackenbush',
    dob: '1979-03-14',
    ssnLast4: '7395',
    zip: '30341',
    sandboxProfile: null,
  };
}

const context = (clock: ManualClock, tenantId = 'tenant-a') => ({ asOf: clock.now(), tenantId });

let gateway: FakeCreditGateway;
let clock: ManualClock;
const connectors: GatewayConnector[] = [];
/** Every detail any test saw, checked for PII at the end. */
const details: string[] = [];

function connect(overrides: Partial<GatewayConnectorOptions> = {}): GatewayConnector {
  const connector = createGatewayConnector({ baseUrl: gateway.url, token: gateway.token, ca: gateway.ca, clock, ...overrides });
  connectors.push(connector);
  return connector;
}

async function pull(connector: GatewayConnector, n = 0, tenantId = 'tenant-a'): Promise<CreditDataResult> {
  const result = await connector.fetchCreditFile(subject(n), context(clock, tenantId));
  if (result.status === 'unavailable') details.push(result.detail);
  return result;
}

beforeAll(async () => {
  gateway = await startFakeCreditGateway();
});
afterAll(async () => {
  await stopFakeCreditGateway(gateway);
});
beforeEach(() => {
  gateway.reset();
  clock = new ManualClock();
});
afterEach(() => {
  for (const c of connectors.splice(0)) c.close();
});

describe('gateway connector: answers', () => {
  it('posts the contract request with the bearer token and maps the file', async () => {
    const connector = connect();
    const result = await pull(connector);

    expect(gateway.requests).toHaveLength(1);
    const [received] = gateway.requests;
    expect(received).toMatchObject({
      method: 'POST',
      path: '/v1/credit-files',
      authorization: `Bearer ${gateway.token}`,
      contentType: 'application/json',
      body: {
        request_id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
        subject: { first_name: 'Philomena', last_name: 'Quackenbush', dob: '1979-03-14', ssn_last4: '7395', zip: '30341' },
      },
    });
    const requestId = (received?.body as { request_id: string }).request_id;
    const wire = fakeWireFile(requestId);
    expect(connector.name).toBe('gateway:127.0.0.1');
    expect(result).toEqual({
      status: 'ok',
      latencyMs: 0, // the manual clock did not move
      file: {
        fileId: wire.file_id,
        source: 'gateway:127.0.0.1',
        hasFile: true,
        tradelines: wire.tradelines,
        oldestTradelineMonths: wire.oldest_tradeline_months,
        revolvingUtilizationPct: wire.revolving_utilization_pct,
        delinquencies30dLast24m: wire.delinquencies_30d_last_24m,
        delinquencies90dLast24m: wire.delinquencies_90d_last_24m,
        collectionsOrJudgments: wire.collections_or_judgments,
        bankruptcy: wire.bankruptcy,
        foreclosureOrRepossession: wire.foreclosure_or_repossession,
        inquiriesLast6m: wire.inquiries_last_6m,
        monthlyObligationsCents: wire.monthly_obligations_cents,
        estimatedMonthlyIncomeCents: wire.estimated_monthly_income_cents,
      },
    });
  });

  it('turns no_file into a file with hasFile false', async () => {
    gateway.setMode('no_file');
    const result = await pull(connect());
    expect(result.status).toBe('ok');
    expect(result.status === 'ok' && result.file).toMatchObject({ hasFile: false, source: 'gateway:127.0.0.1', tradelines: 0, bankruptcy: false });
  });

  it('sends ssn_last4 null when the consumer never gave it', async () => {
    await connect().fetchCreditFile({ ...subject(), ssnLast4: null }, context(clock));
    expect(gateway.requests[0]?.body).toMatchObject({ subject: { ssn_last4: null } });
  });
});

describe('gateway connector: failures are values', () => {
  it('gives up at the timeout budget, well before a slow gateway answers', async () => {
    gateway.setMode({ kind: 'file', delayMs: 20_000 });
    const started = performance.now();
    const result = await pull(connect({ timeoutMs: 200 }));
    expect(result).toMatchObject({ status: 'unavailable', reason: 'timeout', detail: 'gateway did not answer within 200 ms' });
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('counts reading the body against the same budget', async () => {
    gateway.setMode({ kind: 'stalled_body' });
    const started = performance.now();
    const result = await pull(connect({ timeoutMs: 300 }));
    expect(result).toMatchObject({ status: 'unavailable', reason: 'timeout' });
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('enforces the default 1,500 ms budget', async () => {
    expect(GATEWAY_CONNECTOR_DEFAULTS.timeoutMs).toBe(1_500);
    gateway.setMode({ kind: 'no_file', delayMs: 20_000 });
    const started = performance.now();
    const result = await pull(connect());
    expect(result).toMatchObject({ status: 'unavailable', reason: 'timeout' });
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('reports a 500 as an error', async () => {
    gateway.setMode('server_error');
    expect(await pull(connect())).toMatchObject({ status: 'unavailable', reason: 'error', detail: 'gateway answered HTTP 500 (internal_error)' });
  });

  it('reports a connection reset as an error', async () => {
    const connector = connect();
    await pull(connector); // leaves a pooled keep-alive socket, so the reset also exercises the one retry
    gateway.setMode('reset');
    const result = await pull(connector, 1);
    expect(result).toMatchObject({ status: 'unavailable', reason: 'error', detail: expect.stringMatching(/^connection failure \(ECONNRESET\)$/) });
    const ids = gateway.requests.slice(1).map((r) => (r.body as { request_id: string }).request_id);
    expect(ids.length).toBeGreaterThanOrEqual(1);
    expect(new Set(ids).size).toBe(1); // a retry reuses the request id, so the gateway sees one pull
  });

  it('reports a body that is not JSON as an error', async () => {
    gateway.setMode('malformed_json');
    expect(await pull(connect())).toMatchObject({ status: 'unavailable', reason: 'error', detail: expect.stringContaining('not JSON') });
  });

  it('reports a file that fails validation as an error, naming the field only', async () => {
    gateway.setMode({ kind: 'file', overrides: { tradelines: -3, bankruptcy: 'Quackenbush' } });
    const result = await pull(connect());
    expect(result).toMatchObject({ status: 'unavailable', reason: 'error' });
    expect(result.status === 'unavailable' && result.detail).toBe(
      'invalid credit file from gateway: tradelines must be a non-negative integer; bankruptcy must be a boolean',
    );
  });

  it('reports a wrong token as an error', async () => {
    const result = await pull(connect({ token: 'gw_wrong_token' }));
    expect(result).toMatchObject({ status: 'unavailable', reason: 'error', detail: 'gateway answered HTTP 401 (unauthorized)' });
    expect(gateway.requests[0]?.authorization).toBe('Bearer gw_wrong_token');
  });

  it('does not trust the gateway certificate without its CA', async () => {
    const result = await pull(connect({ ca: undefined }));
    expect(result).toMatchObject({ status: 'unavailable', reason: 'error', detail: expect.stringMatching(/^TLS failure \(/) });
    expect(gateway.requests).toHaveLength(0);
  });

  it('reports a refused connection as an error', async () => {
    const port = await closedPort();
    const result = await pull(connect({ baseUrl: `https://127.0.0.1:${port}` }));
    expect(result).toMatchObject({ status: 'unavailable', reason: 'error', detail: 'connection failure (ECONNREFUSED)' });
  });

  it('refuses an oversized answer instead of buffering it', async () => {
    gateway.setMode({ kind: 'file', overrides: { padding: 'x'.repeat(4_096) } });
    const result = await pull(connect({ maxResponseBytes: 1_024 }));
    expect(result).toMatchObject({ status: 'unavailable', reason: 'error', detail: 'gateway response larger than 1024 bytes' });
  });

  it('fails loudly on bad configuration at construction', () => {
    expect(() => createGatewayConnector({ baseUrl: 'http://127.0.0.1', token: 't' })).toThrow(RangeError);
    expect(() => createGatewayConnector({ baseUrl: gateway.url, token: 'a b' })).toThrow(RangeError);
    expect(() => createGatewayConnector({ baseUrl: gateway.url, token: 't', timeoutMs: 0 })).toThrow(RangeError);
  });
});

describe('gateway connector: cache', () => {
  it('serves a recent file without a second request, per tenant, until the TTL passes', async () => {
    const connector = connect({ cache: { ttlMs: 60_000 } });
    const first = await pull(connector);
    const second = await pull(connector);
    expect(gateway.requests).toHaveLength(1);
    expect(second).toEqual(first);

    await pull(connector, 0, 'tenant-b'); // another lender makes its own pull
    expect(gateway.requests).toHaveLength(2);

    clock.advance(60_000);
    await pull(connector);
    expect(gateway.requests).toHaveLength(3);
  });

  it('keeps files for 24 hours by default', async () => {
    const connector = connect();
    await pull(connector);
    clock.advance(24 * 60 * 60 * 1000 - 1);
    await pull(connector);
    expect(gateway.requests).toHaveLength(1);
    clock.advance(1);
    await pull(connector);
    expect(gateway.requests).toHaveLength(2);
  });

  it('caches no-file answers but never failures', async () => {
    const connector = connect();
    gateway.setMode('server_error');
    await pull(connector);
    await pull(connector);
    expect(gateway.requests).toHaveLength(2);
    gateway.setMode('no_file');
    await pull(connector);
    await pull(connector);
    expect(gateway.requests).toHaveLength(3);
  });

  it('joins an identical pull already in flight', async () => {
    gateway.setMode({ kind: 'file', delayMs: 100 });
    const connector = connect();
    const [a, b] = await Promise.all([pull(connector), pull(connector)]);
    expect(gateway.requests).toHaveLength(1);
    expect(a).toEqual(b);
  });
});

describe('gateway connector: circuit breaker', () => {
  it('opens after N consecutive failures and then refuses without a request', async () => {
    const connector = connect({ circuitBreaker: { failureThreshold: 3 } });
    gateway.setMode('server_error');
    for (let i = 0; i < 3; i += 1) expect((await pull(connector, i)).status).toBe('unavailable');
    expect(connector.circuitState()).toBe('open');
    expect(gateway.requests).toHaveLength(3);

    gateway.setMode('file');
    const refused = await pull(connector, 9);
    expect(refused).toMatchObject({ status: 'unavailable', reason: 'circuit_open' });
    expect(gateway.requests).toHaveLength(3);
  });

  it('opens after 5 failures by default', async () => {
    const connector = connect();
    gateway.setMode('server_error');
    for (let i = 0; i < 4; i += 1) await pull(connector, i);
    expect(connector.circuitState()).toBe('closed');
    await pull(connector, 4);
    expect(connector.circuitState()).toBe('open');
  });

  it('half-opens after the cool-down, lets one trial through, and closes when it succeeds', async () => {
    const connector = connect({ circuitBreaker: { failureThreshold: 2, cooldownMs: 30_000 } });
    gateway.setMode('server_error');
    await pull(connector, 0);
    await pull(connector, 1);
    expect(connector.circuitState()).toBe('open');

    clock.advance(29_999);
    expect(await pull(connector, 2)).toMatchObject({ reason: 'circuit_open' });
    expect(gateway.requests).toHaveLength(2);

    clock.advance(1);
    gateway.setMode({ kind: 'file', delayMs: 200 });
    const trial = pull(connector, 3);
    const bystander = await pull(connector, 4); // sent while the trial is in flight
    expect(bystander).toMatchObject({ status: 'unavailable', reason: 'circuit_open' });
    expect(await trial).toMatchObject({ status: 'ok' });
    expect(gateway.requests).toHaveLength(3);
    expect(connector.circuitState()).toBe('closed');

    expect(await pull(connector, 5)).toMatchObject({ status: 'ok' });
    expect(gateway.requests).toHaveLength(4);
  });

  it('re-opens for another cool-down when the trial fails', async () => {
    const connector = connect({ circuitBreaker: { failureThreshold: 1, cooldownMs: 10_000 } });
    gateway.setMode('reset');
    await pull(connector, 0);
    expect(connector.circuitState()).toBe('open');

    clock.advance(10_000);
    await pull(connector, 1); // the trial, which fails
    expect(connector.circuitState()).toBe('open');
    const requestsAfterTrial = gateway.requests.length;

    clock.advance(9_999);
    expect(await pull(connector, 2)).toMatchObject({ reason: 'circuit_open' });
    expect(gateway.requests).toHaveLength(requestsAfterTrial);
  });

  it('serves cached files even while the circuit is open', async () => {
    const connector = connect({ circuitBreaker: { failureThreshold: 1 } });
    await pull(connector, 0);
    gateway.setMode('server_error');
    await pull(connector, 1);
    expect(connector.circuitState()).toBe('open');
    expect(await pull(connector, 0)).toMatchObject({ status: 'ok' });
  });

  it('does not count a request-specific refusal (400) as an outage', async () => {
    const connector = connect({ circuitBreaker: { failureThreshold: 1 } });
    const result = await connector.fetchCreditFile({ ...subject(), dob: 'not-a-date' }, context(clock));
    expect(result).toMatchObject({ status: 'unavailable', reason: 'error', detail: 'gateway answered HTTP 400 (invalid_request)' });
    expect(connector.circuitState()).toBe('closed');
  });
});

describe('gateway connector: privacy', () => {
  // Runs last: it reads the details every earlier test collected through pull().
  it('never puts PII in a failure detail', () => {
    expect(details.length).toBeGreaterThan(10);
    for (const detail of details) for (const piece of PII) expect(detail).not.toContain(piece);
  });
});

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
