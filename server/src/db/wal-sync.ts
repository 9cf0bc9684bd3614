/**
 * Durable commits without blocking the event loop (SQLite; ADR 0017).
 *
 * How it works. In WAL mode a transaction is durable once its frames in the `-wal` file are on
 * disk; the database file only changes at checkpoints, which sync the WAL first. With
 * `synchronous = FULL` SQLite fsyncs the WAL inside every COMMIT, and better-sqlite3 runs that
 * COMMIT on the event loop: the whole process stood still for each fsync (4 to 5 ms on this disk,
 * about a third of the event loop's time at 1,000 creates/s). So the writer runs with
 * `synchronous = NORMAL` (its COMMIT only writes the frames into the OS's cache; SQLite still
 * syncs the WAL header when it starts the WAL over and the WAL before every checkpoint, so the
 * file is never corrupted) and this module makes the commits durable itself, off the event loop:
 * `fdatasync` of the WAL file on libuv's thread pool (any descriptor of the file flushes the
 * file's pages).
 *
 * - Positions. Every write transaction that ends on the writer connection moves `position()` one
 *   on (`noteStatement`, called by database.ts after each statement on the writer: a statement
 *   that is not read-only marks the transaction as writing, and the statement that leaves the
 *   connection outside a transaction ends it; and by the delivery worker for a COMMIT of the
 *   off-loop writer, made while it held the writer connection, ADR 0048). Everything up to a
 *   position is in the OS's hands.
 *   The writer thread's COMMITs (sqlite-writer-thread.ts) are counted apart, in shared memory
 *   (`externalCommits`): `whenDurable` waits for every one begun by then (a reader may see it
 *   already), and a sync serves only the ones that had ended when it started. While the thread
 *   runs it syncs after its own COMMITs (ADR 0035) and says so (`noteElsewhere`, and the shared
 *   `durable` count): this module starts no sync for them then, and syncs them itself once the
 *   thread has stopped.
 * - Syncs. One `fdatasync` at a time. A sync started at position P makes everything up to P
 *   durable when it returns, since everything up to P was written before it started. Callers
 *   that need a later position wait for the next sync, which starts as soon as the one in flight
 *   ends: every sync serves every commit that came before it (a group commit of fsyncs).
 * - `whenDurable(p)`: null when p is durable already (no promise on the common path), else a
 *   promise. A failed sync rejects the callers it was serving with its error; the next caller
 *   starts a new sync.
 *
 * The rule that follows: nothing committed reaches anyone (a response, a webhook, a write's
 * caller) before it is durable. Where it is kept:
 * - database.ts: a write through Kysely (an autocommit statement, a transaction's COMMIT) returns
 *   only once durable; the wait happens after the connection is given back, so it holds nobody up;
 * - group-commit.ts: a batch commits with `COMMIT_WITHOUT_WAITING` and resolves its units when the
 *   sync returns, while the next batch already runs;
 * - http/durable-responses.ts: every HTTP response waits until what was committed before it was
 *   sent is durable (a poll, a replay, a portal page can read a commit a few ms before its sync);
 * - the delivery worker waits before it sends what it claimed, for the last commit that needs the
 *   disk (`requiredPosition`): not for its own bookkeeping (`COMMIT_BOOKKEEPING`), which a power
 *   loss may undo without harm (the deliveries are sent again) and which the sync it starts after
 *   each cycle, unwaited, makes durable shortly after.
 * A process crash loses nothing either way (the frames are in the OS's cache); what the sync
 * protects against is an OS crash or power loss.
 */
import { close as closeFd, fdatasync, open as openFd } from 'node:fs';

/**
 * The COMMIT of a transaction whose owner waits for durability itself, after giving the
 * connection back (group-commit.ts, the delivery worker). Any other statement that ends a write
 * transaction on the writer waits before it returns (database.ts).
 */
export const COMMIT_WITHOUT_WAITING = 'commit -- durability awaited by the caller (wal-sync.ts)';

/**
 * The COMMIT of the delivery worker's cycles: its own bookkeeping (claims, results), which nothing
 * needs durable before it is acted on (see `requiredPosition`). Its caller waits for nothing after
 * it but starts a sync, so the bookkeeping a power loss could undo stays about one sync long.
 */
export const COMMIT_BOOKKEEPING = 'commit -- bookkeeping, made durable by the next sync (wal-sync.ts)';

export interface WalSync {
  /** Write transactions ended on the writer connection so far. */
  position(): number;
  /**
   * The position of the last write transaction that a reader must see durable before acting on it:
   * every one but those that ended with `COMMIT_BOOKKEEPING`. The delivery worker waits for this
   * one before it sends what it claimed (the API's events), not for its own earlier cycles.
   */
  requiredPosition(): number;
  /** null when everything up to `position` (default: now) is on disk, else a promise for then. */
  whenDurable(position?: number): Promise<void> | null;
  /** A sync is in flight. */
  syncing(): boolean;
  /** Resolves when no sync is in flight (at once when none is). Never rejects. */
  idle(): Promise<void>;
  /**
   * database.ts: after each statement the writer connection ran (also after one that failed).
   * True when it ended a write transaction (the position moved on). `bookkeeping`: the statement
   * was `COMMIT_BOOKKEEPING`.
   */
  noteStatement(readonly: boolean, inTransaction: boolean, bookkeeping?: boolean): boolean;
  stats(): WalSyncStats;
  /**
   * The other connection (`externalCommits`) synced: its COMMITs ended before that sync started
   * (`ended`) are durable, or failed to be (`error`); `ended` null: it stopped, and what it
   * committed is this module's to sync.
   */
  noteElsewhere(ended: number | null, error: Error | null): void;
  /** Waits for the sync in flight and closes the file. */
  close(): Promise<void>;
}

export interface WalSyncStats {
  syncs: number;
  failedSyncs: number;
  /** COMMITs ended on the writer thread (`externalCommits`); `position()` counts the writer connection's. */
  commitsElsewhere: number;
}

export interface WalSyncOptions {
  /** The database file; the WAL is `<file>-wal`. */
  file: string;
  /**
   * Makes the WAL's written frames durable (default: `fdatasync` of `<file>-wal`, opened on first
   * use). Tests pass their own to hold a sync and look at what waits for it.
   */
  sync?: () => Promise<void>;
  /**
   * Commits made on another connection of this process (the writer thread,
   * sqlite-writer-thread.ts): shared counters of COMMITs begun and ended there. A response could
   * show a commit once it has begun, and a sync covers it only if it started after it ended, so
   * `whenDurable` waits for the ones begun by then and a sync serves the ones ended before it.
   */
  externalCommits?: {
    counters: Int32Array;
    begun: number;
    ended: number;
    /** Slot of the COMMITs made durable by the other connection's own syncs. */
    durable: number;
    /** Whether the other connection syncs after every COMMIT it ends (then this module waits for it instead of syncing). */
    syncsItself: () => boolean;
  };
}

interface Waiter {
  position: number;
  /** Writer-thread COMMITs begun when the waiter came (`externalCommits`). */
  elsewhere: number;
  resolve(): void;
  reject(err: unknown): void;
}

export function createWalSync(options: WalSyncOptions): WalSync {
  const wal = walFile(`${options.file}-wal`);
  const sync = options.sync ?? wal.sync;
  const stats = { syncs: 0, failedSyncs: 0 };
  let committed = 0;
  let required = 0;
  let durable = 0;
  let writing = false; // the open transaction has written
  let inFlight: Promise<void> | null = null;
  let waiters: Waiter[] = [];
  // The writer thread's commits are a second count, kept apart: a sum could let a later commit
  // of the main connection stand in for a thread COMMIT that has not ended.
  const external = options.externalCommits;
  const begunElsewhere = external ? () => Atomics.load(external.counters, external.begun) : () => 0;
  const endedElsewhere = external ? () => Atomics.load(external.counters, external.ended) : () => 0;
  const syncedElsewhere = external ? () => Atomics.load(external.counters, external.durable) : () => 0;
  const syncsElsewhere = external ? external.syncsItself : () => false;
  // The other connection's COMMITs known durable: through this module's syncs or its own.
  let durableElsewhere = 0;
  const durableOutside = () => Math.max(durableElsewhere, syncedElsewhere());
  /** This waiter needs a sync of this module's: a commit of its own, or one elsewhere that nobody else syncs. */
  const needsSync = (w: { position: number; elsewhere: number }) =>
    w.position > durable || (w.elsewhere > durableOutside() && !syncsElsewhere());

  function start(): void {
    const target = committed;
    const targetElsewhere = endedElsewhere();
    stats.syncs++;
    inFlight = sync().then(
      () => {
        if (target > durable) durable = target;
        if (targetElsewhere > durableElsewhere) durableElsewhere = targetElsewhere;
        settle(target, targetElsewhere, null);
      },
      (err: unknown) => {
        stats.failedSyncs++;
        // The error SQLite itself gives when the fsync inside a COMMIT fails, so callers map it
        // the same way (a 503: the database cannot serve us right now).
        const message = err instanceof Error ? err.message : String(err);
        settle(target, targetElsewhere, Object.assign(new Error(`WAL sync failed: ${message}`), { code: 'SQLITE_IOERR_FSYNC', cause: err }));
      },
    );
    void inFlight.then(() => {
      inFlight = null;
      if (waiters.some(needsSync)) start();
    });
  }

  /** Settles the waiters that the sync up to `target` served; the rest wait for the next one. */
  function settle(target: number, targetElsewhere: number, err: unknown): void {
    const elsewhere = err === null ? Math.max(targetElsewhere, durableOutside()) : targetElsewhere;
    const later: Waiter[] = [];
    for (const w of waiters) {
      if (w.position > target || w.elsewhere > elsewhere) later.push(w);
      else if (err === null) w.resolve();
      else w.reject(err);
    }
    waiters = later;
  }

  return {
    position: () => committed,
    requiredPosition: () => required,
    whenDurable(position = committed) {
      // Every thread COMMIT begun by now counts: a reader may already see it.
      const elsewhere = begunElsewhere();
      if (position <= durable && elsewhere <= durableOutside()) return null;
      return new Promise<void>((resolve, reject) => {
        const waiter = { position, elsewhere, resolve, reject };
        waiters.push(waiter);
        if (inFlight === null && needsSync(waiter)) start();
      });
    },
    noteElsewhere(ended, error) {
      if (ended !== null && error === null && ended > durableElsewhere) durableElsewhere = ended;
      if (waiters.length === 0) return;
      const later: Waiter[] = [];
      for (const w of waiters) {
        const outside = w.elsewhere <= durableOutside();
        if (outside && w.position <= durable) w.resolve();
        // The waiters that sync was serving: what they would show is not known to be on disk.
        else if (error !== null && ended !== null && !outside && w.elsewhere <= ended) w.reject(error);
        else later.push(w);
      }
      waiters = later;
      if (inFlight === null && waiters.some(needsSync)) start();
    },
    syncing: () => inFlight !== null,
    idle: () => (inFlight === null ? Promise.resolve() : inFlight),
    noteStatement(readonly, inTransaction, bookkeeping = false) {
      if (!readonly) writing = true;
      if (!writing || inTransaction) return false;
      writing = false;
      committed++;
      if (!bookkeeping) required = committed;
      return true;
    },
    stats: () => Object.assign({}, stats, { commitsElsewhere: endedElsewhere() }),
    async close() {
      while (inFlight !== null) await inFlight;
      await wal.close();
    },
  };
}

/** The WAL file's descriptor, opened on the first sync (the file exists once anything was written). */
function walFile(file: string): { sync(): Promise<void>; close(): Promise<void> } {
  let fd: number | null = null;
  const opening = (): Promise<number | null> =>
    fd !== null
      ? Promise.resolve(fd)
      : new Promise((resolve, reject) =>
          openFd(file, 'r', (err, opened) => {
            if (err) return (err as NodeJS.ErrnoException).code === 'ENOENT' ? resolve(null) : reject(err);
            // Two first syncs cannot race: syncs run one at a time.
            fd = opened;
            resolve(opened);
          }),
        );
  return {
    async sync() {
      // No WAL file: nothing was ever written through it, so nothing waits for the disk.
      const descriptor = await opening();
      if (descriptor === null) return;
      await new Promise<void>((resolve, reject) => fdatasync(descriptor, (err) => (err ? reject(err) : resolve())));
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (fd === null) return resolve();
        const open = fd;
        fd = null;
        closeFd(open, () => resolve());
      }),
  };
}
