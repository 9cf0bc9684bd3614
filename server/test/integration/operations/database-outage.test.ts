/**
 * PostgreSQL outage: a `cds serve` reaches its database through a TCP proxy that the test cuts.
 * While cut, readiness and authenticated requests answer 503 `service_unavailable` with Retry-After
 * and the stable error body, liveness stays 200, the process stays up; once the network is back the
 * same requests succeed again without a restart (decisions.md section 8). A partition that leaves
 * the connections open and silent ends them after the statement time-out plus a grace (503, no hang);
 * a statement that only runs long is cancelled by PostgreSQL and leaves its connection usable.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';
import { isDatabaseUnavailable, openStorage, SILENCE_GRACE_MS } from '../../../src/db/database.js';
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

/** The server's statement time-out here (DATABASE_STATEMENT_TIMEOUT_MS), short so a silent connection is given up quickly. */
const STATEMENT_TIMEOUT_MS = 1_500;

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
    const env = { CDS_DATA_DIR: db.dataDir, DATABASE_URL: viaProxy.toString(), DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS) };
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

  it('a partition that leaves connections open but silent: the query ends its connection after the statement time-out plus the grace, 503, and service resumes without a restart', async () => {
    expect((await authed()).status).toBe(404);
    await sleep(200); // let fire-and-forget writes (last_used_at) finish: no query in flight here
    // /readyz reads through the pool: six at once leave it with several open, idle connections, so
    // the next one finds an open connection even while the delivery worker holds one for its cycle
    // (without that it would open a new one and meet the connect time-out instead).
    const warm = await Promise.all(Array.from({ length: 6 }, () => server.request('/readyz')));
    expect(warm.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const silentLine = 'database connection gave no answer; ended it, the pool will reconnect';
    expect(server.logs().filter((l) => l.msg === silentLine)).toEqual([]);
    proxy.freeze(); // no byte moves either way, nothing is closed: only the server can end its connections
    try {
      // The readiness query goes out on that connection and gets no answer. Without the time-out
      // it would wait for TCP to give up (the request's own bound fails first).
      const r = await server.request('/readyz', { timeoutMs: 15_000 });
      expectUnavailable(r, '/readyz on a silent connection');
      // The log line may reach the test's pipe just after the answer.
      await server.waitForLog((line) => line.includes(silentLine), 5_000);
      const ended = server.logs().filter((l) => l.msg === silentLine);
      expect(ended[0]!.silentMs).toBe(STATEMENT_TIMEOUT_MS + SILENCE_GRACE_MS);
      expect(server.isRunning()).toBe(true);
    } finally {
      proxy.restore();
    }
    await pollUntil(async () => (await authed()).status === 404, { timeoutMs: 15_000, intervalMs: 200, describe: () => server.stderrText() });
    expect(server.logs().filter((l) => l.msg === 'credit decisioning service ready')).toHaveLength(1);
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

describe.skipIf(!available)('statement time-out (PostgreSQL)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('postgres');
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it('a statement that runs too long is cancelled by PostgreSQL (a 503 error) and its connection stays in use; no time-out: it runs to the end', async () => {
    const silent: number[] = [];
    const storage = openStorage({ databaseUrl: db.databaseUrl!, dataDir: db.dataDir, poolSize: 1, statementTimeoutMs: 300, onSilentConnection: (ms) => silent.push(ms) });
    try {
      const pid = async () => (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(storage.db)).rows[0]!.pid;
      const before = await pid();
      const err = await sql`select pg_sleep(2)`.execute(storage.db).then(() => null, (e: unknown) => e);
      expect((err as { code?: string } | null)?.code).toBe('57014');
      expect(isDatabaseUnavailable(err)).toBe(true);
      // The server answered (the cancellation), so the connection was not taken for a silent one.
      expect(await pid()).toBe(before);
      expect(silent).toEqual([]);
    } finally {
      await storage.close();
    }
    // Without a time-out (`cds migrate`) the same statement completes.
    const untimed = openStorage({ databaseUrl: db.databaseUrl!, dataDir: db.dataDir, poolSize: 1 });
    try {
      await expect(sql`select pg_sleep(0.5)`.execute(untimed.db)).resolves.toBeDefined();
    } finally {
      await untimed.close();
    }
  });
});
