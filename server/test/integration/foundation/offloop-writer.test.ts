/**
 * The off-loop writer (db/sqlite-offloop-writer.ts, ADR 0048): on SQLite in WAL mode the delivery
 * worker's cycles run on a write connection in a thread of their own, in lists of statements.
 * Shown here: the thread starts on the first list and ends with its owner; a list answers each
 * statement's rows or change count, and passes the ids one statement returns to a later one; a
 * statement that fails ends its list with SQLite's code and leaves the transaction to the caller,
 * whose ROLLBACK undoes it; the delivery worker sends its cycles there (two lists a cycle) and
 * holds the main write connection from BEGIN to COMMIT, so a write of the API issued meanwhile
 * waits for the cycle's COMMIT instead of meeting its write lock.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOffLoopWriter, type OffLoopResult, type OffLoopStatement, type OffLoopWriter } from '../../../src/db/sqlite-offloop-writer.js';
import { ManualClock } from '../../../src/lib/clock.js';
import { createDeliveryWorker } from '../../../src/modules/webhooks/delivery-worker.js';
import type { WebhookScope } from '../../../src/modules/webhooks/webhooks.service.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';
import { endpointWithEvents } from '../../support/webhook-events.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

describe('the off-loop writer [sqlite]', () => {
  let db: TestDatabase;
  let t: TestApp;
  let file: string;
  let receiver: WebhookReceiver;
  let scope: WebhookScope;
  const clock = new ManualClock(new Date('2026-12-03T12:00:00Z'));

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await createTestApp(db, { clock });
    file = path.join(db.dataDir, 'cds.sqlite');
    receiver = await startWebhookReceiver();
    scope = { tenantId: t.tenant.tenantId, environment: 'sandbox' };
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await receiver?.stop();
  });

  const statement = (sql: string, parameters: unknown[] = [], flags: Partial<OffLoopStatement> = {}): OffLoopStatement => ({ sql, parameters, ...flags });
  const nameOf = async (tenantId: string) => (await t.ctx.storage.readDb.selectFrom('tenants').select('name').where('id', '=', tenantId).executeTakeFirstOrThrow()).name;

  it('starts on the first list, answers rows or change counts, passes returned ids to a later statement, and ends with close()', async () => {
    const writer = createOffLoopWriter(file, ['busy_timeout = 5000']);
    expect(writer.started()).toBe(false);
    const tenantId = t.tenant.tenantId;
    const answer = await writer.run([
      statement('begin immediate'),
      statement(`update tenants set name = 'Written in the thread' where id = ? returning id`, [tenantId], { collectIds: true }),
      statement(`update tenants set name = name where id = 'no such tenant'`),
      // The collected ids arrive as a JSON array appended to the statement's own parameters.
      statement('select id, name from tenants where name = ? and id in (select value from json_each(?))', ['Written in the thread'], { withCollectedIds: true }),
      statement('commit'),
    ]);
    expect(writer.started()).toBe(true);
    expect(answer.results).toEqual<OffLoopResult[]>([{ changes: 0 }, { rows: [{ id: tenantId }] }, { changes: 0 }, { rows: [{ id: tenantId, name: 'Written in the thread' }] }, { changes: 0 }]);
    // An UPDATE may write (even one that changes no row); a list of reads and transaction control does not.
    expect(answer.wrote).toBe(true);
    expect((await writer.run([statement('begin immediate'), statement('select count(*) as n from tenants'), statement('commit')])).wrote).toBe(false);
    // Committed: the main thread's reader sees it.
    expect(await nameOf(tenantId)).toBe('Written in the thread');

    await writer.close();
    expect(writer.started()).toBe(false);
    await expect(writer.run([statement('select 1')])).rejects.toMatchObject({ code: 'SQLITE_IOERR_OFFLOOP_WRITER' });
  });

  it('a statement that fails ends its list with SQLite\'s code; the transaction is the caller\'s to roll back; the thread goes on serving', async () => {
    const writer = createOffLoopWriter(file, ['busy_timeout = 5000']);
    const tenantId = t.tenant.tenantId;
    const before = await nameOf(tenantId);
    try {
      await expect(
        writer.run([
          statement('begin immediate'),
          statement(`update tenants set name = 'Never committed' where id = ?`, [tenantId]),
          statement('select * from no_such_table'),
          statement('commit'),
        ]),
      ).rejects.toMatchObject({ code: 'SQLITE_ERROR', message: expect.stringMatching(/no such table/) });
      // The COMMIT after the failure did not run: the transaction is still open, uncommitted.
      expect(await nameOf(tenantId)).toBe(before);
      expect(await writer.run([statement('rollback')])).toEqual({ results: [{ changes: 0 }], wrote: false });
      expect(await nameOf(tenantId)).toBe(before);
      // Lists answer their own callers when several are out at once.
      const answers = await Promise.all([3, 1, 2].map((n) => writer.run([statement('select ? as n', [n])])));
      expect(answers.map((a) => (a.results[0]!.rows as { n: number }[])[0]!.n)).toEqual([3, 1, 2]);
    } finally {
      await writer.close();
    }
  });

  it('the storage gives the delivery worker its thread: each cycle is two lists, and the main write connection waits for its COMMIT', async () => {
    const storage = t.ctx.storage;
    expect(storage.offLoopWriter).not.toBeNull();
    const real = storage.offLoopWriter!;
    const lists: string[][] = [];
    /** Set to hold back the next list whose first statement matches, until released. */
    let holdNext: { match: RegExp; release: Promise<void>; reached: () => void } | null = null;
    const recording: OffLoopWriter = {
      async run(list) {
        lists.push(list.map((s) => s.sql.trim().split(/\s+/).slice(0, 3).join(' ')));
        if (holdNext && list.some((s) => holdNext!.match.test(s.sql))) {
          const hold = holdNext;
          holdNext = null;
          hold.reached();
          await hold.release;
        }
        return real.run(list);
      },
      pragma: (text) => real.pragma(text),
      started: () => real.started(),
      close: () => real.close(),
    };
    const { endpointId } = await endpointWithEvents(t, scope, receiver.url('/offloop'), 6, 'off-loop writer');
    const worker = createDeliveryWorker(
      { db: storage.db, dialect: 'sqlite', walSync: storage.walSync, offLoopWriter: recording, offload: () => true, clock, random: t.ctx.random, secretBox: t.ctx.secretBox, logger: t.ctx.logger },
      { ca: receiver.ca, allowPrivateNetworks: true, timeoutMs: 5_000, leaseMs: 30_000, perEndpointConcurrency: 3, concurrency: 8 },
    );
    try {
      // First tick: a cycle with nothing to record lists and claims: its lists are the listing
      // (BEGIN in front), then the claims with the read of what they claimed, the counts and the COMMIT.
      const position = storage.walSync!.position();
      expect(await worker.tick()).toBe(6);
      await worker.settle();
      expect(receiver.requestsTo('/offloop')).toHaveLength(6);
      // Every cycle is two lists: BEGIN IMMEDIATE opens the first, the COMMIT ends the second.
      // The claim's: the listing, then the claims, the read of what they claimed, the counts and
      // the COMMIT. A recording one's: the counts, the next steps and the attempt rows, then the
      // failure counts' reset and the COMMIT.
      const cycles: string[][][] = [];
      for (const list of lists) {
        if (list[0] === 'begin immediate') cycles.push([]);
        cycles[cycles.length - 1]!.push(list);
      }
      expect(cycles.length).toBeGreaterThan(1);
      for (const cycle of cycles) {
        expect(cycle).toHaveLength(2);
        expect(cycle[1]![cycle[1]!.length - 1]!.startsWith('commit')).toBe(true);
      }
      expect(cycles[0]).toEqual([
        ['begin immediate', 'with recursive pending_endpoints(endpoint_id)'],
        ['update webhook_deliveries set', 'select d.id, d.attempts,', 'insert into webhook_in_flight', 'commit -- bookkeeping,'],
      ]);
      expect(cycles.slice(1).some((c) => c[0]!.includes('update webhook_deliveries as') && c[0]!.includes('insert into webhook_attempts'))).toBe(true);
      // Each cycle's COMMIT in the thread is a position of the WAL sync, as the writer's own are,
      // so the sync started after each cycle covers it.
      expect(storage.walSync!.position() - position).toBe(cycles.length);
      // A cycle that wrote nothing (nothing due: BEGIN, the listing, COMMIT) is no write to sync.
      const idle = storage.walSync!.position();
      const before = lists.length;
      expect(await worker.tick()).toBe(0);
      expect(await worker.tick()).toBe(0);
      expect(lists.length - before).toBe(4);
      expect(storage.walSync!.position()).toBe(idle);
      const rows = await storage.db.selectFrom('webhook_deliveries').select(['state']).where('endpoint_id', '=', endpointId).execute();
      expect(rows.map((r) => r.state)).toEqual(Array(6).fill('delivered'));

      // Mutual exclusion: hold a cycle's second list while its transaction (BEGIN IMMEDIATE, in
      // the thread) holds SQLite's write lock, and write through the main connection meanwhile.
      const held = await endpointWithEvents(t, scope, receiver.url('/offloop-held'), 2, 'off-loop writer, held');
      let release!: () => void;
      let reached!: () => void;
      const atClaim = new Promise<void>((resolve) => (reached = resolve));
      holdNext = { match: /^\s*update webhook_deliveries set leased_until/, release: new Promise<void>((resolve) => (release = resolve)), reached };
      const cycle = worker.tick();
      await atClaim;
      // The API's write: a transaction on the main connection that first counts the held
      // endpoint's claimed rows. It may only run once the cycle has committed its claim.
      let leasedWhenWritten: number | null = null;
      const write = storage.db.transaction().execute(async (trx) => {
        const leased = await trx.selectFrom('webhook_deliveries').select(['id']).where('endpoint_id', '=', held.endpointId).where('lease_token', 'is not', null).execute();
        leasedWhenWritten = leased.length;
        await trx.updateTable('tenants').set({ name: 'Written by the API meanwhile' }).where('id', '=', t.tenant.tenantId).execute();
      });
      // Turns of the event loop pass (the thread is not held, only the list is); the write waits.
      for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
      expect(leasedWhenWritten).toBeNull();
      release();
      // The events went to both endpoints of the scope: two claimed at each.
      expect(await cycle).toBe(4);
      await write;
      expect(leasedWhenWritten).toBe(2);
      expect(await nameOf(t.tenant.tenantId)).toBe('Written by the API meanwhile');
      await worker.settle();
      expect(receiver.requestsTo('/offloop-held')).toHaveLength(2);
    } finally {
      await worker.stop();
    }
  });
  it('a list that fails mid-cycle takes the whole cycle back (its claims too); the next cycle claims and delivers the same rows', async () => {
    const storage = t.ctx.storage;
    const real = storage.offLoopWriter!;
    let sabotage = true;
    // The claim's list with its read of the claimed rows broken: the claims' UPDATEs run, then the list fails.
    const failing: OffLoopWriter = {
      run: (list) =>
        real.run(sabotage && list.some((s) => /^\s*update webhook_deliveries set leased_until/.test(s.sql)) ? list.map((s) => (/^\s*select d\.id, d\.attempts/.test(s.sql) ? { ...s, sql: 'select * from no_such_table' } : s)) : list),
      pragma: (text) => real.pragma(text),
      started: () => real.started(),
      close: () => real.close(),
    };
    const { endpointId } = await endpointWithEvents(t, scope, receiver.url('/offloop-failing'), 3, 'off-loop writer, failing list');
    const worker = createDeliveryWorker(
      { db: storage.db, dialect: 'sqlite', walSync: storage.walSync, offLoopWriter: failing, offload: () => true, clock, random: t.ctx.random, secretBox: t.ctx.secretBox, logger: t.ctx.logger },
      { ca: receiver.ca, allowPrivateNetworks: true, timeoutMs: 5_000, leaseMs: 30_000, perEndpointConcurrency: 3, concurrency: 16 },
    );
    const rowsOf = () => storage.db.selectFrom('webhook_deliveries').select(['state', 'lease_token', 'attempts']).where('endpoint_id', '=', endpointId).execute();
    try {
      // The cycle fails (logged, the loop lives on): nothing it claimed stays leased, nothing was sent.
      expect(await worker.tick()).toBe(0);
      await worker.settle();
      expect(await rowsOf()).toEqual(Array(3).fill({ state: 'pending', lease_token: null, attempts: 0 }));
      expect(receiver.requestsTo('/offloop-failing')).toHaveLength(0);
      // The writer connection was given back and the thread's transaction rolled back: the API writes.
      await storage.db.updateTable('tenants').set({ name: 'Written after the failed cycle' }).where('id', '=', t.tenant.tenantId).execute();

      sabotage = false;
      await worker.deliverDue();
      expect(await rowsOf()).toEqual(Array(3).fill({ state: 'delivered', lease_token: null, attempts: 1 }));
      expect(receiver.requestsTo('/offloop-failing')).toHaveLength(3);
    } finally {
      await worker.stop();
    }
  });
});
