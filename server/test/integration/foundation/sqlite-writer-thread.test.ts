/**
 * Planned units in SQLite's writer thread (db/sqlite-writer-thread.ts, ADR 0030): a create's
 * writes as data, run on a connection of their own in a worker thread, inside the group commit's
 * rules: each unit in its savepoint (a failing one rolled back alone), one COMMIT per batch (a
 * failing one fails the batch), nothing answered before the WAL sync that covers it, an out-of-date
 * plan run again as its function, and through the HTTP API a webhook endpoint created after the
 * fan-out last looked still getting every event.
 */
import SqliteDatabase from 'better-sqlite3';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sql, type Kysely } from 'kysely';
import { migrateToLatest, openStorage, type Storage } from '../../../src/db/database.js';
import { createTransactionRunner, eventLoopBusy, PlannedUnitFailed, RUN_AS_FUNCTION, type PlannableUnit } from '../../../src/db/group-commit.js';
import type { Database } from '../../../src/db/schema.js';
import { createSqliteWriterThread, type IdleTimer, type PlannedStatement } from '../../../src/db/sqlite-writer-thread.js';
import { createIdempotencyService } from '../../../src/modules/idempotency/idempotency.service.js';
import { createSecretBox } from '../../../src/lib/crypto.js';
import { ManualClock } from '../../../src/lib/clock.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';
import { settledState, until, walGate } from '../../support/wal-gate.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const SCHEMA = [
  'create table wt_rows (name varchar(100) primary key)',
  'create table wt_parents (id integer primary key)',
  'create table wt_children (parent_id integer not null references wt_parents (id) deferrable initially deferred)',
];

// The thread for every planned batch, whatever the event loop's load (the server's default is `eventLoopBusy`).
const always = { offload: () => true };

const insertRow = (name: string): PlannedStatement => ({ sql: 'insert into wt_rows (name) values (?)', parameters: [name] });

/** A unit that exists only as a plan: its function fails the test if the runner ever calls it. */
function planOnly<T>(value: T, statements: PlannedStatement[], outdated?: () => void): PlannableUnit<T> {
  const unit: PlannableUnit<T> = () => Promise.reject(new Error('the function of a planned unit ran'));
  unit.planned = { statements, value, ...(outdated ? { outdated } : {}) };
  return unit;
}

describe('planned units in the writer thread [sqlite]', () => {
  let testDb: TestDatabase;
  let storage: Storage;
  let outside: SqliteDatabase.Database;
  const gate = walGate();

  beforeAll(async () => {
    testDb = await createTestDatabase('sqlite');
    storage = openStorage({ databaseUrl: null, dataDir: testDb.dataDir, syncWal: gate.sync });
    await migrateToLatest(storage.db);
    for (const statement of SCHEMA) await sql.raw(statement).execute(storage.db);
    // A reader that is not the storage's: it sees what is committed, durable or not.
    outside = new SqliteDatabase(path.join(testDb.dataDir, 'cds.sqlite'), { readonly: true });
  });
  afterEach(() => gate.release());
  afterAll(async () => {
    gate.release();
    outside?.close();
    await storage?.close();
    await testDb?.drop();
  });

  const present = (...names: string[]) => {
    const rows = outside.prepare('select name from wt_rows').all() as Array<{ name: string }>;
    const have = new Set(rows.map((r) => r.name));
    return names.filter((n) => have.has(n));
  };

  it('runs concurrent planned units in the thread, several to a COMMIT, and every one is written', async () => {
    expect(storage.writerThread).not.toBeNull();
    const runner = createTransactionRunner(storage, always);
    expect(runner.plansWanted()).toBe(true);
    const commitsBefore = storage.walSync!.stats().commitsElsewhere;
    const names = Array.from({ length: 40 }, (_, i) => `many-${i}`);
    const results = await Promise.all(names.map((n) => runner.run(planOnly(n, [insertRow(n)]))));
    expect(results).toEqual(names);
    expect(present(...names)).toEqual(names);
    expect(storage.writerThread!.started()).toBe(true);
    const commits = storage.walSync!.stats().commitsElsewhere - commitsBefore;
    expect(commits).toBeGreaterThan(0);
    expect(commits).toBeLessThan(40);
    expect(runner.stats().largestBatch).toBeGreaterThan(1);
  });

  it('wants plans only when it would run them: a writer thread, and the event loop to be offloaded', () => {
    let offloading = false;
    const runner = createTransactionRunner(storage, { offload: () => offloading });
    expect(runner.plansWanted()).toBe(false);
    offloading = true;
    expect(runner.plansWanted()).toBe(true);
    expect(createTransactionRunner({ ...storage, writerThread: null }, always).plansWanted()).toBe(false);
  });

  it('rolls back a unit whose statement fails alone: its caller gets SQLite\'s error, its batch-mates commit', async () => {
    const runner = createTransactionRunner(storage, always);
    await runner.run(planOnly('taken', [insertRow('taken')]));
    const before = runner.run(planOnly('before', [insertRow('before')]));
    const failing = runner.run(planOnly('failing', [insertRow('failing-first-write'), insertRow('taken')]));
    const after = runner.run(planOnly('after', [insertRow('after')]));
    await expect(failing).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    expect(await Promise.all([before, after])).toEqual(['before', 'after']);
    expect(present('before', 'after', 'failing-first-write')).toEqual(['before', 'after']);
    expect(runner.stats().failedUnits).toBe(1);
  });

  it('fails a unit whose statement does not find what it must, with that failure, and writes none of it', async () => {
    const runner = createTransactionRunner(storage, always);
    const noRow = runner.run(planOnly('x', [insertRow('no-row-write'), { sql: "select name from wt_rows where name = 'absent'", parameters: [], expect: { kind: 'row', failure: 'no-such-row' } }]));
    const wrongValue = runner.run(
      planOnly('y', [insertRow('wrong-value-write'), { sql: 'select count(*) from wt_rows where name = ?', parameters: ['taken'], expect: { kind: 'equals', value: '2', failure: 'not-two' } }]),
    );
    const rightRow = runner.run(planOnly('z', [insertRow('right-row-write'), { sql: 'select name from wt_rows where name = ?', parameters: ['taken'], expect: { kind: 'row', failure: 'unexpected' } }]));
    await expect(noRow).rejects.toBeInstanceOf(PlannedUnitFailed);
    await expect(noRow).rejects.toMatchObject({ failure: 'no-such-row' });
    await expect(wrongValue).rejects.toMatchObject({ failure: 'not-two' });
    expect(await rightRow).toBe('z');
    expect(present('no-row-write', 'wrong-value-write', 'right-row-write')).toEqual(['right-row-write']);
  });

  it('runs the function of a unit whose plan is out of date instead, and says so to the plan', async () => {
    const runner = createTransactionRunner(storage, always);
    let outdated = 0;
    const unit: PlannableUnit<string> = async (trx) => {
      await sql`insert into wt_rows (name) values ('function-write')`.execute(trx);
      return 'from the function';
    };
    unit.planned = {
      statements: [insertRow('plan-write'), { sql: 'select count(*) from wt_rows', parameters: [], expect: { kind: 'equals', value: 'never', failure: RUN_AS_FUNCTION } }],
      value: 'from the plan',
      outdated: () => outdated++,
    };
    const mate = runner.run(planOnly('mate', [insertRow('outdated-mate')]));
    expect(await runner.run(unit)).toBe('from the function');
    expect(await mate).toBe('mate');
    expect(outdated).toBe(1);
    expect(present('plan-write', 'function-write', 'outdated-mate')).toEqual(['function-write', 'outdated-mate']);
  });

  it('keeps the order of the queue across the thread and the main connection: a function unit sees the planned writes before it', async () => {
    const runner = createTransactionRunner(storage, always);
    const seen = async (trx: Kysely<Database>) =>
      (await sql<{ n: number }>`select count(*) as n from wt_rows where name in ('order-1', 'order-3')`.execute(trx)).rows[0]!.n;
    const [, middle, , last] = await Promise.all([
      runner.run(planOnly('1', [insertRow('order-1')])),
      runner.run(seen),
      runner.run(planOnly('3', [insertRow('order-3')])),
      runner.run(seen),
    ]);
    expect([middle, last]).toEqual([1, 2]);
  });

  it('fails every unit of a batch whose COMMIT fails, writes nothing, and serves the next batch', async () => {
    const runner = createTransactionRunner(storage, { ...always, maxBatch: 8 });
    const orphan: PlannedStatement = { sql: 'insert into wt_children (parent_id) values (?)', parameters: [424242] };
    const batch = [
      runner.run(planOnly('a', [insertRow('commit-fails-a')])),
      runner.run(planOnly('orphan', [orphan])),
      runner.run(planOnly('b', [insertRow('commit-fails-b')])),
    ];
    for (const unit of batch) await expect(unit).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_FOREIGNKEY' });
    expect(present('commit-fails-a', 'commit-fails-b')).toEqual([]);
    expect(runner.stats().failedBatches).toBe(1);
    expect(await runner.run(planOnly('next', [insertRow('after-failed-commit')]))).toBe('next');
    expect(present('after-failed-commit')).toEqual(['after-failed-commit']);
  });

  it('ends the thread after its idle time with no transaction open, and starts another for the next batch', async () => {
    // The test's own timer: it fires the idle end itself instead of waiting for it.
    let pending: { fire: () => void; ms: number } | null = null;
    const idleTimer: IdleTimer = (fire, ms) => {
      const entry = { fire, ms };
      pending = entry;
      return () => {
        if (pending === entry) pending = null;
      };
    };
    const thread = createSqliteWriterThread(path.join(testDb.dataDir, 'cds.sqlite'), ['busy_timeout = 5000', 'foreign_keys = ON'], { idleMs: 1234, idleTimer });
    try {
      const first = await thread.run([[insertRow('idle-first')]]);
      expect(first.outcomes).toEqual([{ ok: true }]);
      // A session is open (no finish yet): however long it stays open, no idle end is scheduled.
      expect(pending).toBeNull();
      await thread.finish();
      // The thread synced the WAL itself (its own fdatasync here) before it may end.
      await first.durable;
      expect(pending).toMatchObject({ ms: 1234 });
      expect(thread.started()).toBe(true);
      pending!.fire();
      expect(thread.started()).toBe(false);
      const second = await thread.run([[insertRow('idle-second')]]);
      expect(second.outcomes).toEqual([{ ok: true }]);
      expect(thread.started()).toBe(true);
      await thread.finish();
      await second.durable;
      expect(present('idle-first', 'idle-second')).toEqual(['idle-first', 'idle-second']);
    } finally {
      await thread.close();
    }
  });

  it('commits what ran during its sync as one transaction when the sync returns, and syncs it, with no message from the runner in between', async () => {
    // A session that does not end by itself meanwhile: its end has the thread commit what it holds.
    const runner = createTransactionRunner(storage, { ...always, maxWaitMs: 5_000, sessionMaxMs: 60_000 });
    const wal = storage.walSync!;
    const commits = () => wal.stats().commitsElsewhere;
    gate.hold();
    const first = runner.run(planOnly('first', [insertRow('cycle-first')]));
    // No sync in flight: the thread committed the first at once and asked for its sync.
    await until(() => present('cycle-first').length === 1 && gate.waiting === 1, 'the first committed and syncing');
    const commitsBefore = commits();
    const later = [runner.run(planOnly('b', [insertRow('cycle-b')])), runner.run(planOnly('c', [insertRow('cycle-c')]))];
    // A unit that fails in the thread, posted with them: once it is answered, they have run.
    const probe = runner.run(planOnly('probe', [{ sql: 'select name from wt_rows where name = ?', parameters: ['absent'], expect: { kind: 'row', failure: 'probe' } }]));
    await expect(probe).rejects.toBeInstanceOf(PlannedUnitFailed);
    // Run in the thread's open transaction while the sync is in flight: not committed.
    expect(present('cycle-b', 'cycle-c')).toEqual([]);
    const sessions = runner.stats().batches;
    expect(commits()).toBe(commitsBefore);
    expect(await settledState(first)).toBe('pending');
    gate.releaseOne();
    expect(await first).toBe('first');
    // The sync returned: the thread committed both in one COMMIT and asked for the next sync.
    await until(() => present('cycle-b', 'cycle-c').length === 2 && gate.waiting === 1, 'b and c committed and syncing');
    expect(commits()).toBe(commitsBefore + 1);
    expect(runner.stats().batches).toBe(sessions); // the session is still open: the thread committed on its own
    for (const unit of later) expect(await settledState(unit)).toBe('pending');
    gate.release();
    expect(await Promise.all(later)).toEqual(['b', 'c']);
    // A function unit ends the session (it runs on the main connection, after it).
    expect(await runner.run(async () => 'end')).toBe('end');
    expect(runner.stats().batches).toBe(sessions + 2);
  });

  it('fails what a thread that stops owed, committed or not, syncs its COMMITs itself for the answers that wait, and starts another thread', async () => {
    const runner = createTransactionRunner(storage, always);
    const wal = storage.walSync!;
    const thread = storage.writerThread!;
    gate.hold();
    const owed = runner.run(planOnly('owed', [insertRow('stopped-owed')]));
    // Committed by the thread, its sync held.
    await until(() => present('stopped-owed').length === 1 && gate.waiting === 1, 'committed and syncing');
    const answer = wal.whenDurable()!; // a response that shows the commit (a poll, say)
    expect(answer).toBeInstanceOf(Promise);
    expect(gate.waiting).toBe(1); // the thread syncs its own COMMITs: no sync of the main thread for it
    await thread.terminate();
    // Nothing says the commit is on disk: the unit fails with the storage error (a 503 for a request).
    await expect(owed).rejects.toMatchObject({ code: 'SQLITE_IOERR_WRITER_THREAD' });
    // The thread is gone, so the main thread syncs what it committed, for the answer that waits.
    await until(() => gate.waiting === 2, "the main thread's own sync");
    expect(await settledState(answer)).toBe('pending');
    gate.release();
    await answer;
    expect(wal.whenDurable()).toBeNull();
    // The next planned unit starts another thread.
    expect(await runner.run(planOnly('after', [insertRow('stopped-after')]))).toBe('after');
    expect(thread.started()).toBe(true);
  });

  it('resolves a planned unit only after the WAL sync that started after its COMMIT, and until then every answer waits', async () => {
    const runner = createTransactionRunner(storage, always);
    const wal = storage.walSync!;
    gate.hold();
    const running = runner.run(planOnly('durable', [insertRow('durable-write')]));
    // Committed by the thread (another connection sees it) but not yet on disk.
    await until(() => {
      if (present('durable-write').length === 1) return true;
      gate.releaseOne(); // syncs that started before the COMMIT make nothing of it durable
      return false;
    }, 'the thread committed');
    expect(await settledState(running)).toBe('pending');
    // What a response checks before it is sent (http/durable-responses.ts): not durable yet.
    expect(wal.whenDurable()).not.toBeNull();
    gate.release();
    expect(await running).toBe('durable');
    expect(wal.whenDurable()).toBeNull();
  });
});

describe('the planned idempotency claim [sqlite]', () => {
  let testDb: TestDatabase;
  let storage: Storage;

  beforeAll(async () => {
    testDb = await createTestDatabase('sqlite');
    storage = openStorage({ databaseUrl: null, dataDir: testDb.dataDir });
    await migrateToLatest(storage.db);
    await sql.raw('create table wt_marker (name varchar(100) primary key)').execute(storage.db);
  });
  afterAll(async () => {
    await storage?.close();
    await testDb?.drop();
  });

  it('answers with the record that another writer committed between the lookup and the planned claim, and writes nothing of its own', async () => {
    const clock = new ManualClock('2026-03-03T10:00:00.000Z');
    const secretBox = createSecretBox(Buffer.alloc(32, 7));
    const idempotency = createIdempotencyService({ db: storage.db, readDb: storage.readDb, transactions: createTransactionRunner(storage, always), clock, secretBox, dialect: storage.dialect });
    const scope = { tenantId: 'tenant-race', environment: 'sandbox' as const };
    // The other writer: a second connection of its own to the file (another process would do the same).
    const other = new SqliteDatabase(path.join(testDb.dataDir, 'cds.sqlite'));
    other.pragma('busy_timeout = 5000');
    const otherBody = '{"answer":"the first request"}';
    const response = await idempotency.execute({
      scope,
      key: 'raced-key',
      fingerprint: () => 'same-request',
      requestId: 'req_second',
      prepare: async () => {
        // After this request's lookup found nothing, and before its transaction.
        other
          .prepare('insert into idempotency_keys (tenant_id, environment, idempotency_key, fingerprint, status_code, response_body, request_id, created_at, expires_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)')
          .run(scope.tenantId, scope.environment, 'raced-key', 'same-request', 200, otherBody, 'req_first', clock.now().getTime(), clock.now().getTime() + 60_000);
        return planOnly({ statusCode: 200, body: '{"answer":"the second request"}' }, [{ sql: 'insert into wt_marker (name) values (?)', parameters: ['second'] }]);
      },
    }).catch((err: unknown) => err);
    other.close();
    expect(response).toMatchObject({ statusCode: 200, body: otherBody, replayed: true, requestId: 'req_first' });
    // Its own write went with the failed claim.
    const { rows } = await sql<{ n: number }>`select count(*) as n from wt_marker`.execute(storage.readDb);
    expect(rows[0]!.n).toBe(0);
  });
});

describe('webhook fan-out of planned creates [sqlite]', () => {
  let db: TestDatabase;
  let t: TestApp;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    db = await createTestDatabase('sqlite');
    t = await createTestApp(db, { env: { RATE_LIMIT_SANDBOX_PER_S: '100000', CDS_SQLITE_WRITER_THREAD: 'always' } });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await receiver?.stop();
  });

  const create = () =>
    t.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({
        consumer: { consumer_id: t.tenant.sandbox.consumers.find((c) => c.tier === 'soft')!.consumerId },
        transaction: { amount: '150.00', currency: 'USD', merchant_name: 'Acme', merchant_category: 'electronics' },
      }),
    });
  const deliveriesOf = async (decisionId: string) => {
    const events = await t.ctx.storage.readDb.selectFrom('events').select('id').where('subject_id', '=', decisionId).execute();
    if (events.length === 0) return { events: 0, deliveries: 0 };
    const deliveries = await t.ctx.storage.readDb
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('event_id', 'in', events.map((e) => e.id))
      .execute();
    return { events: events.length, deliveries: deliveries.length };
  };

  it('gives an endpoint created just after the fan-out last looked every event of the next create', async () => {
    const first = await create();
    expect(first.statusCode, first.body).toBe(200);
    expect(t.ctx.storage.writerThread!.started()).toBe(true);
    // The scope's endpoints were read for the first create's plan (none); one appears now.
    const scope = { tenantId: t.tenant.tenantId, environment: 'sandbox' as const };
    await t.ctx.webhooks.createEndpoint(scope, { url: receiver.url('/just-created'), events: '*', description: 'just created' });
    const second = await create();
    expect(second.statusCode, second.body).toBe(200);
    const { events, deliveries } = await deliveriesOf(second.json<{ decision_id: string }>().decision_id);
    expect(events).toBeGreaterThan(0);
    expect(deliveries).toBe(events);
    // And the plans that follow are made for it (read afresh after the guard failed).
    const third = await create();
    const after = await deliveriesOf(third.json<{ decision_id: string }>().decision_id);
    expect(after.deliveries).toBe(after.events);
  });
});

describe('when the writer thread takes planned units: eventLoopBusy', () => {
  it('turns on above 90% of the event loop over a window, stays on down to 70%, and is asked at most once a window', () => {
    let at = 0;
    let utilization = 0;
    let samples = 0;
    const busy = eventLoopBusy({ now: () => at, utilizationSince: () => () => (samples++, utilization) });
    const after = (ms: number, u: number) => {
      at += ms;
      utilization = u;
      return busy();
    };
    expect(after(50, 1)).toBe(false); // within the first window: not measured yet
    expect(samples).toBe(0);
    expect(after(60, 0.85)).toBe(false); // busy, but not the bottleneck
    expect(after(100, 0.95)).toBe(true);
    expect(after(100, 0.8)).toBe(true); // the thread lowered the loop's share: stays on
    expect(after(100, 0.72)).toBe(true);
    expect(after(100, 0.65)).toBe(false);
    expect(after(100, 0.88)).toBe(false); // back on only above 90%
    const sampled = samples;
    expect(after(10, 1)).toBe(false); // a window is not over: the last answer, nothing measured
    expect(samples).toBe(sampled);
    expect(after(100, 0.91)).toBe(true);
  });
});
