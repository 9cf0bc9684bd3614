/**
 * The delivery worker loses its database while sends are in flight (PostgreSQL through a TCP proxy
 * that the test cuts and restores; a real HTTPS receiver on loopback; the clock never moves).
 *
 * A running worker keeps the results it could not write and writes them once the database is back:
 * every delivery ends `delivered` with one attempt, the receiver sees each event once, and nothing
 * waits for the lease to pass (the clock is frozen, so a lease never would). A stopping worker gives
 * up on what it cannot write, so stop() returns, and those rows stay leased to be claimed again.
 * A cycle whose COMMIT happened but whose answer was lost (ADR 0026) is made good by the next one:
 * a claim is undone, results are recorded once.
 */
import type { Kysely } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openStorage, type PipelinedPool, type Storage } from '../../../src/db/database.js';
import type { Database } from '../../../src/db/schema.js';
import { ManualClock } from '../../../src/lib/clock.js';
import { claimAheadFactor, createDeliveryWorker, type DeliveryWorker } from '../../../src/modules/webhooks/delivery-worker.js';
import type { WebhookScope } from '../../../src/modules/webhooks/webhooks.service.js';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';
import { pollUntil, startTcpProxy, type TcpProxy } from '../../support/server-process.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';

/** The workers' send time-out and lease in this suite. */
const LEASE = { timeoutMs: 5_000, leaseMs: 30_000 };
import { endpointWithEvents } from '../../support/webhook-events.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

describe.skipIf(!(await isPostgresReachable()))('delivery worker across a database outage [postgres]', () => {
  let db: TestDatabase;
  let t: TestApp;
  let receiver: WebhookReceiver;
  let proxy: TcpProxy;
  let viaProxy: Storage;
  let store: Kysely<Database>;
  let scope: WebhookScope;
  let worker: DeliveryWorker | null = null;
  const clock = new ManualClock('2026-03-03T09:00:00.000Z');

  beforeAll(async () => {
    [db, receiver] = await Promise.all([createTestDatabase('postgres'), startWebhookReceiver()]);
    t = await createTestApp(db, { clock });
    store = t.ctx.storage.db;
    scope = { tenantId: t.tenant.tenantId, environment: 'sandbox' };
    const direct = new URL(db.databaseUrl!);
    proxy = await startTcpProxy(Number(direct.port || 5432), direct.hostname);
    const proxied = new URL(direct);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    viaProxy = openStorage({ databaseUrl: proxied.toString(), dataDir: db.dataDir, poolSize: 3 });
  });
  afterEach(async () => {
    proxy.restore();
    await worker?.stop();
    worker = null;
    receiver.clear();
    receiver.setMode('*', 200);
  });
  afterAll(async () => {
    await viaProxy?.close();
    await proxy?.close();
    await t?.close();
    await db?.drop();
    await receiver?.stop();
  });

  function startWorker(pipelined: PipelinedPool = viaProxy.pipelined!): DeliveryWorker {
    const ctx = t.ctx;
    worker = createDeliveryWorker(
      { db: viaProxy.db, dialect: 'postgres', pipelined, clock, random: ctx.random, secretBox: ctx.secretBox, logger: ctx.logger },
      { ca: receiver.ca, allowPrivateNetworks: true, ...LEASE, pollIntervalMs: 50 },
    );
    return worker;
  }

  /** An endpoint whose receiver holds each request `delayMs` before answering 200, and `count` events for it. */
  async function slowEndpointWithEvents(path: string, count: number, delayMs: number): Promise<{ endpointId: string; eventIds: string[] }> {
    receiver.setMode(path, { kind: 'status', status: 200, body: '{"received":true}', delayMs });
    return endpointWithEvents(t, scope, receiver.url(path), count, `outage ${path}`);
  }

  const deliveriesOf = (endpointId: string) =>
    store.selectFrom('webhook_deliveries').select(['id', 'state', 'attempts', 'lease_token', 'leased_until']).where('endpoint_id', '=', endpointId).execute();
  const attemptsOf = (endpointId: string) => store.selectFrom('webhook_attempts').select(['delivery_id', 'attempt']).where('endpoint_id', '=', endpointId).execute();
  const failedWrites = () => t.logs.lines.filter((l) => l.includes('webhook delivery cycle failed; will retry')).length;

  it('a running worker writes the results it could not write once the database is back: each event received once, all delivered, no lease waited out', async () => {
    const { endpointId, eventIds } = await slowEndpointWithEvents('/slow-running', 5, 400);
    const w = startWorker();
    w.start();
    // All five in flight at the receiver, then the database goes away before any answer comes back.
    await receiver.waitFor((requests) => requests.filter((r) => r.path === '/slow-running').length === 5, 10_000);
    const failuresBefore = failedWrites();
    proxy.cut('reset');
    // The sends finish and their results fail to be written (the worker says so and retries).
    await pollUntil(async () => w.inFlight() === 0 && failedWrites() > failuresBefore, { timeoutMs: 15_000, intervalMs: 20 });
    expect((await deliveriesOf(endpointId)).every((d) => d.state === 'pending' && d.lease_token !== null), 'still leased while the database is away').toBe(true);
    proxy.restore();

    const delivered = await pollUntil(
      async () => {
        const rows = await deliveriesOf(endpointId);
        return rows.length === 5 && rows.every((d) => d.state === 'delivered') ? rows : null;
      },
      { timeoutMs: 15_000, intervalMs: 50, describe: () => t.logs.text.slice(-3_000) },
    );
    // The rows read delivered once the COMMIT is durable, which can be before the worker has its
    // answer and counts the results: stop() waits for that cycle, so the counts below are whole.
    await w.stop();
    worker = null;
    expect(delivered.map((d) => [d.attempts, d.lease_token, d.leased_until])).toEqual(Array(5).fill([1, null, null]));
    const attempts = await attemptsOf(endpointId);
    expect(attempts.map((a) => a.attempt)).toEqual([1, 1, 1, 1, 1]);
    expect(new Set(attempts.map((a) => a.delivery_id)).size).toBe(5);
    const received = receiver.requestsTo('/slow-running').map((r) => (JSON.parse(r.body) as { id: string }).id);
    expect(received.sort()).toEqual([...eventIds].sort());
    expect(w.stats()).toMatchObject({ attempts: 5, delivered: 5, leasesLost: 0 });
  }, 60_000);

  it('a stopping worker gives up on results it cannot write: stop() returns, and the rows stay leased for another claim', async () => {
    const { endpointId } = await slowEndpointWithEvents('/slow-stopping', 3, 400);
    const w = startWorker();
    w.start();
    await receiver.waitFor((requests) => requests.filter((r) => r.path === '/slow-stopping').length === 3, 10_000);
    proxy.cut('reset');
    await w.stop();
    worker = null;
    expect(w.inFlight()).toBe(0);
    const rows = await deliveriesOf(endpointId);
    expect(rows.map((d) => [d.state, d.attempts, d.lease_token !== null])).toEqual(Array(3).fill(['pending', 0, true]));
    expect(t.logs.lines.filter((l) => l.includes('webhook result could not be recorded')).length).toBeGreaterThanOrEqual(3);
  }, 60_000);

  it('a claim whose COMMIT lands but whose answer is lost (the connection cut right after) is undone by the next cycle: no lease or count waited out', async () => {
    // More events than a worker may hold at the endpoint (the cap of 8 times the claim-ahead factor:
    // ADR 0031): the lost claim takes all it may.
    const mayHold = claimAheadFactor({ claimAhead: true, ...LEASE }) * 8;
    const events = mayHold + 4;
    const { endpointId, eventIds } = await endpointWithEvents(t, scope, receiver.url('/lost-commit'), events, 'lost commit');
    let loseNextCommit = true;
    // The storage's pipelined pool, but the first COMMIT is answered and then reported lost, as when
    // the connection drops between the server's commit and its answer reaching us.
    const losing: PipelinedPool = {
      connect: async () => {
        const inner = await viaProxy.pipelined!.connect();
        return {
          query: async <R>(text: string, values?: readonly unknown[]) => {
            const answer = await inner.query<R>(text, values);
            if (text === 'commit' && loseNextCommit) {
              loseNextCommit = false;
              throw new Error('Connection terminated unexpectedly');
            }
            return answer;
          },
          corked: (send: () => void) => inner.corked(send),
          release: (destroy?: boolean) => inner.release(destroy),
        };
      },
    };
    const w = startWorker(losing);
    expect(await w.tick()).toBe(0); // the claim committed, but the worker was told it failed
    await w.settle();
    expect(loseNextCommit).toBe(false);
    expect(receiver.requestsTo('/lost-commit')).toHaveLength(0);
    const leased = (await deliveriesOf(endpointId)).filter((d) => d.lease_token !== null);
    expect(leased.length, 'the lost claim committed').toBe(mayHold);

    // The clock never moves: neither the leases nor the stored count of the lost claim expire.
    // (The suite's earlier endpoints are subscribed to every event too: the count is theirs as well.)
    expect(await w.deliverDue()).toBeGreaterThanOrEqual(events);
    expect(t.logs.lines.filter((l) => l.includes('webhook claim whose commit was in doubt undone')).length).toBe(1);
    const received = receiver.requestsTo('/lost-commit').map((r) => (JSON.parse(r.body) as { id: string }).id);
    expect(received.sort()).toEqual([...eventIds].sort());
    const rows = await deliveriesOf(endpointId);
    expect(rows.map((d) => [d.state, d.attempts, d.lease_token])).toEqual(Array(events).fill(['delivered', 1, null]));
    const counts = await store.selectFrom('webhook_in_flight').select(['sends']).where('endpoint_id', '=', endpointId).execute();
    expect(counts.map((c) => Number(c.sends))).toEqual([0]);
  }, 60_000);

  it('results whose COMMIT lands but whose answer is lost are written again without harm: one attempt each, nothing left leased, no error', async () => {
    const { endpointId, eventIds } = await endpointWithEvents(t, scope, receiver.url('/lost-results'), 3, 'lost results');
    let armed = false;
    let lost = 0;
    const losing: PipelinedPool = {
      connect: async () => {
        const inner = await viaProxy.pipelined!.connect();
        let wrote = false;
        return {
          query: async <R>(text: string, values?: readonly unknown[]) => {
            const answer = await inner.query<R>(text, values);
            // The first COMMIT behind a results statement: that cycle's results are in doubt.
            if (text.includes('insert into webhook_attempts')) wrote = true;
            if (text === 'commit' && armed && wrote && lost === 0) {
              lost += 1;
              throw new Error('Connection terminated unexpectedly');
            }
            return answer;
          },
          corked: (send: () => void) => inner.corked(send),
          release: (destroy?: boolean) => inner.release(destroy),
        };
      },
    };
    const logsBefore = t.logs.lines.length;
    const w = startWorker(losing);
    armed = true;
    w.start();
    await pollUntil(
      async () => {
        const rows = await deliveriesOf(endpointId);
        return lost === 1 && w.inFlight() === 0 && rows.every((d) => d.state === 'delivered' && d.lease_token === null) ? rows : null;
      },
      { timeoutMs: 15_000, intervalMs: 50, describe: () => t.logs.text.slice(-3_000) },
    );
    await w.stop();
    worker = null;
    const attempts = await attemptsOf(endpointId);
    expect(attempts.map((a) => a.attempt)).toEqual([1, 1, 1]);
    const received = receiver.requestsTo('/lost-results').map((r) => (JSON.parse(r.body) as { id: string }).id);
    expect(received.sort()).toEqual([...eventIds].sort());
    const logged = t.logs.lines.slice(logsBefore);
    expect(logged.filter((l) => l.includes('"level":50') || l.includes('lease was lost')), 'errors, or lost leases reported').toEqual([]);
    // (Every endpoint of the suite is subscribed to these events: the worker delivered to all of them.)
    const stats = w.stats();
    expect(stats).toMatchObject({ leasesLost: 0, failed: 0 });
    expect(stats.delivered).toBe(stats.attempts);
  }, 60_000);
});
