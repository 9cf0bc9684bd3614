/**
 * Scale-out: two `cds serve` processes share one PostgreSQL database and one Redis. A key's rate
 * limit is one bucket across both; revocation is seen by both at once. When Redis goes away a
 * server keeps serving, limits per process, and says so in its log (decisions.md section 8).
 */
import pg from 'pg';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';
import { isRedisReachable, REDIS_TEST_URL } from '../../support/redis.js';
import {
  cleanupProcesses, databaseEnv, pollUntil, runCli, startServer, startTcpProxy, type HttpResponse, type ServerProcess, type TcpProxy,
} from '../../support/server-process.js';

const REDIS_URL = REDIS_TEST_URL;
const SANDBOX_RATE = 5; // burst 10

const available = (await isPostgresReachable()) && (await isRedisReachable('the scale-out suite'));

interface Tenant {
  tenant_id: string;
  sandbox: { api_key: string };
  live: { api_key: string };
}

const auth = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

function expectStableError(r: HttpResponse, status: number, code: string): void {
  expect(r.status, r.body).toBe(status);
  const body = r.json();
  expect(Object.keys(body).sort()).toEqual(['error', 'message', 'request_id']);
  expect(body.error).toBe(code);
  expect(r.headers['request-id']).toBe(body.request_id);
}

/** Fire `count` requests at once, alternating between the servers; results in sending order. */
async function burst(servers: ServerProcess[], key: string, count: number): Promise<{ responses: HttpResponse[]; elapsedMs: number }> {
  const started = performance.now();
  const responses = await Promise.all(Array.from({ length: count }, (_, i) => servers[i % servers.length]!.request('/v1/x', auth(key))));
  return { responses, elapsedMs: performance.now() - started };
}

afterAll(cleanupProcesses);

describe.skipIf(!available)('scale-out: two servers, one PostgreSQL, one Redis', () => {
  let db: TestDatabase;
  let a: ServerProcess;
  let b: ServerProcess;
  let limited: Tenant;
  let other: Tenant;
  let serverEnv: Record<string, string>;

  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    serverEnv = { ...(databaseEnv(db) as Record<string, string>), REDIS_URL, RATE_LIMIT_SANDBOX_PER_S: String(SANDBOX_RATE) };
    // The first server migrates; the second starts on the migrated database (both would also be fine).
    [a, b] = await Promise.all([startServer({ env: serverEnv }), startServer({ env: serverEnv })]);
    const create = async (name: string) => {
      const r = await runCli(['tenants', 'create', '--name', name, '--json'], databaseEnv(db));
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as Tenant;
    };
    [limited, other] = await Promise.all([create('Limited Lender'), create('Other Lender')]);
    // Warm both servers (database pool, Redis connection) with a live key, whose bucket is large.
    for (const s of [a, b]) {
      const warm = await Promise.all(Array.from({ length: 4 }, () => s.request('/v1/x', auth(other.live.api_key))));
      for (const r of warm) expect(r.status).toBe(404);
    }
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await db?.drop();
  });

  it('both servers share Redis and say so in their ready log line', () => {
    for (const s of [a, b]) {
      const ready = s.logs().find((l) => l.msg === 'credit decisioning service ready');
      expect(ready?.rateLimiting, s.stderrText()).toBe('redis');
    }
  });

  it('limits one sandbox key as one bucket across both processes, with the 429 headers', async () => {
    const { responses, elapsedMs } = await burst([a, b], limited.sandbox.api_key, 24);
    const allowed = responses.filter((r) => r.status === 404);
    const refused = responses.filter((r) => r.status === 429);
    expect(allowed.length + refused.length, responses.map((r) => r.status).join(',')).toBe(24);
    // Two per-process buckets would allow 20. One shared bucket allows its burst of 10, plus what it
    // refills (5/s) while the burst is in flight: exactly 10 when the burst takes under 200 ms.
    const refillAllowance = Math.floor((elapsedMs / 1000) * SANDBOX_RATE);
    expect(allowed.length, `burst took ${Math.round(elapsedMs)} ms`).toBeGreaterThanOrEqual(10);
    expect(allowed.length, `burst took ${Math.round(elapsedMs)} ms`).toBeLessThanOrEqual(10 + refillAllowance);
    if (refillAllowance === 0) {
      expect(allowed).toHaveLength(10);
      // One bucket: the remaining counts seen by both servers are 9..0, each exactly once.
      expect(allowed.map((r) => Number(r.headers['ratelimit-remaining'])).sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }
    // Both servers took part in the refusals.
    expect(responses.filter((r, i) => r.status === 429 && i % 2 === 0).length).toBeGreaterThan(0);
    expect(responses.filter((r, i) => r.status === 429 && i % 2 === 1).length).toBeGreaterThan(0);

    for (const r of allowed) {
      expect(r.headers['ratelimit-limit']).toBe('10');
      expect(Number(r.headers['ratelimit-remaining'])).toBeGreaterThanOrEqual(0);
      expect(Number(r.headers['ratelimit-reset'])).toBeGreaterThanOrEqual(0);
    }
    for (const r of refused) {
      expectStableError(r, 429, 'rate_limited');
      expect(r.headers['ratelimit-limit']).toBe('10');
      expect(r.headers['ratelimit-remaining']).toBe('0');
      expect(Number(r.headers['ratelimit-reset'])).toBeGreaterThan(0);
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
  });

  it('gives a second key its own bucket, on both servers', async () => {
    for (const s of [a, b]) {
      const r = await s.request('/v1/x', auth(other.sandbox.api_key));
      expect(r.status).toBe(404);
      expect(r.headers['ratelimit-limit']).toBe('10');
      expect(Number(r.headers['ratelimit-remaining'])).toBeGreaterThanOrEqual(8);
    }
  });

  it('a key revoked in the database is refused by both servers on the very next request', async () => {
    const key = other.sandbox.api_key;
    for (const s of [a, b]) expect((await s.request('/v1/x', auth(key))).status).toBe(404);
    const client = new pg.Client({ connectionString: db.databaseUrl! });
    await client.connect();
    try {
      const hash = createHash('sha256').update(key).digest('hex');
      const result = await client.query('update api_keys set revoked_at = $1 where key_hash = $2', [Date.now(), hash]);
      expect(result.rowCount).toBe(1);
    } finally {
      await client.end();
    }
    for (const s of [a, b]) expectStableError(await s.request('/v1/x', auth(key)), 401, 'invalid_api_key');
    // The tenant's other key is untouched.
    for (const s of [a, b]) expect((await s.request('/v1/x', auth(other.live.api_key))).status).toBe(404);
  });

  describe('when Redis goes away', () => {
    let proxy: TcpProxy;
    let c: ServerProcess;
    let degradedTenant: Tenant;

    beforeAll(async () => {
      proxy = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379), new URL(REDIS_URL).hostname);
      const redisThroughProxy = new URL(REDIS_URL);
      redisThroughProxy.hostname = '127.0.0.1';
      redisThroughProxy.port = String(proxy.port);
      c = await startServer({ env: { ...serverEnv, REDIS_URL: redisThroughProxy.toString() } });
      const r = await runCli(['tenants', 'create', '--name', 'Degraded Lender', '--json'], databaseEnv(db));
      expect(r.code, r.stderr).toBe(0);
      degradedTenant = JSON.parse(r.stdout) as Tenant;
    }, 60_000);

    afterAll(async () => {
      await c?.stop();
      await proxy?.close();
    });

    it('keeps serving, limits per process, logs a degraded warning, and recovers when Redis returns', async () => {
      // Healthy first: the request goes through Redis (the proxy carries a connection).
      expect((await c.request('/v1/x', auth(degradedTenant.live.api_key))).status).toBe(404);
      expect(proxy.connectionCount()).toBeGreaterThan(0);

      proxy.cut();
      // Still serving: authenticated requests get 404, never 5xx.
      const key = degradedTenant.sandbox.api_key;
      const { responses } = await burst([c], key, 14);
      const statuses = responses.map((r) => r.status);
      expect(statuses.every((s) => s === 404 || s === 429), statuses.join(',')).toBe(true);
      // Still limited, by this process's own bucket (burst 10, plus at most a little refill).
      expect(statuses.filter((s) => s === 429).length, statuses.join(',')).toBeGreaterThanOrEqual(1);
      expect(statuses.filter((s) => s === 404).length).toBeGreaterThanOrEqual(10);
      const refused = responses.find((r) => r.status === 429)!;
      expect(refused.headers['retry-after']).toBeDefined();
      expect(refused.headers['ratelimit-limit']).toBe('10');
      expect((await c.request('/healthz')).status).toBe(200);
      expect(c.isRunning()).toBe(true);

      const warning = await c.waitForLog((l) => /redis/i.test(l) && /degraded/i.test(l), 5_000);
      expect(JSON.parse(warning).level).toBe(40); // pino "warn"

      // Redis back: the limiter reconnects by itself (bounded poll) and logs the recovery.
      proxy.restore();
      await pollUntil(
        async () => {
          await c.request('/v1/x', auth(degradedTenant.live.api_key));
          return c.stderrLines.some((l) => /redis available again/i.test(l));
        },
        { timeoutMs: 15_000, intervalMs: 250, describe: () => c.stderrText() },
      );
    });

    it('a server whose Redis is unreachable from the start still starts and serves', async () => {
      const closed = await startTcpProxy(1); // accepts, then resets every connection
      closed.cut();
      const d = await startServer({ env: { ...serverEnv, REDIS_URL: `redis://127.0.0.1:${closed.port}` } });
      try {
        for (let i = 0; i < 3; i++) expect((await d.request('/v1/x', auth(degradedTenant.live.api_key))).status).toBe(404);
        await d.waitForLog((l) => /redis/i.test(l) && /degraded/i.test(l), 5_000);
      } finally {
        await d.stop();
        await closed.close();
      }
    });
  });
});
