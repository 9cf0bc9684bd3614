/**
 * PostgreSQL: the delivery worker's cycles on pipelined connections (ADR 0023). A real PostgreSQL,
 * a real HTTPS receiver on loopback; the storage's pipelined pool is wrapped to record every
 * statement a cycle sends and how many answers its connection had received when it went out, so
 * the round trips can be counted: statements sent before any new answer arrived share one.
 *
 * What must hold: the BEGIN goes out with the first statement and the COMMIT with the claim (a
 * cycle that records and claims is two round trips), and a statement that fails takes the whole
 * cycle with it: the COMMIT sent behind it answers ROLLBACK, nothing of the cycle stays written,
 * and the connection serves the next cycles.
 */
import type { Kysely } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PipelinedPool } from '../../../src/db/database.js';
import type { Database } from '../../../src/db/schema.js';
import { ManualClock } from '../../../src/lib/clock.js';
import { createDeliveryWorker, type DeliveryWorker, type DeliveryWorkerOptions } from '../../../src/modules/webhooks/delivery-worker.js';
import type { WebhookScope } from '../../../src/modules/webhooks/webhooks.service.js';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';
import { pollUntil } from '../../support/server-process.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';
import { endpointWithEvents } from '../../support/webhook-events.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

type Kind = 'begin' | 'commit' | 'rollback' | 'results' | 'claim' | 'listing' | 'other';

interface Sent {
  kind: Kind;
  /** Answers this connection had received when the statement went out. */
  answered: number;
  /** The command tag of its answer (COMMIT, ROLLBACK, ...), or 'failed'. */
  outcome?: string;
}

function kindOf(text: string): Kind {
  if (text.startsWith('begin')) return 'begin';
  if (text === 'commit') return 'commit';
  if (text === 'rollback') return 'rollback';
  if (text.includes('insert into webhook_attempts')) return 'results';
  if (text.includes('skip locked')) return 'claim';
  if (text.includes('pg_try_advisory_xact_lock') || text.includes('in_flight')) return 'listing';
  return 'other';
}

/** Each transaction (from its BEGIN) as its round trips, each the kinds that went out together. */
function roundTrips(sent: Sent[]): Kind[][][] {
  const transactions: Sent[][] = [];
  for (const s of sent) {
    if (s.kind === 'begin' || transactions.length === 0) transactions.push([]);
    transactions[transactions.length - 1]!.push(s);
  }
  return transactions.map((tx) => {
    const trips: Kind[][] = [];
    let last = -1;
    for (const s of tx) {
      if (s.answered !== last) trips.push([]);
      last = s.answered;
      trips[trips.length - 1]!.push(s.kind);
    }
    return trips;
  });
}

describe.skipIf(!(await isPostgresReachable()))('delivery worker cycles on a pipelined connection [postgres]', () => {
  let db: TestDatabase;
  let t: TestApp;
  let receiver: WebhookReceiver;
  let store: Kysely<Database>;
  let scope: WebhookScope;
  let worker: DeliveryWorker | null = null;
  const clock = new ManualClock('2026-04-04T09:00:00.000Z');

  beforeAll(async () => {
    [db, receiver] = await Promise.all([createTestDatabase('postgres'), startWebhookReceiver()]);
    t = await createTestApp(db, { clock });
    store = t.ctx.storage.db;
    scope = { tenantId: t.tenant.tenantId, environment: 'sandbox' };
  });
  afterEach(async () => {
    await worker?.stop();
    worker = null;
    // Each test's events for its own endpoint only (a disabled endpoint gets no deliveries).
    await store.updateTable('webhook_endpoints').set({ state: 'disabled' }).execute();
    receiver.clear();
    receiver.setMode('*', 200);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await receiver?.stop();
  });

  /** The storage's pipelined pool, recording; `rewrite` may swap a statement's text before it goes out. */
  function recordingPool(rewrite: (text: string, kind: Kind) => string = (text) => text): { pool: PipelinedPool; sent: Sent[] } {
    const sent: Sent[] = [];
    const pool: PipelinedPool = {
      connect: async () => {
        const connection = await t.ctx.storage.pipelined!.connect();
        let answered = 0;
        return {
          query: <R>(text: string, values?: readonly unknown[]) => {
            const entry: Sent = { kind: kindOf(text), answered };
            sent.push(entry);
            const answer = connection.query<R>(rewrite(text, entry.kind), values);
            // Registered before the worker's own handlers, so the count is up to date when it sends next.
            answer.then(
              (r) => {
                answered += 1;
                entry.outcome = r.command;
              },
              () => {
                answered += 1;
                entry.outcome = 'failed';
              },
            );
            return answer;
          },
          corked: (send: () => void) => connection.corked(send),
          release: (destroy?: boolean) => connection.release(destroy),
        };
      },
    };
    return { pool, sent };
  }

  function startWorker(pool: PipelinedPool, options: Partial<DeliveryWorkerOptions>): DeliveryWorker {
    worker = createDeliveryWorker(
      { db: store, dialect: 'postgres', pipelined: pool, clock, random: t.ctx.random, secretBox: t.ctx.secretBox, logger: t.ctx.logger },
      { ca: receiver.ca, allowPrivateNetworks: true, timeoutMs: 5_000, leaseMs: 30_000, ...options },
    );
    worker.start();
    return worker;
  }

  const deliveriesOf = (endpointId: string) => store.selectFrom('webhook_deliveries').select(['id', 'state', 'attempts', 'leased_until']).where('endpoint_id', '=', endpointId).execute();
  const attemptsOf = (endpointId: string) => store.selectFrom('webhook_attempts').select(['delivery_id', 'attempt']).where('endpoint_id', '=', endpointId).execute();

  it('sends the BEGIN with the first statement and the COMMIT with the claim: a cycle that records and claims is two round trips', async () => {
    const { endpointId, eventIds } = await endpointWithEvents(t, scope, receiver.url('/pipelined'), 9, 'pipelined');
    const { pool, sent } = recordingPool();
    // Cap 3: the first cycle claims 3, and each later one records finished sends and claims more.
    // No poll within the test: only finished sends drive the cycles.
    startWorker(pool, { concurrency: 16, perEndpointConcurrency: 3, pollIntervalMs: 600_000 });
    await pollUntil(async () => (await deliveriesOf(endpointId)).every((d) => d.state === 'delivered'), { timeoutMs: 10_000, intervalMs: 25 });
    await worker!.stop();

    expect(receiver.requestsTo('/pipelined').map((r) => r.headers['svc-webhook-id']).sort()).toEqual([...eventIds].sort());
    expect(await attemptsOf(endpointId)).toHaveLength(9);
    const transactions = roundTrips(sent);
    // The first cycle: BEGIN with the listing, then the claim with its COMMIT.
    expect(transactions[0]).toEqual([['begin', 'listing'], ['claim', 'commit']]);
    // Cycles that record and claim: two round trips. Some did (9 deliveries at 3 at a time).
    const recordAndClaim = transactions.filter((tx) => tx.flat().includes('results') && tx.flat().includes('claim'));
    expect(recordAndClaim.length).toBeGreaterThan(0);
    for (const tx of recordAndClaim) expect(tx).toEqual([['begin', 'results'], ['claim', 'commit']]);
    // Every transaction: the BEGIN never goes out alone, and nothing follows the COMMIT.
    for (const tx of transactions) {
      expect(tx[0]![0]).toBe('begin');
      expect(tx[0]!.length).toBeGreaterThan(1);
      expect(tx.flat().at(-1)).toBe('commit');
    }
    expect(sent.filter((s) => s.kind === 'commit').every((s) => s.outcome === 'COMMIT')).toBe(true);
    expect(worker!.stats()).toMatchObject({ delivered: 9, leasesLost: 0 });
  });

  it('a claim that fails takes its cycle with it: the COMMIT behind it answers ROLLBACK, the results are written once on their own, nothing is sent twice, and the connection goes on serving', async () => {
    const { endpointId, eventIds } = await endpointWithEvents(t, scope, receiver.url('/failing-claim'), 6, 'failing claim');
    // The first claim that follows a results statement in the same transaction fails (a missing table).
    let resultsSeen = false;
    let failed = false;
    const { pool, sent } = recordingPool((text, kind) => {
      if (kind === 'begin') resultsSeen = false;
      if (kind === 'results') resultsSeen = true;
      if (kind === 'claim' && resultsSeen && !failed) {
        failed = true;
        return 'select * from no_such_table_for_this_test';
      }
      return text;
    });
    startWorker(pool, { concurrency: 16, perEndpointConcurrency: 2, pollIntervalMs: 30 });
    await pollUntil(async () => (await deliveriesOf(endpointId)).every((d) => d.state === 'delivered'), { timeoutMs: 10_000, intervalMs: 25 });
    await worker!.stop();
    expect(failed).toBe(true);

    const transactions = roundTrips(sent);
    const failedAt = sent.findIndex((s) => s.kind === 'claim' && s.outcome === 'failed');
    expect(failedAt).toBeGreaterThan(0);
    // The COMMIT that went out behind the failed claim was answered ROLLBACK, and a ROLLBACK followed.
    expect(sent[failedAt + 1]).toMatchObject({ kind: 'commit', outcome: 'ROLLBACK' });
    expect(sent[failedAt + 2]).toMatchObject({ kind: 'rollback' });
    // Then the failed cycle's results, one transaction each, each a single round trip.
    const after = roundTrips(sent.slice(failedAt + 3));
    expect(after[0]).toEqual([['begin', 'results', 'commit']]);
    expect(transactions.length).toBeGreaterThan(after.length);

    // Nothing of the failed cycle stayed: each delivery has exactly one attempt (the rolled-back
    // results statement's attempt rows are gone; the rewrite added them once), and each event
    // reached the receiver once (the failed claim leased nothing).
    const attempts = await attemptsOf(endpointId);
    expect(attempts).toHaveLength(6);
    expect(new Set(attempts.map((a) => a.delivery_id)).size).toBe(6);
    expect(receiver.requestsTo('/failing-claim').map((r) => r.headers['svc-webhook-id']).sort()).toEqual([...eventIds].sort());
    expect((await deliveriesOf(endpointId)).every((d) => d.attempts === 1 && d.leased_until === null)).toBe(true);
    expect(worker!.stats()).toMatchObject({ delivered: 6, leasesLost: 0 });
  });
});
