/**
 * PostgreSQL: the delivery worker's cycles on pipelined connections (ADR 0023). A real PostgreSQL,
 * a real HTTPS receiver on loopback; the storage's pipelined pool is wrapped to record every
 * statement a cycle sends and how many answers its connection had received when it went out, so
 * the round trips can be counted: statements sent before any new answer arrived share one.
 *
 * What must hold: the BEGIN goes out with the first statement and the COMMIT with the claim (a
 * cycle that records and claims is two round trips), and a statement that fails takes the whole
 * cycle with it: the COMMIT sent behind it answers ROLLBACK, nothing of the cycle stays written,
 * and the connection serves the next cycles. And a cycle's statements run with generic plans
 * (`CYCLE_BEGIN`): PostgreSQL plans each once per connection, never from the values, and those
 * plans reach the queue through its indexes on a queue of 12,000 rows without statistics.
 */
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PipelinedPool } from '../../../src/db/database.js';
import type { Database } from '../../../src/db/schema.js';
import { registeredStatements } from '../../../src/db/statements.js';
import { ManualClock } from '../../../src/lib/clock.js';
import { createDeliveryWorker, type DeliveryWorker, type DeliveryWorkerOptions } from '../../../src/modules/webhooks/delivery-worker.js';
import type { WebhookScope } from '../../../src/modules/webhooks/webhooks.service.js';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';
import { genericPlan } from '../../support/generic-plans.js';
import { pollUntil } from '../../support/server-process.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';
import { appendEvents, endpointWithEvents } from '../../support/webhook-events.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

type Kind = 'begin' | 'commit' | 'rollback' | 'results' | 'claim' | 'listing' | 'other';

interface Sent {
  kind: Kind;
  values: readonly unknown[] | undefined;
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

  /**
   * The storage's pipelined pool, recording; `rewrite` may swap a statement's text before it goes
   * out, and `hold` may keep it back until the promise it returns settles.
   */
  function recordingPool(
    rewrite: (text: string, kind: Kind) => string = (text) => text,
    hold: (kind: Kind) => Promise<void> | undefined = () => undefined,
  ): { pool: PipelinedPool; sent: Sent[] } {
    const sent: Sent[] = [];
    const pool: PipelinedPool = {
      connect: async () => {
        const connection = await t.ctx.storage.pipelined!.connect();
        let answered = 0;
        return {
          query: <R>(text: string, values?: readonly unknown[]) => {
            const entry: Sent = { kind: kindOf(text), values, answered };
            sent.push(entry);
            const held = hold(entry.kind);
            const answer = held
              ? held.then(() => connection.query<R>(rewrite(text, entry.kind), values))
              : connection.query<R>(rewrite(text, entry.kind), values);
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
      // A lease with room for one send ahead: these tests follow each claim with the factor 2
      // (claimAheadFactor; the factor 4 of the defaults has its own test in delivery.test.ts).
      { ca: receiver.ca, allowPrivateNetworks: true, timeoutMs: 5_000, leaseMs: 20_000, ...options },
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

  it('a claim counts what its worker has still to send (sends that ended while the cycle ran free their room, their results not yet written), and the listing does not count the sends still out (ADR 0031)', async () => {
    const { endpointId, eventIds } = await endpointWithEvents(t, scope, receiver.url('/room'), 20, 'room');
    // The receiver answers only when the test says, so the test knows what is sending, waiting
    // and finished at every step.
    receiver.setMode('/room', { kind: 'held' });
    // A gate in front of each of the first three results statements: the test decides when each
    // goes out, and so what ends meanwhile. Every claim's counts per endpoint are its $2.
    const gates = Array.from({ length: 3 }, () => {
      let open!: () => void;
      let reach!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      const reached = new Promise<void>((resolve) => (reach = resolve));
      return { opened, open, reached, reach };
    });
    let resultsSent = 0;
    const { pool, sent } = recordingPool(undefined, (kind) => {
      const gate = kind === 'results' ? gates[resultsSent++] : undefined;
      gate?.reach();
      return gate?.opened;
    });
    const claims = () => sent.filter((s) => s.kind === 'claim').map((s) => s.values![1] as number[]);
    const seen = (n: number) => receiver.waitFor(() => receiver.requestsTo('/room').length === n);
    // Whatever happens below, nothing stays held: the worker's stop (afterEach) waits for its sends and cycles.
    const letGo = () => {
      for (const gate of gates) gate.open();
      receiver.setMode('/room', 200);
      receiver.release('/room');
    };
    try {
      // Cap 4, claiming ahead: the worker holds up to 8 there. No poll: only ended sends drive cycles.
      startWorker(pool, { concurrency: 16, perEndpointConcurrency: 4, pollIntervalMs: 600_000 });
      await seen(4);
      expect(claims()).toEqual([[8]]);

      // The first send ends (1 finished, 4 sending, 3 waiting): a cycle starts, its results held.
      receiver.release('/room', 1);
      await gates[0]!.reached;
      await seen(5);
      // Two more end while that cycle waits: 3 finished, 4 sending, 1 waiting.
      receiver.release('/room', 2);
      await seen(7);
      gates[0]!.open();
      // The cycle wrote the first result and claimed 8 - (4 sending + 1 waiting) = 3. Counting the
      // two finished sends whose results wait for the next cycle, it would have claimed 1.
      await gates[1]!.reached;
      expect(claims()).toEqual([[8], [3]]);

      // The next cycle (the two results) left when the worker held 8: 4 sending and 4 waiting. Its
      // listing must still offer the endpoint, as those sends may end before the claim: one does.
      receiver.release('/room', 1);
      await seen(8);
      gates[1]!.open();
      // 4 sending + 3 waiting: room for 1. Listed with all 8 counted, the endpoint would have been
      // left out, and nothing claimed until a later cycle.
      await gates[2]!.reached;
      expect(claims()).toEqual([[8], [3], [1]]);
    } finally {
      letGo();
    }
    await pollUntil(async () => (await deliveriesOf(endpointId)).every((d) => d.state === 'delivered'), { timeoutMs: 10_000, intervalMs: 25 });
    await worker!.stop();
    expect(receiver.requestsTo('/room').map((r) => r.headers['svc-webhook-id']).sort()).toEqual([...eventIds].sort());
    expect(receiver.maxConcurrent('/room')).toBeLessThanOrEqual(4);
    expect(await attemptsOf(endpointId)).toHaveLength(20);
    expect(worker!.stats()).toMatchObject({ delivered: 20, leasesLost: 0 });
  });

  it('an endpoint with room is still listed when endpoints with sends out and no room come before it: the LIMIT of the listing counts them too', async () => {
    // Five slow receivers (they hold every answer) whose deliveries are older, and a fast one.
    const slow = ['/slow-0', '/slow-1', '/slow-2', '/slow-3', '/slow-4'];
    for (const path of slow) {
      receiver.setMode(path, { kind: 'held' });
      await t.ctx.webhooks.createEndpoint(scope, { url: receiver.url(path), events: '*', description: `slow ${path}` });
    }
    // Four each: two are claimed at first, and two stay due, older than any of the fast one's.
    await appendEvents(t, scope, 4);
    clock.advance(1_000);
    const { endpointId: fast } = await endpointWithEvents(t, scope, receiver.url('/fast'), 6, 'fast');
    const letGo = () => {
      for (const path of slow) {
        receiver.setMode(path, 200);
        receiver.release(path);
      }
    };
    try {
      // Cap 1 and a concurrency of 6: every endpoint sends one and holds one more, so after the
      // first claim only a slot or two are free, and each slow endpoint, with its send out, has
      // no room. No poll: only the fast endpoint's ended sends drive the cycles, and each cycle
      // lists after its results. With the LIMIT at the free slots alone, the slow endpoints
      // (older) filled the listing and the fast one stopped after the two it first claimed.
      startWorker(t.ctx.storage.pipelined!, { concurrency: 6, perEndpointConcurrency: 1, pollIntervalMs: 600_000 });
      await pollUntil(async () => (await deliveriesOf(fast)).filter((d) => d.state === 'delivered').length === 6, { timeoutMs: 10_000, intervalMs: 25 });
      for (const path of slow) expect(receiver.requestsTo(path)).toHaveLength(1);
    } finally {
      letGo();
    }
    await worker!.stop();
    expect(receiver.maxConcurrent('/fast')).toBe(1);
    expect(receiver.requestsTo('/fast').map((r) => r.headers['svc-webhook-id'])).toHaveLength(6);
  });

  it("runs every statement of a cycle with a generic plan: PostgreSQL plans each once per connection, not at each execution", async () => {
    const { endpointId } = await endpointWithEvents(t, scope, receiver.url('/generic'), 24, 'generic plans');
    // What each session (a backend, by its pid) says of its prepared statements, read as the
    // worker gives the connection back (after its COMMIT was answered); a session's counts only
    // grow, so its last reading is its total.
    const counts = new Map<string, { kind: Kind; generic: number; custom: number }>();
    const readings: Array<Promise<void>> = [];
    const pool: PipelinedPool = {
      connect: async () => {
        const connection = await t.ctx.storage.pipelined!.connect();
        return {
          query: (text, values) => connection.query(text, values),
          corked: (send) => connection.corked(send),
          release: (destroy) => {
            readings.push(
              connection
                .query<{ pid: number; name: string; statement: string; generic_plans: string; custom_plans: string }>(
                  'select pg_backend_pid() as pid, name, statement, generic_plans, custom_plans from pg_prepared_statements where not from_sql',
                )
                .then(({ rows }) => {
                  for (const row of rows) {
                    counts.set(`${row.pid}/${row.name}`, { kind: kindOf(row.statement), generic: Number(row.generic_plans), custom: Number(row.custom_plans) });
                  }
                })
                .finally(() => connection.release(destroy)),
            );
          },
        };
      },
    };
    // Cap 2 for 24 deliveries: a dozen cycles, each statement executed more than the five times
    // after which PostgreSQL, left to itself, may stop making custom plans.
    startWorker(pool, { concurrency: 16, perEndpointConcurrency: 2, pollIntervalMs: 600_000 });
    await pollUntil(async () => (await deliveriesOf(endpointId)).every((d) => d.state === 'delivered'), { timeoutMs: 10_000, intervalMs: 25 });
    await worker!.stop();
    await Promise.all(readings);

    const byKind = (kind: Kind) => [...counts.values()].filter((c) => c.kind === kind);
    // The listing alone runs in the cycles without results (the first); the others in every cycle.
    for (const [kind, executions] of [['results', 6], ['claim', 6], ['listing', 1]] as const) {
      const statements = byKind(kind);
      expect(statements.length, `${kind}: prepared statements seen`).toBeGreaterThan(0);
      expect(statements.reduce((n, c) => n + c.generic, 0), `${kind}: executions with the generic plan`).toBeGreaterThanOrEqual(executions);
      expect(statements.map((c) => c.custom), `${kind}: custom plans made`).toEqual(statements.map(() => 0));
    }
    expect(worker!.stats()).toMatchObject({ delivered: 24, leasesLost: 0 });
  });

  it('those generic plans reach the queue through its indexes: a queue of 12,000 rows without statistics is never read whole', async () => {
    const { endpoint } = await t.ctx.webhooks.createEndpoint(scope, { url: receiver.url('/big-queue'), events: '*', description: 'big queue' });
    // In transactions of 1,000 events (a statement's parameters are bounded).
    const append = async (events: number) => {
      for (let i = 0; i < events; i += 1_000) await appendEvents(t, scope, 1_000);
    };
    await append(6_000);
    // Half of them delivered long ago: history the listing and the claim must step around.
    await store
      .updateTable('webhook_deliveries')
      .set({ state: 'delivered', attempts: 1, finished_at: 1 })
      .where('endpoint_id', '=', endpoint.id)
      .where('id', 'in', (eb) => eb.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', endpoint.id).orderBy('id').limit(3_000))
      .execute();
    await append(6_000);
    const client = new pg.Client({ connectionString: db.databaseUrl! });
    await client.connect();
    try {
      const tables = ['webhook_deliveries', 'webhook_attempts', 'webhook_endpoints', 'webhook_in_flight', 'events'];
      // No statistics, whatever autovacuum would do meanwhile: the plans are made from the tables' sizes alone.
      for (const table of tables) await client.query(`alter table ${table} set (autovacuum_enabled = false)`);
      const { rows: analysed } = await client.query<{ n: string }>(
        `select count(*) as n from pg_stat_user_tables where relname = any($1) and (last_analyze is not null or last_autoanalyze is not null)`,
        [tables],
      );
      expect(Number(analysed[0]!.n)).toBe(0);

      const now = String(clock.now().getTime());
      const arrays = (n: number) => Array.from({ length: n }, () => '{}');
      const cycleStatements = registeredStatements().filter((text) => /webhook_deliveries/.test(text) && /webhook_in_flight/.test(text));
      const shapes: Array<{ name: string; test: (text: string) => boolean; values: string[] }> = [
        { name: 'claim', test: (x) => x.includes('for update skip locked'), values: [`{${endpoint.id}}`, '{8}', '8', now, now, 'token', 'worker', '{0}', '2'] },
        { name: 'results', test: (x) => x.includes('insert into webhook_attempts') && !x.includes('pending_endpoints'), values: [...arrays(18), 'worker', '{}', '{}', now] },
        { name: 'results, then the listing', test: (x) => x.includes('insert into webhook_attempts') && x.includes('pending_endpoints'), values: [...arrays(18), 'worker', '{}', '{}', now, now, '8', '64', '{}', '{}', '2'] },
        { name: 'listing', test: (x) => !x.includes('insert into webhook_attempts') && x.includes('pending_endpoints'), values: [now, '8', '64', 'worker', '2'] },
        { name: 'undo of claims in doubt', test: (x) => x.includes('undone as'), values: ['{}', '{}', now, '{}', 'worker'] },
        { name: 'release of claims given back', test: (x) => x.includes('released as'), values: ['{}', '{}', now, 'worker', '{}', '{}', now] },
      ];
      for (const shape of shapes) {
        const texts = cycleStatements.filter(shape.test);
        expect(texts, `${shape.name}: registered statements`).toHaveLength(1);
        const plan = await genericPlan(client, texts[0]!, shape.values);
        expect(plan, shape.name).toMatch(/Index (Only )?Scan using webhook_deliveries_\w+ on webhook_deliveries|Bitmap Index Scan on webhook_deliveries_\w+/);
        expect(plan, shape.name).not.toMatch(/Seq Scan on (webhook_deliveries|webhook_attempts|webhook_endpoints|events)\b/);
      }
    } finally {
      await client.end();
    }
  }, 60_000);

  it('a running worker vacuums the queue once its dead rows, read from PostgreSQL\'s statistics, pass the threshold (ADR 0041; this server runs without autovacuum)', async () => {
    const vacuums = async () =>
      Number((await sql<{ n: string }>`select vacuum_count as n from pg_stat_user_tables where relname = 'webhook_deliveries'`.execute(store)).rows[0]!.n);
    const before = await vacuums();
    const { endpointId } = await endpointWithEvents(t, scope, receiver.url('/vacuumed'), 6, 'vacuumed');
    // Each delivery's claim and result leave dead row versions; at a threshold of 0 any of them is
    // enough, but a read that found no statistics (0 dead rows) would never vacuum.
    startWorker(t.ctx.storage.pipelined!, { concurrency: 8, perEndpointConcurrency: 2, queueVacuum: { deadRowsAbove: 0, intervalMs: 100 } });
    await pollUntil(async () => (await deliveriesOf(endpointId)).every((d) => d.state === 'delivered'), { timeoutMs: 10_000, intervalMs: 25 });
    // PostgreSQL reports a session's dead rows within about 10 s of its last transaction.
    await pollUntil(async () => (await vacuums()) > before, { timeoutMs: 30_000, intervalMs: 200 });
    await worker!.stop();
  }, 60_000);
});
