/**
 * PostgreSQL outage: a `cds serve` reaches its database through a TCP proxy that the test cuts.
 * While cut, readiness and authenticated requests answer 503 `service_unavailable` with Retry-After
 * and the stable error body, liveness stays 200, the process stays up; once the network is back the
 * same requests succeed again without a restart (decisions.md section 8).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';
import {
  cleanupProcesses, pollUntil, runCli, sleep, startServer, startTcpProxy, type CutMode, type HttpResponse, type ServerProcess, type TcpProxy,
} from '../../support/server-process.js';

const available = await isPostgresReachable();

function expectUnavailable(r: HttpResponse, what: string): void {
  expect(r.status, `${what}: ${r.body}`).toBe(503);
  const body = r.json();
  expect(Object.keys(body).sort(), what).toEqual(['error', 'message', 'request_id']);
  expect(body.error, what).toBe('service_unavailable');
  expect(body.request_id, what).toMatch(/^req_[0-9A-Za-z]+$/);
  expect(r.headers['request-id'], what).toBe(body.request_id);
  expect(Number(r.headers['retry-after']), what).toBeGreaterThanOrEqual(1);
}

afterAll(cleanupProcesses);

describe.skipIf(!available)('database outage (PostgreSQL through a proxy)', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let server: ServerProcess;
  let sandboxKey: string;
  const authed = () => server.request('/v1/x', { headers: { authorization: `Bearer ${sandboxKey}` } });

  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    const direct = new URL(db.databaseUrl!);
    proxy = await startTcpProxy(Number(direct.port || 5432), direct.hostname);
    const viaProxy = new URL(direct);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const env = { CDS_DATA_DIR: db.dataDir, DATABASE_URL: viaProxy.toString() };
    server = await startServer({ env });
    const created = await runCli(['tenants', 'create', '--name', 'Outage Lender', '--json'], env);
    expect(created.code, created.stderr).toBe(0);
    sandboxKey = (JSON.parse(created.stdout) as { sandbox: { api_key: string } }).sandbox.api_key;
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await proxy?.close();
    await db?.drop();
  });

  const modes: Array<[CutMode, string]> = [
    ['reset', 'connections refused'],
    ['blackhole', 'connections hang (connect timeout)'],
  ];

  it.each(modes)('cut (%s: %s): 503 with Retry-After while down, healthy again after restore without a restart', async (mode) => {
    // Up, with pooled connections open through the proxy.
    expect((await server.request('/readyz')).status).toBe(200);
    expect((await authed()).status).toBe(404);
    expect(proxy.connectionCount()).toBeGreaterThan(0);
    await sleep(200); // let fire-and-forget writes (last_used_at) finish: no query in flight here

    proxy.cut(mode);
    try {
      // Requests in parallel so the black-hole mode pays the connect timeout once, not three times.
      const [ready, v1, v1Again, health] = await Promise.all([server.request('/readyz'), authed(), authed(), server.request('/healthz')]);
      expectUnavailable(ready, '/readyz');
      expectUnavailable(v1, 'GET /v1/x');
      expectUnavailable(v1Again, 'GET /v1/x again');
      expect(health.status).toBe(200);
      expect(health.json()).toEqual({ status: 'ok' });
      // A missing key does not need the database: still 401, not 503.
      expect((await server.request('/v1/x')).status).toBe(401);
      expect(server.isRunning()).toBe(true);
    } finally {
      proxy.restore();
    }

    // Back, without restarting the process: bounded poll until both succeed.
    await pollUntil(
      async () => (await server.request('/readyz')).status === 200 && (await authed()).status === 404,
      { timeoutMs: 15_000, intervalMs: 200, describe: () => server.stderrText() },
    );
    expect(server.isRunning()).toBe(true);
    expect(server.logs().filter((l) => l.msg === 'credit decisioning service ready')).toHaveLength(1);
    // The outage is in the log, and no request ended as a 500.
    expect(server.stderrText()).toMatch(/database unavailable|database connection lost/);
    expect(server.stderrText()).not.toMatch(/"statusCode":500/);
    expect(server.stderrText()).not.toContain('unhandled error');
  });

  it('a query in flight when its connection dies answers 503 and the process survives', async () => {
    expect((await authed()).status).toBe(404);
    await sleep(200); // let fire-and-forget writes (last_used_at) finish
    expect(proxy.connectionCount()).toBeGreaterThan(0);
    proxy.freeze(); // partition: the next query goes out on a pooled connection and hangs
    const inFlight = authed();
    await sleep(300);
    proxy.cut(); // the connection dies under the running query
    const r = await inFlight;
    await sleep(200);
    expect(server.isRunning(), server.stderrText()).toBe(true);
    expectUnavailable(r, 'in-flight GET /v1/x');
    proxy.restore();
    await pollUntil(async () => (await authed()).status === 404, { timeoutMs: 15_000, intervalMs: 200, describe: () => server.stderrText() });
  });

  it('the process survives repeated outages and keeps one ready line (no restart)', async () => {
    for (let i = 0; i < 2; i++) {
      proxy.cut();
      expectUnavailable(await authed(), `outage ${i + 1}`);
      proxy.restore();
      await pollUntil(async () => (await authed()).status === 404, { timeoutMs: 15_000, intervalMs: 200, describe: () => server.stderrText() });
    }
    expect(server.isRunning()).toBe(true);
    expect(server.logs().filter((l) => l.msg === 'credit decisioning service ready')).toHaveLength(1);
  });
});
