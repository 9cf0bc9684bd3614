/**
 * Webhook delivery across real processes (compiled code; `npm run build` first, as `npm test` does):
 * - `cds webhooks create` registers an endpoint; `cds serve` trusts the receiver's CA through
 *   NODE_EXTRA_CA_CERTS and delivers a decision's events, which Stripe's verifier accepts;
 * - a worker process is SIGKILLed mid-batch and, after a new worker starts, every event arrives
 *   (the dead worker's leases expire), with duplicates only for what was in flight;
 * - two worker processes on one PostgreSQL share the work and deliver each event exactly once.
 * Worker processes here are small drivers around the real context and delivery worker, started
 * with a short lease so the test does not wait out the production one (60 s).
 */
import type { Kysely } from 'kysely';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContext, type AppContext } from '../../../src/app/context.js';
import { migrateToLatest } from '../../../src/db/database.js';
import type { Database } from '../../../src/db/schema.js';
import { createLogger } from '../../../src/lib/logger.js';
import type { NewEvent } from '../../../src/modules/events/outbox.js';
import type { WebhookScope } from '../../../src/modules/webhooks/webhooks.service.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import {
  cleanupProcesses, databaseEnv, DIST_URL, pollUntil, runCli, startNodeScript, startServer, type ChildEnv, type RunningCli,
} from '../../support/server-process.js';
import { testConfig } from '../../support/test-app.js';
import { startWebhookReceiver, writeCaFile, type ReceivedWebhook, type WebhookReceiver } from '../../support/webhook-receiver.js';

afterAll(cleanupProcesses);

const stripeSignature = Stripe.webhooks.signature!;

/** A worker process: the real context and delivery loop with the given knobs; prints its stats on SIGTERM. */
function workerSource(options: Record<string, unknown>): string {
  return `
const { loadConfig } = await import(${JSON.stringify(`${DIST_URL}config/config.js`)});
const { createContext } = await import(${JSON.stringify(`${DIST_URL}app/context.js`)});
const ctx = createContext(loadConfig(process.env), { webhookDelivery: ${JSON.stringify(options)} });
ctx.webhookDelivery.start();
process.stdout.write(JSON.stringify({ ready: true }) + '\\n');
process.once('SIGTERM', async () => {
  await ctx.webhookDelivery.stop();
  process.stdout.write(JSON.stringify({ stats: ctx.webhookDelivery.stats() }) + '\\n');
  await ctx.close();
  process.exit(0);
});
`;
}

interface WorkerProcess extends RunningCli {
  /** SIGTERM, wait, return the stats it printed. */
  stop(): Promise<{ attempts: number; delivered: number; failed: number; leasesLost: number }>;
}

async function startWorker(env: ChildEnv, options: Record<string, unknown>): Promise<WorkerProcess> {
  const running = startNodeScript(workerSource(options), { LOG_LEVEL: 'warn', WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1', ...env }, { timeoutMs: 90_000 });
  await pollUntil(async () => running.stdoutLines.some((l) => l.includes('"ready"')), {
    timeoutMs: 15_000,
    describe: () => `worker did not start: ${running.stdoutLines.join('\n')}`,
  }).catch(async (err: unknown) => {
    const r = await running.kill9();
    throw new Error(`${String(err)}\n${r.stderr}`);
  });
  return {
    ...running,
    async stop() {
      running.child.kill('SIGTERM');
      const result = await running.result;
      const line = result.stdout.split('\n').find((l) => l.includes('"stats"'));
      if (!line) throw new Error(`worker printed no stats (code ${result.code}, signal ${result.signal}): ${result.stderr}`);
      return (JSON.parse(line) as { stats: { attempts: number; delivered: number; failed: number; leasesLost: number } }).stats;
    },
  };
}

/** A context in this process on the test database (to create endpoints, append events and inspect). */
async function openContext(db: TestDatabase): Promise<AppContext> {
  const ctx = createContext(testConfig(db), { logger: createLogger('silent') });
  await migrateToLatest(ctx.storage.db);
  return ctx;
}

async function appendEvents(store: Kysely<Database>, ctx: AppContext, scope: WebhookScope, count: number): Promise<string[]> {
  const events: NewEvent[] = Array.from({ length: count }, (_, i) => ({ type: 'decision.created', subjectId: null, data: { decision_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, status: 'complete' } }));
  const stored = await store.transaction().execute((trx) => ctx.outbox.append(trx, scope, events));
  return stored.map((e) => e.id);
}

const eventIdOf = (r: ReceivedWebhook) => (JSON.parse(r.body) as { id: string }).id;

describe.each(await dialectMatrix())('webhooks across processes [%s]', (dialect) => {
  let db: TestDatabase;
  let receiver: WebhookReceiver;
  let caFile: string;
  let env: ChildEnv;

  beforeAll(async () => {
    [db, receiver, caFile] = await Promise.all([createTestDatabase(dialect), startWebhookReceiver(), writeCaFile()]);
    env = { ...databaseEnv(db), NODE_EXTRA_CA_CERTS: caFile };
  });
  afterAll(async () => {
    await receiver?.stop();
    await db?.drop();
  });

  it('cds webhooks create + cds serve: a decision\'s events reach the receiver, trusted via NODE_EXTRA_CA_CERTS, signed as Stripe verifies', async () => {
    const tenantRun = await runCli(['tenants', 'create', '--name', 'Webhook Lender', '--json'], databaseEnv(db));
    expect(tenantRun.code, tenantRun.stderr).toBe(0);
    const tenant = JSON.parse(tenantRun.stdout) as { tenant_id: string; sandbox: { api_key: string; consumers: Array<{ consumer_id: string; tier: string }> } };

    const created = await runCli(['webhooks', 'create', '--tenant', tenant.tenant_id, '--env', 'sandbox', '--url', receiver.url('/cli'), '--events', '*', '--json'], { ...env, WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1' });
    expect(created.code, created.stderr).toBe(0);
    const lines = created.stdout.split('\n').filter((l) => l.trim() !== '');
    expect(lines).toHaveLength(1);
    const out = JSON.parse(lines[0]!) as { id: string; secret: string };
    expect(Object.keys(out).sort()).toEqual(['id', 'secret']);
    expect(out.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(out.secret).toMatch(/^whsec_/);

    // Refusals: plain HTTP, an unknown event type, an unknown tenant, a loopback URL without the opt-in.
    const refusals = await Promise.all([
      runCli(['webhooks', 'create', '--tenant', tenant.tenant_id, '--env', 'sandbox', '--url', receiver.url('/x').replace('https:', 'http:'), '--json'], { ...env, WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1' }),
      runCli(['webhooks', 'create', '--tenant', tenant.tenant_id, '--env', 'sandbox', '--url', receiver.url('/x'), '--events', 'decision.finalized,nope', '--json'], { ...env, WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1' }),
      runCli(['webhooks', 'create', '--tenant', '5d1c1a3e-0000-4000-8000-000000000000', '--env', 'sandbox', '--url', receiver.url('/x'), '--json'], { ...env, WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1' }),
      runCli(['webhooks', 'create', '--tenant', tenant.tenant_id, '--env', 'sandbox', '--url', receiver.url('/x'), '--json'], env),
      runCli(['webhooks', 'create', '--tenant', tenant.tenant_id, '--env', 'staging', '--url', receiver.url('/x'), '--json'], env),
    ]);
    expect(refusals.map((r) => r.code)).toEqual([65, 65, 65, 65, 64]);
    expect(refusals.map((r) => r.stdout)).toEqual(['', '', '', '', '']);
    expect(refusals[0]!.stderr).toMatch(/https/);
    expect(refusals[1]!.stderr).toMatch(/unknown event type "nope"/);
    expect(refusals[2]!.stderr).toMatch(/no tenant/);
    expect(refusals[3]!.stderr).toMatch(/loopback/);

    const server = await startServer({ env: { ...env, WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1' } });
    try {
      const soft = tenant.sandbox.consumers.find((c) => c.tier === 'soft')!.consumer_id;
      const r = await server.request('/v1/decisions/bnpl', {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.sandbox.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ consumer: { consumer_id: soft }, transaction: { amount: '99.00', currency: 'USD', merchant_name: 'Acme', merchant_category: 'electronics' } }),
      });
      expect(r.status, r.body).toBe(200);
      await receiver.waitFor((reqs) => reqs.filter((q) => q.path === '/cli').length >= 4, 15_000);
      const got = receiver.requestsTo('/cli');
      expect(got.map((q) => q.headers['svc-webhook-type']).sort()).toEqual(['application.created', 'decision.created', 'decision.finalized', 'score.completed']);
      for (const q of got) {
        expect(() => stripeSignature.verifyHeader(q.body, q.headers['svc-signature']!, out.secret, 300)).not.toThrow();
        expect(q.headers['user-agent']).toBe('Svc-Webhooks/1.0');
      }
    } finally {
      await server.stop();
    }
  }, 120_000); // two CLI processes and a server start: slow on a loaded machine, never timed

  it('kill -9 of a worker mid-batch: after a new worker starts, every event arrives (at least once)', async () => {
    const ctx = await openContext(db);
    try {
      const store = ctx.storage.db;
      const t = await ctx.tenants.createTenant({ name: 'Crash Lender' });
      const scope: WebhookScope = { tenantId: t.tenantId, environment: 'sandbox' };
      const { endpoint } = await ctx.webhooks.createEndpoint(scope, { url: receiver.url('/k9') });
      receiver.setMode('/k9', { kind: 'status', status: 200, delayMs: 60 });
      const eventIds = await appendEvents(store, ctx, scope, 120);

      const options = { leaseMs: 1_500, timeoutMs: 1_000, pollIntervalMs: 50, perEndpointConcurrency: 8 };
      const first = await startWorker(env, options);
      await receiver.waitFor((reqs) => reqs.filter((r) => r.path === '/k9').length >= 30, 20_000);
      await first.kill9();
      const killedAt = Date.now();
      const receivedBeforeKill = receiver.requestsTo('/k9').length;
      const leased = await store.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', endpoint.id).where('state', '=', 'pending').where('lease_token', 'is not', null).execute();
      // It died holding leases: those sends were in flight (or just answered but never recorded).
      expect(leased.length).toBeGreaterThan(0);
      expect(receivedBeforeKill).toBeLessThan(120);

      const second = await startWorker(env, options);
      await receiver.waitFor((reqs) => new Set(reqs.filter((r) => r.path === '/k9').map(eventIdOf)).size === 120, 30_000);
      await pollUntil(
        async () => {
          const rows = await store.selectFrom('webhook_deliveries').select('state').where('endpoint_id', '=', endpoint.id).execute();
          return rows.length === 120 && rows.every((r) => r.state === 'delivered');
        },
        { timeoutMs: 15_000 },
      );
      const stats = await second.stop();
      expect(stats.failed).toBe(0);

      const got = receiver.requestsTo('/k9');
      expect(new Set(got.map(eventIdOf))).toEqual(new Set(eventIds));
      // Duplicates only for what the dead worker held; they came after its leases ran out.
      const duplicates = got.length - 120;
      expect(duplicates).toBeLessThanOrEqual(leased.length);
      const seen = new Set<string>();
      for (const r of got) {
        const id = eventIdOf(r);
        if (seen.has(id)) expect(r.receivedAt).toBeGreaterThanOrEqual(killedAt);
        seen.add(id);
      }
    } finally {
      await ctx.close();
    }
  });

  it.skipIf(dialect !== 'postgres')('the per-endpoint concurrency cap holds across worker processes', async () => {
    const ctx = await openContext(db);
    try {
      const t = await ctx.tenants.createTenant({ name: 'Capped Lender' });
      const scope: WebhookScope = { tenantId: t.tenantId, environment: 'sandbox' };
      const { endpoint } = await ctx.webhooks.createEndpoint(scope, { url: receiver.url('/capped') });
      receiver.setMode('/capped', { kind: 'status', status: 200, delayMs: 40 });
      const options = { leaseMs: 30_000, timeoutMs: 5_000, pollIntervalMs: 10, concurrency: 16, perEndpointConcurrency: 3 };
      const workers = await Promise.all([startWorker(env, options), startWorker(env, options)]);
      await appendEvents(ctx.storage.db, ctx, scope, 60);
      await pollUntil(
        async () => {
          const rows = await ctx.storage.db.selectFrom('webhook_deliveries').select('state').where('endpoint_id', '=', endpoint.id).execute();
          return rows.length === 60 && rows.every((r) => r.state === 'delivered');
        },
        { timeoutMs: 20_000 },
      );
      await Promise.all(workers.map((w) => w.stop()));
      expect(receiver.requestsTo('/capped')).toHaveLength(60);
      expect(receiver.maxConcurrent('/capped')).toBeLessThanOrEqual(3);
      expect(receiver.maxConcurrent('/capped')).toBeGreaterThanOrEqual(2);
    } finally {
      await ctx.close();
    }
  });

  it.skipIf(dialect !== 'postgres')('two worker processes on one PostgreSQL share the work and deliver each event exactly once', async () => {
    const ctx = await openContext(db);
    try {
      const store = ctx.storage.db;
      const t = await ctx.tenants.createTenant({ name: 'Busy Lender' });
      const scope: WebhookScope = { tenantId: t.tenantId, environment: 'sandbox' };
      const a = await ctx.webhooks.createEndpoint(scope, { url: receiver.url('/pair-a') });
      const b = await ctx.webhooks.createEndpoint(scope, { url: receiver.url('/pair-b') });
      receiver.setMode('/pair-a', { kind: 'status', status: 200, delayMs: 15 });
      receiver.setMode('/pair-b', { kind: 'status', status: 204, delayMs: 15 });
      // Each worker holds at most 8 sends; the endpoints allow 16 each, so neither worker can take all the work.
      const options = { leaseMs: 30_000, timeoutMs: 5_000, pollIntervalMs: 20, concurrency: 8, perEndpointConcurrency: 16 };
      const workers = await Promise.all([startWorker(env, options), startWorker(env, options)]);
      const eventIds = await appendEvents(store, ctx, scope, 150);
      await receiver.waitFor((reqs) => reqs.filter((r) => r.path.startsWith('/pair-')).length >= 300, 30_000);
      await pollUntil(
        async () => {
          const rows = await store.selectFrom('webhook_deliveries').select('state').where('endpoint_id', 'in', [a.endpoint.id, b.endpoint.id]).execute();
          return rows.length === 300 && rows.every((r) => r.state === 'delivered');
        },
        { timeoutMs: 15_000 },
      );
      const stats = await Promise.all(workers.map((w) => w.stop()));
      for (const path of ['/pair-a', '/pair-b']) {
        const ids = receiver.requestsTo(path).map(eventIdOf);
        expect(ids).toHaveLength(150);
        expect(new Set(ids)).toEqual(new Set(eventIds));
      }
      expect(stats.map((s) => s.attempts).reduce((x, y) => x + y)).toBe(300);
      expect(stats.every((s) => s.attempts > 0 && s.leasesLost === 0)).toBe(true);
      expect(receiver.maxConcurrent('/pair-a')).toBeLessThanOrEqual(16);
      expect(receiver.maxConcurrent('/pair-b')).toBeLessThanOrEqual(16);
    } finally {
      await ctx.close();
    }
  });
});
