/**
 * The off-loop reader (db/sqlite-offloop-reader.ts, ADR 0029): on SQLite, `Storage.analyticsDb`
 * runs its statements in a worker thread with a connection of its own. Shown here: the thread
 * starts on the first query and ends with its owner; it reads what the writer committed; it runs
 * reading statements only, and its errors keep SQLite's codes; and while a long statement runs in
 * it, the event loop keeps turning, where the same statement on the main thread's reader holds it.
 * (Counted in turns of the loop, not timed.) On PostgreSQL `analyticsDb` is the pool.
 */
import path from 'node:path';
import { CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOffLoopReader } from '../../../src/db/sqlite-offloop-reader.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';

const COUNT_TO = (n: number) => CompiledQuery.raw(`with recursive c(x) as (select 1 union all select x + 1 from c where x < ${n}) select count(*) as n from c`, []);

/** How many turns the event loop made while `work` was running. */
async function turnsDuring(work: () => Promise<unknown>): Promise<{ turns: number; result: unknown }> {
  let turns = 0;
  let done = false;
  const spinning = (async () => {
    while (!done) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      turns++;
    }
  })();
  const result = await work();
  done = true;
  await spinning;
  return { turns, result };
}

describe('the off-loop reader [sqlite]', () => {
  let db: TestDatabase;
  let t: TestApp;
  let file: string;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await createTestApp(db);
    file = path.join(db.dataDir, 'cds.sqlite');
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('starts on the first query, reads what the writer committed, and ends with close()', async () => {
    const reader = createOffLoopReader(file);
    expect(reader.started()).toBe(false);
    const tenantId = t.tenant.tenantId;
    const viaThread = await reader.all<{ id: string; name: string }>('select id, name from tenants where id = ?', [tenantId]);
    const viaMain = await t.ctx.storage.readDb.selectFrom('tenants').select(['id', 'name']).where('id', '=', tenantId).execute();
    expect(viaThread).toEqual(viaMain);
    expect(reader.started()).toBe(true);

    // A commit on the writer is seen by the thread's next statement.
    await t.ctx.storage.db.updateTable('tenants').set({ name: 'Renamed while the thread reads' }).where('id', '=', tenantId).execute();
    expect(await reader.all('select name from tenants where id = ?', [tenantId])).toEqual([{ name: 'Renamed while the thread reads' }]);

    await reader.close();
    expect(reader.started()).toBe(false);
    await expect(reader.all('select 1', [])).rejects.toThrow(/closed/);
  });

  it('runs reading statements only; an error keeps its SQLite code; the thread goes on serving', async () => {
    const reader = createOffLoopReader(file);
    try {
      await expect(reader.all(`update tenants set name = 'x'`, [])).rejects.toMatchObject({ code: 'CDS_NOT_A_READ' });
      await expect(reader.all('select * from no_such_table', [])).rejects.toMatchObject({ code: 'SQLITE_ERROR', message: expect.stringMatching(/no such table/) });
      // Nothing was written.
      expect(await reader.all<{ n: number }>('select count(*) as n from tenants where name = ?', ['x'])).toEqual([{ n: 0 }]);
      // Answers come back to their own callers when several are out at once.
      const many = await Promise.all([3, 1, 2].map((n) => reader.all<{ n: number }>(COUNT_TO(n * 1000).sql, [])));
      expect(many.map((rows) => rows[0]!.n)).toEqual([3000, 1000, 2000]);
    } finally {
      await reader.close();
    }
  });

  it("the event loop turns while analyticsDb's statement runs; the same statement on the main reader holds it", async () => {
    const N = 2_000_000;
    const offLoop = await turnsDuring(() => t.ctx.storage.analyticsDb.executeQuery(COUNT_TO(N)));
    expect((offLoop.result as { rows: Array<{ n: number }> }).rows).toEqual([{ n: N }]);
    const onLoop = await turnsDuring(() => t.ctx.storage.readDb.executeQuery(COUNT_TO(N)));
    expect((onLoop.result as { rows: Array<{ n: number }> }).rows).toEqual([{ n: N }]);
    // Counting to two million takes SQLite tens of milliseconds at least: thousands of turns of an
    // idle loop, against the one or two around a synchronous call.
    expect(onLoop.turns).toBeLessThan(5);
    expect(offLoop.turns).toBeGreaterThan(50);
  });
});
