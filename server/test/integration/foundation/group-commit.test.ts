import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type Kysely } from 'kysely';
import { migrateToLatest, openStorage, type Storage } from '../../../src/db/database.js';
import { createTransactionRunner, type Unit } from '../../../src/db/group-commit.js';
import type { Database } from '../../../src/db/schema.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { countProbes, registerProbeRoutes } from '../../support/probe-routes.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';

// Tables of this test only: a child whose foreign key is checked at COMMIT, so a unit can make
// the COMMIT itself fail after every unit of its batch succeeded.
const SCHEMA = [
  'create table gc_rows (name varchar(100) primary key)',
  'create table gc_parents (id integer primary key)',
  'create table gc_children (parent_id integer not null references gc_parents (id) deferrable initially deferred)',
];

describe.each(await dialectMatrix())('group commit [%s]', (dialect) => {
  let testDb: TestDatabase;
  let storage: Storage;

  beforeAll(async () => {
    testDb = await createTestDatabase(dialect);
    storage = openStorage({ databaseUrl: testDb.databaseUrl, dataDir: testDb.dataDir, poolSize: 6 });
    await migrateToLatest(storage.db);
    for (const statement of SCHEMA) await sql.raw(statement).execute(storage.db);
  });
  afterAll(async () => {
    await storage?.close();
    await testDb?.drop();
  });

  const insert = (name: string) => async (trx: Kysely<Database>) => {
    await sql`insert into gc_rows (name) values (${name})`.execute(trx);
    return name;
  };
  /** Read through the other connection (SQLite's reader, another pooled connection on PostgreSQL): only committed rows show. */
  const committed = async (...names: string[]) => {
    const { rows } = await sql<{ name: string }>`select name from gc_rows`.execute(storage.readDb);
    const present = new Set(rows.map((r) => r.name));
    return names.filter((n) => present.has(n));
  };

  it('commits many concurrent units, sharing transactions, and every one is there afterwards', async () => {
    const runner = createTransactionRunner(storage);
    const names = Array.from({ length: 60 }, (_, i) => `many-${i}`);
    const results = await Promise.all(names.map((n) => runner.run(insert(n))));
    expect(results).toEqual(names);
    expect(await committed(...names)).toEqual(names);
    const stats = runner.stats();
    expect(stats.units).toBe(60);
    expect(stats.failedUnits).toBe(0);
    // Queued in one tick: they cannot each have had a transaction of their own.
    expect(stats.batches).toBeLessThan(60);
    expect(stats.largestBatch).toBeGreaterThan(1);
  });

  it('rolls back a unit that throws alone: its caller gets the error, its batch-mates commit', async () => {
    const runner = createTransactionRunner(storage, { maxBatches: 1 });
    const failure = new Error('unit refused');
    const first = runner.run(insert('alone-a'));
    const failing = runner.run(async (trx) => {
      await insert('alone-b')(trx);
      throw failure;
    });
    const third = runner.run(async (trx) => {
      // Runs after the failed unit in the same transaction: its writes are already undone.
      const { rows } = await sql<{ name: string }>`select name from gc_rows where name in ('alone-a', 'alone-b')`.execute(trx);
      await insert('alone-c')(trx);
      return rows.map((r) => r.name);
    });
    await expect(failing).rejects.toBe(failure);
    expect(await first).toBe('alone-a');
    expect(await third).toEqual(['alone-a']);
    expect(await committed('alone-a', 'alone-b', 'alone-c')).toEqual(['alone-a', 'alone-c']);
    if (dialect === 'sqlite') {
      // Each unit in its savepoint: the failing one is rolled back to it alone.
      expect(runner.stats()).toMatchObject({ batches: 1, units: 3, failedUnits: 1, failedBatches: 0, rerunUnits: 0 });
    } else {
      // No savepoints (ADR 0036): the failure rolled the batch back, and the first unit ran again
      // with the third in the next batch.
      expect(runner.stats()).toMatchObject({ batches: 2, units: 4, failedUnits: 1, failedBatches: 0, rerunUnits: 1 });
    }
  });

  it('fails every unit of a batch whose COMMIT fails, writes nothing, and serves the next batch', async () => {
    const runner = createTransactionRunner(storage, { maxBatches: 1 });
    const first = runner.run(insert('doomed-a'));
    // Each statement succeeds; the foreign key is checked only at COMMIT, which then fails.
    const orphan = runner.run(async (trx) => {
      await sql`insert into gc_children (parent_id) values (404)`.execute(trx);
      return 'orphan';
    });
    const third = runner.run(insert('doomed-c'));
    const outcomes = await Promise.allSettled([first, orphan, third]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
    const reasons = outcomes.map((o) => (o as PromiseRejectedResult).reason as { message: string });
    expect(new Set(reasons).size).toBe(1); // the COMMIT's error, for each of them
    expect(reasons[0]!.message).toMatch(/foreign key/i);
    expect(await committed('doomed-a', 'doomed-c')).toEqual([]);
    const { rows } = await sql<{ n: number }>`select count(*) as n from gc_children`.execute(storage.readDb);
    expect(Number(rows[0]!.n)).toBe(0);
    expect(runner.stats()).toMatchObject({ batches: 1, failedBatches: 1, failedUnits: 3 });

    expect(await runner.run(insert('after-failure'))).toBe('after-failure');
    expect(await committed('after-failure')).toEqual(['after-failure']);
  });

  it('resolves a unit only after the COMMIT that made it durable', async () => {
    const runner = createTransactionRunner(storage, { maxBatches: 1 });
    let firstResolved = false;
    const first = runner.run(insert('durable-a')).then((v) => {
      firstResolved = true;
      return v;
    });
    const seenBySecond = runner.run(async (trx) => {
      // The first unit has finished its work in this transaction, but it is not committed yet:
      // its caller must not have its answer, and no other connection may see its row.
      const view = { firstResolved, visibleElsewhere: await committed('durable-a'), visibleHere: (await sql<{ name: string }>`select name from gc_rows where name = 'durable-a'`.execute(trx)).rows.length };
      await insert('durable-b')(trx);
      return view;
    });
    expect(await seenBySecond).toEqual({ firstResolved: false, visibleElsewhere: [], visibleHere: 1 });
    expect(await first).toBe('durable-a');
    expect(await committed('durable-a', 'durable-b')).toEqual(['durable-a', 'durable-b']);
  });

  it('bounds a batch by maxBatch', async () => {
    const runner = createTransactionRunner(storage, { maxBatches: 1, maxBatch: 4 });
    const units: Array<Unit<string>> = Array.from({ length: 10 }, (_, i) => insert(`bounded-${i}`));
    await Promise.all(units.map((u) => runner.run(u)));
    expect(runner.stats()).toMatchObject({ units: 10, largestBatch: 4, batches: 3 });
  });
});

describe.each(await dialectMatrix())('group commit behind the API [%s]', (dialect) => {
  let testDb: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    testDb = await createTestDatabase(dialect);
    t = await createTestApp(testDb, { build: { registerExtraV1Routes: registerProbeRoutes } });
  });
  afterAll(async () => {
    await t?.close();
    await testDb?.drop();
  });

  const post = (body: object, key: string) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/test-probes',
      headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json', 'idempotency-key': key },
      payload: JSON.stringify(body),
    });

  it('answers concurrent keyed requests each on its own: a 500 and a stored 422 among them leave the others committed', async () => {
    const run = `${dialect}-${Date.now()}`;
    const bodies = Array.from({ length: 12 }, (_, i) => ({ name: `batch-${run}-${i}`, ...(i === 4 ? { fail: true } : {}), ...(i === 7 ? { reject: true } : {}) }));
    const responses = await Promise.all(bodies.map((b, i) => post(b, `gc-${run}-${i}`)));
    expect(responses.map((r) => r.statusCode)).toEqual(bodies.map((_, i) => (i === 4 ? 500 : i === 7 ? 422 : 200)));
    for (const [i, b] of bodies.entries()) expect(await countProbes(t.ctx, t.tenant.tenantId, b.name)).toBe(i === 4 || i === 7 ? 0 : 1);
    // Every answer is durable and replays: the 422 as stored, the 500 runs again (and fails again).
    const replays = await Promise.all(bodies.map((b, i) => post(b, `gc-${run}-${i}`)));
    expect(replays.map((r) => r.headers['idempotent-replayed'] ?? null)).toEqual(bodies.map((_, i) => (i === 4 ? null : 'true')));
    expect(replays[7]!.body).toBe(responses[7]!.body);
    expect(replays[0]!.body).toBe(responses[0]!.body);
  });
});
