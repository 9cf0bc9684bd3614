/**
 * Dependencies failing UNDER LOAD (issue 11, dependency faults); database-outage.test.ts and
 * scale-out.test.ts cover the same faults on an idle server.
 *
 * PostgreSQL: a `cds serve` (role all, with a subscribed HTTPS webhook endpoint) reaches its
 * database through a TCP proxy. While clients keep sending keyed creates and polls, the database is
 * "stopped" (established connections cut, new ones refused), brought back, then partitioned (new
 * connections black-holed) and brought back again. While it is down every answer is a 200 that was
 * already under way or a 503 `service_unavailable` with Retry-After and the stable body: never a
 * 500, never a dropped connection, never a request left hanging (each is answered within the
 * client's 15 s bound; the mechanism is the pool's 2 s connect timeout, database.ts); the process
 * never exits. Once back, a create succeeds again without a restart and a burst of creates all
 * succeed. Then every request is retried with its key (acknowledged ones replay, the others replay
 * or run for the first time, one decision per key) and SQL finds nothing half-written.
 *
 * Redis: a `cds serve` with REDIS_URL through a proxy takes a load of creates while Redis hangs
 * (the connection stays open, no byte moves: every command runs into the limiter's 250 ms command
 * timeout) and then while it refuses connections. Every create is still served, a small-limit key
 * is still limited by the process's own bucket, the degraded warning is logged once, and when Redis
 * returns the limiter says so and shares its buckets through Redis again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';
import { isRedisReachable, REDIS_TEST_URL } from '../../support/redis.js';
import { catchUpDeliveries, createSpecGenerator, faultSeed, mapConcurrent, seededRandom, sendCreate, type CreateSpec } from '../../support/decision-load.js';
import { halfWrittenState, queryRows, WHOLE } from '../../support/integrity-checks.js';
import {
  cleanupProcesses, databaseEnv, httpRequest, pollUntil, runCli, startServer, startTcpProxy, type ChildEnv, type CutMode, type HttpResponse, type ServerProcess, type TcpProxy,
} from '../../support/server-process.js';
import { createLogger } from '../../../src/lib/logger.js';
import { systemClock } from '../../../src/lib/clock.js';
import { createRedisRateLimiter } from '../../../src/modules/rate-limit/rate-limiter.js';
import { LogCapture } from '../../support/test-app.js';
import { startWebhookReceiver, writeCaFile, type WebhookReceiver } from '../../support/webhook-receiver.js';

afterAll(cleanupProcesses);

const CLIENTS = 6;
/** Documented bound: no request waits longer than this for its answer, database up or down. */
const ANSWER_BOUND_MS = 15_000;
const REDIS_URL = REDIS_TEST_URL;

interface Tenant {
  tenant_id: string;
  sandbox: { api_key: string; consumers: Array<{ consumer_id: string; tier: string }> };
}

async function createTenant(env: ChildEnv, name: string): Promise<Tenant> {
  const r = await runCli(['tenants', 'create', '--name', name, '--json'], env);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Tenant;
}

/** A 503 as decisions.md section 8 promises it: stable body, Request-Id, Retry-After. */
function unavailableProblem(r: HttpResponse): string | null {
  if (r.status !== 503) return `status ${r.status}: ${r.body}`;
  const body = r.json();
  if (Object.keys(body).sort().join(',') !== 'error,message,request_id') return `not the stable body: ${r.body}`;
  if (body.error !== 'service_unavailable') return `error ${String(body.error)}`;
  if (r.headers['request-id'] !== body.request_id) return 'Request-Id header differs from request_id';
  if (!(Number(r.headers['retry-after']) >= 1)) return `Retry-After ${String(r.headers['retry-after'])}`;
  return null;
}

/**
 * Clients sending keyed creates (and polls of what they created) until stopped. Every answer is
 * kept; a transport failure (connection dropped, no answer within the bound) is a finding.
 */
function startLoad(server: () => ServerProcess, apiKey: string, nextSpec: () => CreateSpec) {
  const specs: CreateSpec[] = [];
  const answers: Array<{ what: string; r: HttpResponse; at: 'create' | 'poll' }> = [];
  const transportFailures: string[] = [];
  const acknowledged = new Map<string, HttpResponse>();
  const listeners = new Set<() => void>();
  let stopping = false;
  const notify = () => {
    for (const l of listeners) l();
  };
  const lane = async (i: number) => {
    const polls: string[] = [];
    while (!stopping) {
      const spec = nextSpec();
      specs.push(spec);
      try {
        const r = await sendCreate(server().baseUrl, apiKey, spec, ANSWER_BOUND_MS);
        answers.push({ what: spec.key, r, at: 'create' });
        if (r.status === 200) {
          acknowledged.set(spec.key, r);
          polls.push(String(r.json().decision_id));
        }
      } catch (err) {
        transportFailures.push(`create ${spec.key}: ${String(err)}`);
      }
      const id = polls[(i + specs.length) % Math.max(polls.length, 1)];
      if (id !== undefined) {
        try {
          const r = await httpRequest(`${server().baseUrl}/v1/decisions/bnpl/${id}`, { headers: { authorization: `Bearer ${apiKey}` }, timeoutMs: ANSWER_BOUND_MS });
          answers.push({ what: `poll ${id}`, r, at: 'poll' });
        } catch (err) {
          transportFailures.push(`poll ${id}: ${String(err)}`);
        }
      }
      notify();
    }
  };
  const lanes = Array.from({ length: CLIENTS }, (_, i) => lane(i));
  return {
    specs,
    answers,
    acknowledged,
    transportFailures,
    /** Resolve once `predicate` holds (checked after every answer); reject after `timeoutMs`. */
    until(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate()) return;
          clearTimeout(timer);
          listeners.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`load: ${what} not reached within ${timeoutMs} ms (${answers.length} answers, statuses ${[...new Set(answers.map((a) => a.r.status))].join(',')})`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    async stop() {
      stopping = true;
      await Promise.all(lanes);
    },
  };
}

describe.skipIf(!(await isPostgresReachable()))('PostgreSQL stopped and restarted under load', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let server: ServerProcess;
  let receiver: WebhookReceiver;
  let tenant: Tenant;
  let endpointId: string;
  let caFile: string;

  beforeAll(async () => {
    [db, receiver, caFile] = await Promise.all([createTestDatabase('postgres'), startWebhookReceiver(), writeCaFile()]);
    const direct = new URL(db.databaseUrl!);
    proxy = await startTcpProxy(Number(direct.port || 5432), direct.hostname);
    const viaProxy = new URL(direct);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const env: ChildEnv = { CDS_DATA_DIR: db.dataDir, DATABASE_URL: viaProxy.toString(), NODE_EXTRA_CA_CERTS: caFile, WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1', RATE_LIMIT_SANDBOX_PER_S: '100000' };
    server = await startServer({ env });
    tenant = await createTenant(databaseEnv(db), 'Outage Load Lender');
    const hook = await runCli(['webhooks', 'create', '--tenant', tenant.tenant_id, '--env', 'sandbox', '--url', receiver.url('/outage'), '--events', '*', '--json'], { ...databaseEnv(db), WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1' });
    expect(hook.code, hook.stderr).toBe(0);
    endpointId = (JSON.parse(hook.stdout) as { id: string }).id;
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await proxy?.close();
    await receiver?.stop();
    await db?.drop();
  });

  it('503 with Retry-After while down (refused, then black-holed), full service within seconds of its return without a restart, nothing half-written', async () => {
    const seed = faultSeed();
    console.info(`[dependency-faults postgres] seed ${seed}`);
    const apiKey = tenant.sandbox.api_key;
    const nextSpec = createSpecGenerator(seededRandom(seed), {
      prefix: `pg-outage-${seed}`,
      softConsumerId: tenant.sandbox.consumers.find((c) => c.tier === 'soft')!.consumer_id,
    });
    const load = startLoad(() => server, apiKey, nextSpec);
    const unavailable = () => load.answers.filter((a) => a.r.status === 503);
    const recoveries: string[] = [];
    const afterRecovery: string[] = [];
    try {
      await load.until(() => load.acknowledged.size >= 20, 60_000, '20 creates before the outage');
      for (const mode of ['reset', 'blackhole'] as CutMode[]) {
        const before = unavailable().length;
        proxy.cut(mode);
        // Down: both creates and polls are refused with 503 (at least a few of each).
        await load.until(
          () => unavailable().slice(before).filter((a) => a.at === 'create').length >= 3 && unavailable().slice(before).filter((a) => a.at === 'poll').length >= 3,
          60_000,
          `503s for creates and polls while cut (${mode})`,
        );
        proxy.restore();
        const restoredAt = performance.now();
        // Back, without a restart: a create succeeds again (bounded poll), then a burst all succeed.
        await pollUntil(async () => (await sendCreate(server.baseUrl, apiKey, nextSpec())).status === 200, {
          timeoutMs: 15_000,
          intervalMs: 100,
          describe: () => server.stderrText().slice(-3_000),
        });
        recoveries.push(`${mode}: served again ${Math.round(performance.now() - restoredAt)} ms after the network returned`);
        const burst = await Promise.all(Array.from({ length: 20 }, () => nextSpec()).map((spec) => sendCreate(server.baseUrl, apiKey, spec)));
        expect(burst.map((r) => r.status), `burst after ${mode}`).toEqual(Array(20).fill(200));
        afterRecovery.push(...burst.map((r) => String(r.json().decision_id)));
      }
    } finally {
      await load.stop();
    }
    console.info(`[dependency-faults postgres] ${recoveries.join('; ')}; ${load.answers.length} answers, ${unavailable().length} of them 503`);

    expect(load.transportFailures, 'requests dropped or left hanging').toEqual([]);
    const wrong = load.answers.filter((a) => a.r.status !== 200 && unavailableProblem(a.r) !== null).map((a) => `${a.what}: ${unavailableProblem(a.r)}`);
    expect(wrong, 'answers other than 200 or a proper 503').toEqual([]);
    expect(server.isRunning()).toBe(true);
    expect(server.logs().filter((l) => l.msg === 'credit decisioning service ready')).toHaveLength(1);
    expect(server.stderrText()).not.toMatch(/"statusCode":500/);
    expect(server.stderrText()).not.toContain('unhandled error');

    // Every request retried with its key: acknowledged ones replay; one decision per key.
    const retries = await mapConcurrent(load.specs, CLIENTS, (spec) => sendCreate(server.baseUrl, apiKey, spec));
    load.specs.forEach((spec, i) => {
      expect(retries[i]!.status, `${spec.key}: ${retries[i]!.body}`).toBe(200);
      const first = load.acknowledged.get(spec.key);
      if (first) expect(retries[i]!.body, spec.key).toBe(first.body);
    });
    const perKey = await queryRows(db, `select merchant_name, count(*) as n from decisions where tenant_id = '${tenant.tenant_id}' and merchant_name like 'Load pg-outage-%' group by merchant_name having count(*) <> 1`);
    expect(perKey, 'keys with more than one decision').toEqual([]);
    expect(await halfWrittenState(db, { endpointIds: [endpointId] })).toEqual(WHOLE);

    // The running worker came through both outages: it delivers the events of decisions made after them.
    const eventIdsOf = async (decisionIds: string[]) =>
      (await queryRows(db, `select id from events where subject_id in (${decisionIds.map((id) => `'${id}'`).join(',')})`)).map((r) => String(r.id));
    const received = () => new Set(receiver.requestsTo('/outage').map((q) => (JSON.parse(q.body) as { id: string }).id));
    const lateEvents = await eventIdsOf(afterRecovery);
    expect(lateEvents.length).toBeGreaterThanOrEqual(2 * afterRecovery.length);
    await receiver.waitFor(() => lateEvents.every((id) => received().has(id)), 30_000, () =>
      server
        .stderrText()
        .split('\n')
        .filter((line) => !/"msg":"(incoming request|request completed)"/.test(line))
        .join('\n')
        .slice(-6_000),
    );
    // And every event of every decision arrives at least once (sends the outage interrupted are
    // claimed again once their lease passes: a worker with its clock ahead stands for that wait).
    await server.stop();
    const report = await catchUpDeliveries({ CDS_DATA_DIR: db.dataDir, DATABASE_URL: db.databaseUrl!, NODE_EXTRA_CA_CERTS: caFile });
    expect(report.left, 'deliveries not delivered').toEqual([]);
    const allEvents = (await queryRows(db, `select e.id from events e join decisions d on d.id = e.subject_id where d.tenant_id = '${tenant.tenant_id}'`)).map((r) => String(r.id));
    expect(allEvents.filter((id) => !received().has(id)), 'events never received').toEqual([]);
  }, 180_000);
});

describe.skipIf(!(await isRedisReachable('the Redis fault test')))('Redis down under load', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let server: ServerProcess;
  let busy: Tenant;
  let limited: Tenant;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    const redisUrl = new URL(REDIS_URL);
    proxy = await startTcpProxy(Number(redisUrl.port || 6379), redisUrl.hostname);
    const viaProxy = new URL(REDIS_URL);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const env = { ...databaseEnv(db), REDIS_URL: viaProxy.toString(), RATE_LIMIT_SANDBOX_PER_S: '100000' };
    const migrated = await runCli(['migrate'], env);
    expect(migrated.code, migrated.stderr).toBe(0);
    [busy, limited] = [await createTenant(env, 'Busy Lender'), await createTenant(env, 'Limited Lender')];
    // The limited tenant's own sandbox limit: 5/s, burst 10 (set before its key is first used).
    const sqlite = (await import('better-sqlite3')).default;
    const file = new sqlite(`${db.dataDir}/cds.sqlite`);
    file.prepare('update tenants set rate_limit_sandbox_per_s = 5 where id = ?').run(limited.tenant_id);
    file.close();
    server = await startServer({ env });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await proxy?.close();
    await db?.drop();
  });

  /** 14 requests at once with the 5/s key: a bucket of 10 lets through 10 and a little refill, never all 14. */
  async function limitedBurst(): Promise<number[]> {
    const rs = await Promise.all(Array.from({ length: 14 }, () => server.request('/v1/x', { headers: { authorization: `Bearer ${limited.sandbox.api_key}` } })));
    return rs.map((r) => r.status);
  }

  it('a limiter answers through Redis from its first request once ready() resolves (no false degraded warning at start)', async () => {
    const logs = new LogCapture();
    const limiter = createRedisRateLimiter({ url: REDIS_URL, clock: systemClock, logger: createLogger('info', logs), keyPrefix: `cds:test:${process.pid}:` });
    try {
      await limiter.ready();
      const taken = await limiter.take('first', { ratePerSecond: 5, burst: 10 });
      expect(taken).toMatchObject({ allowed: true, remaining: 9 });
      expect(limiter.mode()).toBe('redis');
      expect(logs.lines.filter((l) => /degraded/.test(l))).toEqual([]);
    } finally {
      await limiter.close();
    }
  });

  it('a hanging, then refusing Redis: every create served, the limit kept per process, the degraded warning once, shared again when Redis returns', async () => {
    const seed = faultSeed();
    const nextSpec = createSpecGenerator(seededRandom(seed), { prefix: `redis-${seed}`, softConsumerId: busy.sandbox.consumers.find((c) => c.tier === 'soft')!.consumer_id });
    // Healthy: the limiter goes through Redis.
    expect((await server.request('/v1/x', { headers: { authorization: `Bearer ${busy.sandbox.api_key}` } })).status).toBe(404);
    expect(proxy.connectionCount()).toBeGreaterThan(0);
    expect(server.logs().find((l) => l.msg === 'credit decisioning service ready')?.rateLimiting).toBe('redis');

    const load = startLoad(() => server, busy.sandbox.api_key, nextSpec);
    const degradedLines = () => server.stderrLines.filter((l) => /redis/i.test(l) && /degraded/i.test(l));
    const phases: string[] = [];
    try {
      await load.until(() => load.acknowledged.size >= 10, 60_000, '10 creates with Redis up');
      // Traffic from the first moment never saw a false alarm: `cds serve` listens once Redis is connected.
      expect(degradedLines(), 'degraded warning while Redis was up').toEqual([]);
      for (const fault of ['hang', 'refuse'] as const) {
        const before = load.acknowledged.size;
        if (fault === 'hang') proxy.freeze();
        else proxy.cut('reset');
        await server.waitForLog((l) => /redis/i.test(l) && /degraded/i.test(l), 15_000);
        // Served while Redis is gone: creates keep succeeding, and the small key is still limited.
        await load.until(() => load.acknowledged.size >= before + 15, 60_000, `15 creates while Redis is down (${fault})`);
        const statuses = await limitedBurst();
        expect(statuses.every((s) => s === 404 || s === 429), statuses.join(',')).toBe(true);
        expect(statuses.filter((s) => s === 429).length, `per-process limit while Redis is down (${fault}): ${statuses.join(',')}`).toBeGreaterThanOrEqual(1);
        phases.push(`${fault}: ${load.acknowledged.size - before} creates served`);
        proxy.restore();
        await pollUntil(
          async () => {
            await server.request('/v1/x', { headers: { authorization: `Bearer ${busy.sandbox.api_key}` } });
            return server.stderrLines.filter((l) => /redis available again/i.test(l)).length >= phases.length;
          },
          { timeoutMs: 15_000, intervalMs: 100, describe: () => server.stderrText().slice(-3_000) },
        );
        expect(degradedLines().length, `one degraded warning per outage:\n${server.stderrLines.filter((l) => /redis/i.test(l)).join('\n')}`).toBe(phases.length);
      }
    } finally {
      await load.stop();
    }
    console.info(`[dependency-faults redis] seed ${seed}; ${phases.join('; ')}`);

    expect(load.transportFailures).toEqual([]);
    const notOk = load.answers.filter((a) => a.r.status !== 200).map((a) => `${a.what}: ${a.r.status} ${a.r.body}`);
    expect(notOk, 'creates and polls refused while Redis was down').toEqual([]);
    expect(JSON.parse(degradedLines()[0]!).level).toBe(40); // pino "warn"
    expect(server.isRunning()).toBe(true);
    // Shared again: the limiter's commands reach Redis through the proxy.
    expect(proxy.connectionCount()).toBeGreaterThan(0);
    expect(await halfWrittenState(db)).toEqual(WHOLE);
  }, 180_000);
});
