/**
 * Scale-out, proven (issue 10, docs/deployment.md): TWO `cds serve --role api` and TWO `cds serve
 * --role worker` processes on one fresh PostgreSQL database and one Redis, the API nodes behind a
 * loopback round-robin balancer that routes per request (support/load-balancer.ts). All four start
 * at once on the empty database, so each runs the migrations concurrently (the migrator's lock
 * makes one apply them). Through the balancer:
 * - both API nodes serve: requests alternate, and each response's Request-Id is in the request log
 *   of exactly the node the balancer chose;
 * - idempotency: one key sent concurrently and then sequentially to both nodes gives one decision
 *   and byte-identical replays; another body under that key is 409 on both;
 * - rate limits: one key's bucket is counted across both nodes (429 and its headers at the burst);
 * - revocation: a key revoked through the portal API (a portal session that itself works on both
 *   nodes) is refused by both on the very next request;
 * - webhooks: every event of N decisions reaches an HTTPS receiver exactly once, both workers
 *   sending; every decision, event, delivery and attempt accounted for in the database;
 * - kill -9 of one API node under load: the balancer's traffic continues on the other, every
 *   acknowledged decision is there, once, and retries under the same keys replay.
 * Synchronisation is on observable state (pollUntil, receiver.waitFor), never on sleeps.
 */
import http from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../../src/db/migrations/index.js';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';
import { isRedisReachable, REDIS_TEST_URL } from '../../support/redis.js';
import { startLoadBalancer, type LoadBalancer } from '../../support/load-balancer.js';
import {
  cleanupProcesses, databaseEnv, httpRequest, pollUntil, runCli, startServer, type HttpResponse, type RequestOptions, type ServerProcess,
} from '../../support/server-process.js';
import { startWebhookReceiver, writeCaFile, type ReceivedWebhook, type WebhookReceiver } from '../../support/webhook-receiver.js';

const REDIS_URL = REDIS_TEST_URL;
/** Each worker holds at most this many sends: with a slow receiver neither can take all the work. */
const WORKER_CONCURRENCY = 4;
const WEBHOOK_DECISIONS = 30;
const EVENTS_PER_SOFT_APPROVAL = ['application.created', 'decision.created', 'decision.finalized', 'score.completed'];

const available = (await isPostgresReachable()) && (await isRedisReachable('the multi-node suite'));

interface Tenant {
  tenant_id: string;
  sandbox: { api_key: string; consumers: Array<{ consumer_id: string; tier: string }> };
  live: { api_key: string };
}

const softConsumer = (t: Tenant) => t.sandbox.consumers.find((c) => c.tier === 'soft')!.consumer_id;
const auth = (key: string): RequestOptions => ({ headers: { authorization: `Bearer ${key}` } });
const upstreamOf = (r: HttpResponse) => Number(r.headers['x-upstream']);

function bnplBody(consumerId: string, amount: string): string {
  return JSON.stringify({ consumer: { consumer_id: consumerId }, transaction: { amount, currency: 'USD', merchant_name: 'Acme', merchant_category: 'electronics' } });
}

function expectStableError(r: HttpResponse, status: number, code: string): void {
  expect(r.status, r.body).toBe(status);
  const body = r.json();
  expect(Object.keys(body).sort()).toEqual(['error', 'message', 'request_id']);
  expect(body.error).toBe(code);
}

afterAll(cleanupProcesses);

describe.skipIf(!available)('multi-node: two API processes and two workers behind a round-robin balancer, one PostgreSQL, one Redis', () => {
  let db: TestDatabase;
  let sqlClient: pg.Client;
  let receiver: WebhookReceiver;
  let apis: ServerProcess[];
  let workers: ServerProcess[];
  let lb: LoadBalancer;
  let env: Record<string, string>;
  /** One tenant per test, created together once the schema exists (each `cds` run is a process start). */
  const tenants: Record<'routing' | 'idempotent' | 'limited' | 'webhook' | 'failover', Tenant> = {} as never;

  const viaLb = (path: string, options: RequestOptions = {}) => httpRequest(lb.baseUrl + path, options);
  const createTenant = async (name: string): Promise<Tenant> => {
    const r = await runCli(['tenants', 'create', '--name', name, '--json'], databaseEnv(db));
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as Tenant;
  };
  const postDecision = (key: string, body: string, idempotencyKey?: string) =>
    viaLb('/v1/decisions/bnpl', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
      body,
    });
  const query = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) => (await sqlClient.query<R>(text, values)).rows;
  /** The API nodes whose request log has `reqId` completed (pino writes asynchronously: poll). */
  const nodesThatServed = (reqId: string) => apis.flatMap((a, i) => (a.logs().some((l) => l.reqId === reqId && l.msg === 'request completed') ? [i] : []));

  beforeAll(async () => {
    let caFile: string;
    [db, receiver, caFile] = await Promise.all([createTestDatabase('postgres'), startWebhookReceiver(), writeCaFile()]);
    env = {
      ...(databaseEnv(db) as Record<string, string>),
      REDIS_URL,
      // Default limits out of the way; the rate-limit test gives its own tenant a small one.
      RATE_LIMIT_SANDBOX_PER_S: '10000',
      RATE_LIMIT_LIVE_PER_S: '10000',
      NODE_EXTRA_CA_CERTS: caFile,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1',
      WEBHOOK_CONCURRENCY: String(WORKER_CONCURRENCY),
      DATABASE_POOL_SIZE: '5',
    };
    // All four at once on the empty database: each one migrates at start.
    const started = await Promise.all([
      startServer({ env, args: ['--role', 'api'], readyTimeoutMs: 40_000 }),
      startServer({ env, args: ['--role', 'api'], readyTimeoutMs: 40_000 }),
      startServer({ env, args: ['--role', 'worker'], readyLog: 'worker ready', readyTimeoutMs: 40_000 }),
      startServer({ env, args: ['--role', 'worker'], readyLog: 'worker ready', readyTimeoutMs: 40_000 }),
    ]);
    apis = started.slice(0, 2);
    workers = started.slice(2);
    lb = await startLoadBalancer(apis.map((a) => a.port));
    sqlClient = new pg.Client({ connectionString: db.databaseUrl! });
    await sqlClient.connect();
    const names = ['routing', 'idempotent', 'limited', 'webhook', 'failover'] as const;
    const made = await Promise.all(names.map((n) => createTenant(`${n} lender`)));
    names.forEach((n, i) => (tenants[n] = made[i]!));
  }, 90_000);

  afterAll(async () => {
    await lb?.close();
    await Promise.all([...(apis ?? []), ...(workers ?? [])].map((p) => p.stop()));
    await sqlClient?.end();
    await receiver?.stop();
    await db?.drop();
  });

  it('four processes started at once on an empty database: migrated once, API nodes on Redis, workers with their concurrency', async () => {
    const applied = await query<{ name: string }>('select name from kysely_migration order by name');
    expect(applied.map((r) => r.name)).toEqual(Object.keys(migrations).sort());
    for (const a of apis) {
      const ready = a.logs().find((l) => l.msg === 'credit decisioning service ready');
      expect(ready?.role, a.stderrText()).toBe('api');
      expect(ready?.rateLimiting).toBe('redis');
      expect(a.logs().some((l) => l.msg === 'worker ready')).toBe(false);
    }
    for (const w of workers) {
      const ready = w.logs().find((l) => l.msg === 'worker ready');
      expect(ready?.role, w.stderrText()).toBe('worker');
      expect(ready?.webhookConcurrency).toBe(WORKER_CONCURRENCY);
      expect(ready?.webhookEndpointConcurrency).toBe(8);
      // A worker serves no HTTP.
      expect(w.logs().some((l) => l.msg === 'credit decisioning service ready')).toBe(false);
    }
    for (const p of [...apis, ...workers]) expect(p.logs().filter((l) => (l.level as number) >= 50), p.stderrText()).toEqual([]);
  });

  it('the balancer alternates per request, also on one keep-alive client connection, and each node logs exactly what it served', async () => {
    const t = tenants.routing;
    const sequential: HttpResponse[] = [];
    for (let i = 0; i < 6; i++) sequential.push(await viaLb('/v1/x', auth(t.sandbox.api_key)));
    for (const r of sequential) expect(r.status, r.body).toBe(404);
    const order = sequential.map(upstreamOf);
    for (let i = 1; i < order.length; i++) expect(order[i], order.join(',')).not.toBe(order[i - 1]);

    // One client connection kept alive for four requests: still spread over both nodes.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    try {
      for (let i = 0; i < 4; i++) {
        const r = await new Promise<HttpResponse>((resolve, reject) => {
          const req = http.request(`${lb.baseUrl}/v1/x`, { agent, headers: { authorization: `Bearer ${t.sandbox.api_key}` } }, (res) => {
            sockets.add(res.socket);
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (body += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: <T>() => JSON.parse(body) as T }));
          });
          req.on('error', reject);
          req.end();
        });
        expect(r.status).toBe(404);
        sequential.push(r);
      }
    } finally {
      agent.destroy();
    }
    expect(sockets.size).toBe(1);
    expect(new Set(sequential.slice(6).map(upstreamOf))).toEqual(new Set([0, 1]));

    // The nodes' own logs agree with the balancer: each request id completed on exactly that node.
    await pollUntil(async () => sequential.every((r) => nodesThatServed(String(r.headers['request-id'])).length === 1), {
      timeoutMs: 10_000,
      describe: () => sequential.map((r) => `${String(r.headers['request-id'])} -> ${nodesThatServed(String(r.headers['request-id'])).join('+')}`).join('\n'),
    });
    for (const r of sequential) expect(nodesThatServed(String(r.headers['request-id']))).toEqual([upstreamOf(r)]);
  });

  it('idempotency holds across nodes: one key sent concurrently and sequentially to both gives one decision, byte-identical replays, and 409 for another body', async () => {
    const t = tenants.idempotent;
    const body = bnplBody(softConsumer(t), '120.00');
    const key = 'multi-node-order-1';

    const concurrent = await Promise.all(Array.from({ length: 8 }, () => postDecision(t.sandbox.api_key, body, key)));
    expect(concurrent.map((r) => r.status), concurrent.map((r) => r.body).join('\n')).toEqual(Array(8).fill(200));
    expect(new Set(concurrent.map(upstreamOf))).toEqual(new Set([0, 1]));
    const originals = concurrent.filter((r) => r.headers['idempotent-replayed'] !== 'true');
    expect(originals).toHaveLength(1);
    const original = originals[0]!;
    for (const r of concurrent) {
      expect(r.body).toBe(original.body);
      expect(r.headers['request-id']).toBe(original.headers['request-id']);
      if (r !== original) expect(r.headers['idempotent-replayed']).toBe('true');
    }

    const sequential: HttpResponse[] = [];
    for (let i = 0; i < 4; i++) sequential.push(await postDecision(t.sandbox.api_key, body, key));
    expect(new Set(sequential.map(upstreamOf))).toEqual(new Set([0, 1]));
    for (const r of sequential) {
      expect(r.status).toBe(200);
      expect(r.headers['idempotent-replayed']).toBe('true');
      expect(r.body).toBe(original.body);
      expect(r.headers['request-id']).toBe(original.headers['request-id']);
    }

    const conflicts = [await postDecision(t.sandbox.api_key, bnplBody(softConsumer(t), '121.00'), key), await postDecision(t.sandbox.api_key, bnplBody(softConsumer(t), '121.00'), key)];
    expect(new Set(conflicts.map(upstreamOf))).toEqual(new Set([0, 1]));
    for (const r of conflicts) expectStableError(r, 409, 'idempotency_conflict');

    const decisionId = original.json<{ decision_id: string }>().decision_id;
    const decisions = await query<{ id: string }>('select id from decisions where tenant_id = $1', [t.tenant_id]);
    expect(decisions.map((d) => d.id)).toEqual([decisionId]);
    const keys = await query<{ n: number }>('select count(*)::int as n from idempotency_keys where tenant_id = $1', [t.tenant_id]);
    expect(keys[0]!.n).toBe(1);
  });

  it('rate limits hold across nodes: one key is one bucket, 429 with its headers at the burst', async () => {
    const t = tenants.limited;
    // The tenant's own rate, set before its key is ever used: 5/s, burst 10.
    await query('update tenants set rate_limit_sandbox_per_s = 5 where id = $1', [t.tenant_id]);
    const started = performance.now();
    const responses = await Promise.all(Array.from({ length: 24 }, () => viaLb('/v1/x', auth(t.sandbox.api_key))));
    const elapsedMs = performance.now() - started;
    const allowed = responses.filter((r) => r.status === 404);
    const refused = responses.filter((r) => r.status === 429);
    expect(allowed.length + refused.length, responses.map((r) => r.status).join(',')).toBe(24);
    // Two per-node buckets would allow 20; one shared bucket allows its burst of 10 plus what it
    // refills (5/s) while the burst is in flight.
    const refillAllowance = Math.floor((elapsedMs / 1000) * 5);
    expect(allowed.length, `burst took ${Math.round(elapsedMs)} ms`).toBeGreaterThanOrEqual(10);
    expect(allowed.length, `burst took ${Math.round(elapsedMs)} ms`).toBeLessThanOrEqual(10 + refillAllowance);
    if (refillAllowance === 0) {
      expect(allowed.map((r) => Number(r.headers['ratelimit-remaining'])).sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }
    // Both nodes took part in serving and in refusing.
    expect(new Set(responses.map(upstreamOf))).toEqual(new Set([0, 1]));
    expect(new Set(refused.map(upstreamOf))).toEqual(new Set([0, 1]));
    for (const r of allowed) expect(r.headers['ratelimit-limit']).toBe('10');
    for (const r of refused) {
      expectStableError(r, 429, 'rate_limited');
      expect(r.headers['ratelimit-limit']).toBe('10');
      expect(r.headers['ratelimit-remaining']).toBe('0');
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
  });

  it('key revocation holds across nodes: revoked through the portal on one node, refused by both on the next request', async () => {
    const jar = new Map<string, string>();
    let csrf = '';
    const portal = async (method: string, path: string, body?: unknown) => {
      const headers: Record<string, string> = {};
      if (jar.size > 0) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
      if (method !== 'GET') headers['x-csrf-token'] = csrf;
      if (body !== undefined) headers['content-type'] = 'application/json';
      const r = await viaLb(path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
      const setCookie = r.headers['set-cookie'] ?? [];
      for (const c of setCookie) {
        const [pair] = c.split(';');
        const eq = pair!.indexOf('=');
        jar.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
      }
      return r;
    };
    const anonymous = await portal('GET', '/portal/api/session');
    csrf = anonymous.json<{ csrf_token: string }>().csrf_token;
    const signup = await portal('POST', '/portal/api/signup', { company_name: 'Portal Lender', name: 'Ada Admin', email: `ada-${Date.now()}@portal-lender.example.com`, password: 'correct horse battery' });
    expect(signup.status, signup.body).toBe(201);
    const key = signup.json<{ sandbox_api_key: string; csrf_token: string }>().sandbox_api_key;
    csrf = signup.json<{ csrf_token: string }>().csrf_token;

    const before = [await viaLb('/v1/x', auth(key)), await viaLb('/v1/x', auth(key))];
    expect(before.map((r) => r.status)).toEqual([404, 404]);
    expect(new Set(before.map(upstreamOf))).toEqual(new Set([0, 1]));

    // The session made on one node is good on both.
    const lists = [await portal('GET', '/portal/api/api-keys?environment=sandbox'), await portal('GET', '/portal/api/api-keys?environment=sandbox')];
    expect(new Set(lists.map(upstreamOf))).toEqual(new Set([0, 1]));
    for (const l of lists) expect(l.status, l.body).toBe(200);
    const summary = lists[0]!.json<{ data: Array<{ id: string; last4: string }> }>().data.find((k) => k.last4 === key.slice(-4))!;
    expect(summary).toBeDefined();

    const revoke = await portal('POST', `/portal/api/api-keys/${summary.id}/revoke`);
    expect(revoke.status, revoke.body).toBe(200);
    expect(revoke.json<{ key: { status: string } }>().key.status).toBe('revoked');
    const revokedOn = upstreamOf(revoke);

    const after = [await viaLb('/v1/x', auth(key)), await viaLb('/v1/x', auth(key))];
    expect(new Set(after.map(upstreamOf))).toEqual(new Set([0, 1]));
    expect(after.some((r) => upstreamOf(r) !== revokedOn)).toBe(true);
    for (const r of after) expectStableError(r, 401, 'invalid_api_key');
  });

  it('webhook delivery holds across the workers: every event of every decision reaches the receiver exactly once, both workers sending', async () => {
    const t = tenants.webhook;
    const created = await runCli(['webhooks', 'create', '--tenant', t.tenant_id, '--env', 'sandbox', '--url', receiver.url('/multi'), '--events', '*', '--json'], env);
    expect(created.code, created.stderr).toBe(0);
    const endpointId = (JSON.parse(created.stdout) as { id: string }).id;
    // A receiver that takes 100 ms: one worker (4 sends at a time) cannot keep up alone.
    receiver.setMode('/multi', { kind: 'status', status: 200, delayMs: 100 });

    const acked = new Map<string, string>(); // decision id -> upstream
    for (let batch = 0; batch < WEBHOOK_DECISIONS; batch += 6) {
      const rs = await Promise.all(
        Array.from({ length: Math.min(6, WEBHOOK_DECISIONS - batch) }, (_, j) => postDecision(t.sandbox.api_key, bnplBody(softConsumer(t), `${50 + batch + j}.00`), `webhook-order-${batch + j}`)),
      );
      for (const r of rs) {
        expect(r.status, r.body).toBe(200);
        acked.set(r.json<{ decision_id: string }>().decision_id, String(upstreamOf(r)));
      }
    }
    expect(acked.size).toBe(WEBHOOK_DECISIONS);
    expect(new Set(acked.values())).toEqual(new Set(['0', '1']));

    // Every decision acknowledged is stored, and nothing else; each has exactly its four events.
    const decisions = await query<{ id: string }>('select id from decisions where tenant_id = $1', [t.tenant_id]);
    expect(new Set(decisions.map((d) => d.id))).toEqual(new Set(acked.keys()));
    const events = await query<{ id: string; type: string; subject_id: string }>("select id, type, subject_id from events where tenant_id = $1 and environment = 'sandbox'", [t.tenant_id]);
    const typesByDecision = new Map<string, string[]>();
    for (const e of events) typesByDecision.set(e.subject_id, [...(typesByDecision.get(e.subject_id) ?? []), e.type]);
    expect(new Set(typesByDecision.keys())).toEqual(new Set(acked.keys()));
    for (const types of typesByDecision.values()) expect(types.sort()).toEqual(EVENTS_PER_SOFT_APPROVAL);
    const eventIds = new Set(events.map((e) => e.id));
    expect(eventIds.size).toBe(WEBHOOK_DECISIONS * EVENTS_PER_SOFT_APPROVAL.length);

    const eventIdOf = (r: ReceivedWebhook) => (JSON.parse(r.body) as { id: string }).id;
    await receiver.waitFor((reqs) => new Set(reqs.filter((r) => r.path === '/multi').map(eventIdOf)).size === eventIds.size, 60_000);
    // Results are recorded after the answer: wait until every delivery row says so.
    await pollUntil(
      async () => {
        const rows = await query<{ n: number }>("select count(*)::int as n from webhook_deliveries where endpoint_id = $1 and state = 'delivered'", [endpointId]);
        return rows[0]!.n === eventIds.size;
      },
      { timeoutMs: 30_000 },
    );

    // The workers stop gracefully and say what each did.
    const stats = await Promise.all(
      workers.map(async (w) => {
        const exit = await w.stop();
        expect(exit.code, w.stderrText()).toBe(0);
        const line = w.logs().find((l) => l.msg === 'workers stopped');
        expect(line, w.stderrText()).toBeDefined();
        return line!.webhookDelivery as { attempts: number; delivered: number; failed: number; leasesLost: number };
      }),
    );

    const received = receiver.requestsTo('/multi');
    // No event lost, none twice (no worker died, so at-least-once came out as exactly once).
    expect(received).toHaveLength(eventIds.size);
    expect(new Set(received.map(eventIdOf))).toEqual(eventIds);
    const byId = new Map(events.map((e) => [e.id, e]));
    for (const r of received) {
      const envelope = JSON.parse(r.body) as { id: string; type: string; data: { decision_id: string } };
      expect(r.headers['svc-webhook-type']).toBe(byId.get(envelope.id)!.type);
      expect(envelope.data.decision_id).toBe(byId.get(envelope.id)!.subject_id);
    }
    const deliveries = await query<{ event_id: string; state: string; attempts: number }>('select event_id, state, attempts from webhook_deliveries where endpoint_id = $1', [endpointId]);
    expect(deliveries).toHaveLength(eventIds.size);
    expect(new Set(deliveries.map((d) => d.event_id))).toEqual(eventIds);
    for (const d of deliveries) expect([d.state, d.attempts]).toEqual(['delivered', 1]);
    const attempts = await query<{ response_status: number | null; error_kind: string | null }>('select response_status, error_kind from webhook_attempts where endpoint_id = $1', [endpointId]);
    expect(attempts).toHaveLength(eventIds.size);
    for (const a of attempts) expect([a.response_status, a.error_kind]).toEqual([200, null]);

    // Both workers sent, between them every delivery exactly once; never more than the endpoint's
    // cap (8) in flight across both, which one worker alone (4) could not have reached above 4.
    expect(stats.map((s) => s.attempts).reduce((a, b) => a + b)).toBe(eventIds.size);
    for (const s of stats) {
      expect(s.attempts, JSON.stringify(stats)).toBeGreaterThan(0);
      expect(s.failed).toBe(0);
      expect(s.leasesLost).toBe(0);
    }
    expect(receiver.maxConcurrent('/multi')).toBeLessThanOrEqual(8);
  }, 120_000);

  it('kill -9 of one API node under load: traffic continues on the other, nothing acknowledged is lost, retries replay', async () => {
    const t = tenants.failover;
    const total = 40;
    const decisionOf = new Map<number, string>();
    let nextIndex = 0;
    let killSeq: number | null = null;
    let failedAttempts = 0;

    // Eight clients; each retries its request under the same Idempotency-Key until it is answered 200.
    const client = async () => {
      for (;;) {
        const i = nextIndex++;
        if (i >= total) return;
        for (let attempt = 1; ; attempt++) {
          const r = await postDecision(t.sandbox.api_key, bnplBody(softConsumer(t), `${100 + i}.00`), `failover-order-${i}`).catch(() => null);
          if (r?.status === 200) {
            decisionOf.set(i, r.json<{ decision_id: string }>().decision_id);
            break;
          }
          failedAttempts += 1;
          expect(attempt, r?.body).toBeLessThan(10);
        }
        if (decisionOf.size >= 12 && killSeq === null) {
          killSeq = -1;
          await apis[1]!.kill9();
          killSeq = lb.routed.length;
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, client));

    expect(killSeq).toBeGreaterThan(0);
    expect(apis[1]!.isRunning()).toBe(false);
    expect(apis[0]!.isRunning()).toBe(true);
    const afterKill = lb.routed.slice(killSeq!);
    // Requests kept coming after the kill and were served by the survivor; its turn's requests were
    // refused by the dead node's port and passed on. A 502 is a request the dead node had in flight.
    expect(afterKill.filter((r) => r.backend === 0 && r.status === 200).length).toBeGreaterThan(0);
    expect(afterKill.some((r) => r.refusedBy.includes(1))).toBe(true);
    for (const r of afterKill) expect(r.backend === 0 || r.status === 502, JSON.stringify(r)).toBe(true);
    // Some requests failed (the dead node's in-flight ones) or none did, if the kill fell between
    // requests; either way the clients retried them and the checks below hold.
    expect(failedAttempts).toBeGreaterThanOrEqual(lb.routed.filter((r) => r.status === 502).length);

    // Every request acknowledged, each once: the database holds exactly those decisions.
    expect(decisionOf.size).toBe(total);
    const ids = new Set(decisionOf.values());
    expect(ids.size).toBe(total);
    const stored = await query<{ id: string }>('select id from decisions where tenant_id = $1', [t.tenant_id]);
    expect(new Set(stored.map((d) => d.id))).toEqual(ids);

    // And every key, sent again, replays its decision from the surviving node.
    for (let i = 0; i < total; i++) {
      const r = await postDecision(t.sandbox.api_key, bnplBody(softConsumer(t), `${100 + i}.00`), `failover-order-${i}`);
      expect(r.status, r.body).toBe(200);
      expect(r.headers['idempotent-replayed']).toBe('true');
      expect(r.json<{ decision_id: string }>().decision_id).toBe(decisionOf.get(i));
      expect(upstreamOf(r)).toBe(0);
    }
    expect((await viaLb('/readyz')).status).toBe(200);
  }, 120_000);
});
