/**
 * wal-sync.ts on its own, with a sync the test holds and releases: positions, which sync serves
 * which caller, coalescing, failures. The storage-level rule (what waits for it) is tested in
 * integration/foundation/durable-commit.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWalSync } from '../../../src/db/wal-sync.js';

/** A sync per call that the test settles, in order. */
function heldSyncs() {
  const pending: Array<{ resolve(): void; reject(err: Error): void }> = [];
  return {
    sync: () => new Promise<void>((resolve, reject) => pending.push({ resolve, reject })),
    get count() {
      return pending.length;
    },
    /** Settle the oldest unsettled sync. */
    async finish(err?: Error) {
      const next = pending.shift()!;
      if (err) next.reject(err);
      else next.resolve();
      // Let the settlement and the start of the next sync run.
      for (let i = 0; i < 5; i++) await Promise.resolve();
    },
  };
}

/** One write transaction on the writer: a write statement, then the COMMIT that ends it. */
function commitOne(wal: ReturnType<typeof createWalSync>): void {
  wal.noteStatement(true, true); // begin
  wal.noteStatement(false, true); // insert
  wal.noteStatement(true, false); // commit
}

const state = (p: Promise<unknown>) => Promise.race([p.then(() => 'resolved', () => 'rejected'), new Promise((r) => setImmediate(() => r('pending')))]);

describe('WAL sync', () => {
  it('counts write transactions when they end, not reads or statements inside them', () => {
    const wal = createWalSync({ file: '/nonexistent/db', sync: async () => undefined });
    expect(wal.noteStatement(true, false)).toBe(false); // an autocommit read
    expect(wal.position()).toBe(0);
    expect(wal.noteStatement(true, true)).toBe(false);
    expect(wal.noteStatement(false, true)).toBe(false);
    expect(wal.noteStatement(false, true)).toBe(false);
    expect(wal.position()).toBe(0); // still open: not committed, so not something a sync may count
    expect(wal.noteStatement(true, false)).toBe(true); // the COMMIT ends it
    expect(wal.position()).toBe(1);
    expect(wal.noteStatement(false, false)).toBe(true); // an autocommit write
    expect(wal.position()).toBe(2);
    expect(wal.whenDurable(0)).toBeNull();
  });

  it("a bookkeeping COMMIT moves the position but not the required position: the delivery worker's own cycles need not wait for each other", async () => {
    const held = heldSyncs();
    const wal = createWalSync({ file: '/nonexistent/db', sync: held.sync });
    commitOne(wal); // the API's commit: its events must be durable before a webhook announces them
    expect([wal.position(), wal.requiredPosition()]).toEqual([1, 1]);
    const apiCommit = wal.whenDurable(wal.requiredPosition())!;
    await held.finish();
    expect(await state(apiCommit)).toBe('resolved');
    // Two cycles of the worker, each ending with COMMIT_BOOKKEEPING.
    for (let i = 0; i < 2; i++) {
      wal.noteStatement(true, true);
      wal.noteStatement(false, true);
      expect(wal.noteStatement(true, false, true)).toBe(true);
    }
    expect([wal.position(), wal.requiredPosition()]).toEqual([3, 1]);
    expect(wal.whenDurable(wal.requiredPosition())).toBeNull(); // nothing to wait for
    const all = wal.whenDurable()!; // a response showing the worker's writes still waits for them
    expect(await state(all)).toBe('pending');
    // The next ordinary write is required again, bookkeeping before it included.
    wal.noteStatement(false, false);
    expect([wal.position(), wal.requiredPosition()]).toEqual([4, 4]);
    await held.finish();
    expect(await state(all)).toBe('resolved');
    expect(await state(wal.whenDurable(wal.requiredPosition())!)).toBe('pending');
    await held.finish();
  });

  it('answers null without a promise when nothing is waiting for the disk', async () => {
    const held = heldSyncs();
    const wal = createWalSync({ file: '/nonexistent/db', sync: held.sync });
    expect(wal.whenDurable()).toBeNull();
    commitOne(wal);
    const first = wal.whenDurable()!;
    expect(first).toBeInstanceOf(Promise);
    await held.finish();
    expect(await state(first)).toBe('resolved');
    expect(wal.whenDurable()).toBeNull();
    expect(wal.syncing()).toBe(false);
  });

  it('a commit made while a sync runs waits for the next sync, which then serves every caller that came meanwhile', async () => {
    const held = heldSyncs();
    const wal = createWalSync({ file: '/nonexistent/db', sync: held.sync });
    commitOne(wal);
    const a = wal.whenDurable()!;
    expect(held.count).toBe(1);
    commitOne(wal); // written after the sync started: that sync does not cover it
    const b = wal.whenDurable()!;
    commitOne(wal);
    const c = wal.whenDurable()!;
    const aAgain = wal.whenDurable(1)!; // a position the running sync covers
    expect(held.count).toBe(1); // one sync at a time
    await held.finish();
    expect(await state(a)).toBe('resolved');
    expect(await state(aAgain)).toBe('resolved');
    expect(await state(b)).toBe('pending');
    expect(await state(c)).toBe('pending');
    expect(held.count).toBe(1); // the next one started by itself, for both
    await held.finish();
    expect([await state(b), await state(c)]).toEqual(['resolved', 'resolved']);
    expect(wal.stats()).toEqual({ syncs: 2, failedSyncs: 0, commitsElsewhere: 0 });
    expect(wal.position()).toBe(3);
  });

  it("counts the writer thread's COMMITs apart: a response waits for one begun, and only a sync started after it ended serves it", async () => {
    const held = heldSyncs();
    const counters = new Int32Array(new SharedArrayBuffer(12));
    const wal = createWalSync({ file: '/nonexistent/db', sync: held.sync, externalCommits: { counters, begun: 0, ended: 1, durable: 2, syncsItself: () => false } });
    Atomics.add(counters, 0, 1); // the thread's COMMIT has begun: a reader may see it
    const response = wal.whenDurable()!;
    expect(response).toBeInstanceOf(Promise);
    commitOne(wal); // a commit of the main connection meanwhile
    await held.finish(); // the first sync started before either
    expect(await state(response)).toBe('pending');
    // The second sync covers the main connection's commit, but the thread's COMMIT has not ended:
    // it must not count for it (a count of both together would have said it does).
    expect(held.count).toBe(1);
    Atomics.add(counters, 1, 1); // the COMMIT ends while the second sync runs
    await held.finish();
    expect(await state(response)).toBe('pending');
    expect(held.count).toBe(1); // a third, started after the COMMIT ended
    await held.finish();
    expect(await state(response)).toBe('resolved');
    expect(wal.whenDurable()).toBeNull();
    expect(wal.stats()).toEqual({ syncs: 3, failedSyncs: 0, commitsElsewhere: 1 });
  });

  it("leaves the writer thread's COMMITs to the thread's own syncs while it runs, and syncs them itself once it stopped", async () => {
    const held = heldSyncs();
    const counters = new Int32Array(new SharedArrayBuffer(12));
    let threadRuns = true;
    const wal = createWalSync({ file: '/nonexistent/db', sync: held.sync, externalCommits: { counters, begun: 0, ended: 1, durable: 2, syncsItself: () => threadRuns } });
    // The thread's first COMMIT: a response waits for it, and no sync of this module starts for it.
    Atomics.add(counters, 0, 1);
    const first = wal.whenDurable()!;
    expect(first).toBeInstanceOf(Promise);
    expect(held.count).toBe(0);
    Atomics.add(counters, 1, 1);
    // The thread's sync returned (the shared count first, then its message).
    Atomics.store(counters, 2, 1);
    expect(wal.whenDurable()).toBeNull(); // the shared count alone answers a new response
    wal.noteElsewhere(1, null);
    expect(await state(first)).toBe('resolved');
    // A second COMMIT whose sync fails: the responses that waited for it fail with it.
    Atomics.add(counters, 0, 1);
    Atomics.add(counters, 1, 1);
    const second = wal.whenDurable()!;
    wal.noteElsewhere(2, Object.assign(new Error('WAL sync failed: EIO'), { code: 'SQLITE_IOERR_FSYNC' }));
    await expect(second).rejects.toMatchObject({ code: 'SQLITE_IOERR_FSYNC' });
    // A third COMMIT, and the thread stops before syncing it: this module syncs it.
    Atomics.add(counters, 0, 1);
    Atomics.add(counters, 1, 1);
    const third = wal.whenDurable()!;
    expect(held.count).toBe(0);
    threadRuns = false;
    wal.noteElsewhere(null, null);
    expect(held.count).toBe(1);
    await held.finish();
    expect(await state(third)).toBe('resolved');
    expect(wal.whenDurable()).toBeNull();
  });

  it('a failed sync fails the callers it served with a storage error, and the next caller gets a new sync', async () => {
    const held = heldSyncs();
    const wal = createWalSync({ file: '/nonexistent/db', sync: held.sync });
    commitOne(wal);
    const a = wal.whenDurable()!;
    commitOne(wal);
    const b = wal.whenDurable()!;
    await held.finish(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    await expect(a).rejects.toMatchObject({ code: 'SQLITE_IOERR_FSYNC', message: 'WAL sync failed: EIO: i/o error, fdatasync' });
    expect(await state(b)).toBe('pending'); // not covered by the failed sync: it has its own
    await held.finish();
    expect(await state(b)).toBe('resolved');
    expect(wal.stats()).toMatchObject({ syncs: 2, failedSyncs: 1 });
  });

  it('idle() resolves when the sync in flight returns, also after a failure', async () => {
    const held = heldSyncs();
    const wal = createWalSync({ file: '/nonexistent/db', sync: held.sync });
    expect(await state(wal.idle())).toBe('resolved');
    commitOne(wal);
    void wal.whenDurable()!.catch(() => undefined);
    const idle = wal.idle();
    expect(await state(idle)).toBe('pending');
    await held.finish(new Error('boom'));
    expect(await state(idle)).toBe('resolved');
  });

  it('the default sync runs on a real -wal file without failing, and treats a missing one as nothing to sync', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'wal-sync-'));
    try {
      const file = path.join(dir, 'db.sqlite');
      const wal = createWalSync({ file });
      commitOne(wal);
      await wal.whenDurable(); // no -wal file yet: nothing was written through it
      writeFileSync(`${file}-wal`, 'frames');
      commitOne(wal);
      await wal.whenDurable();
      expect(wal.stats()).toMatchObject({ syncs: 2, failedSyncs: 0 });
      await wal.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
