/**
 * Reads by primary key, coalesced per turn of the event loop: the polls that arrive together are
 * answered by one statement (docs/performance.md, "The read path").
 *
 * How it works. `read(id)` queues the id and returns a promise. The first id queued in a turn
 * schedules a flush with setImmediate, which runs after the event loop has handled every socket
 * that was ready (libuv's check phase), so every request that arrived together has queued its id
 * by then. The flush calls `fetch` with at most `maxBatch` distinct ids at a time (an id several
 * requests ask for is fetched once) and gives each caller the row whose key matches, or undefined
 * when there is none. A fetch that fails fails every read it carried, with its error: a database
 * outage is a 503 for each request, as it was with a read per request.
 *
 * With `maxBatchesInFlight` (PostgreSQL passes 1), a batch whose turn comes while that many are
 * still waiting for their answers is held: it keeps taking reads, and is flushed in the turn after
 * one of them settles. Under load that makes fewer, larger statements: each one sent is a socket
 * write that wakes a PostgreSQL backend, which on a small machine then takes the CPU from this
 * process (measured in docs/performance.md, "seventh session"). A batch is never held longer
 * than `maxHoldMs` after the oldest unanswered one went out: a statement that hangs (a stuck
 * connection, until the statement time-out ends it) must not stall every other read behind it,
 * so past that the batches go out each turn, as without the limit, until it answers. A
 * synchronous fetch (SQLite) settles within its flush, so nothing is ever held there.
 *
 * Freshness is unchanged: the statement runs after every request of its batch arrived (a held
 * batch only later still), so it sees everything committed before any of them arrived, like a
 * read per request. What batching saves is the cost per statement, not per row: on PostgreSQL a
 * round trip (a socket write and read on each side, a Bind and an Execute), on SQLite the read
 * transaction every statement opens (two fcntl locks on the WAL index). It adds one turn of the
 * event loop to a read's latency, and a held batch waits up to one round trip more.
 */
import { setImmediate } from 'node:timers';

export type RowValues = unknown[];

export interface BatchedReadOptions {
  /** The rows of these distinct ids (any order; ids without a row are left out), as arrays of values. */
  fetch(ids: string[]): RowValues[] | Promise<RowValues[]>;
  /** Where the id is in a row's values. */
  keyIndex: number;
  /** Most ids one fetch carries (default 100): a bigger batch is split into several fetches. */
  maxBatch?: number;
  /** Batches waiting for their fetches at once, at most (default: no limit). See the opening comment. */
  maxBatchesInFlight?: number;
  /** How long a batch may be held behind the oldest unanswered one, at most (default 100 ms). */
  maxHoldMs?: number;
  /** The clock and timer for `maxHoldMs` (tests pass their own). */
  timers?: HoldTimers;
}

export interface HoldTimers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const REAL_TIMERS: HoldTimers = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

interface Waiter {
  resolve(row: RowValues | undefined): void;
  reject(err: unknown): void;
}

export function batchedRead(options: BatchedReadOptions): (id: string) => Promise<RowValues | undefined> {
  const { fetch, keyIndex } = options;
  const maxBatch = options.maxBatch ?? 100;
  const maxInFlight = options.maxBatchesInFlight ?? Infinity;
  const maxHoldMs = options.maxHoldMs ?? 100;
  const timers = options.timers ?? REAL_TIMERS;
  let queue: Map<string, Waiter[]> | null = null;
  /** When each batch with a fetch not yet settled went out (their count is how many are in flight). */
  const inFlight = new Set<{ sentAt: number }>();
  /**
   * Set while the queued batch is held (its turn came while `maxInFlight` were in flight): the
   * timer that ends the hold after `maxHoldMs`, unless a batch in flight settles first.
   */
  let holdTimer: unknown = null;

  /** The held batch, in the turn after this one: the requests whose sockets are ready in this one still join it. */
  function release(): void {
    timers.clearTimeout(holdTimer);
    holdTimer = null;
    setImmediate(flush);
  }

  /** Sends the new queue's batch in its turn, or holds it behind the batches in flight for at most `maxHoldMs`. */
  function schedule(): void {
    if (inFlight.size < maxInFlight) {
      setImmediate(flush);
      return;
    }
    let oldest = Infinity;
    for (const batch of inFlight) oldest = Math.min(oldest, batch.sentAt);
    const left = oldest + maxHoldMs - timers.now();
    if (left <= 0) {
      setImmediate(flush);
      return;
    }
    holdTimer = timers.setTimeout(release, left);
  }

  function flush(): void {
    const waiting = queue!;
    queue = null;
    const ids = [...waiting.keys()];
    const batch = { sentAt: timers.now() };
    let pending = 0;
    const settled = () => {
      if (--pending > 0) return;
      inFlight.delete(batch);
      if (holdTimer !== null && inFlight.size < maxInFlight) release();
    };
    for (let start = 0; start < ids.length; start += maxBatch) {
      const chunk = ids.slice(start, start + maxBatch);
      let rows: RowValues[] | Promise<RowValues[]>;
      try {
        rows = fetch(chunk);
      } catch (err) {
        settle(waiting, chunk, null, err);
        continue;
      }
      if (rows instanceof Promise) {
        if (pending++ === 0) inFlight.add(batch);
        rows.then(
          (found) => {
            settle(waiting, chunk, found, null);
            settled();
          },
          (err: unknown) => {
            settle(waiting, chunk, null, err);
            settled();
          },
        );
      } else settle(waiting, chunk, rows, null);
    }
  }

  function settle(waiting: Map<string, Waiter[]>, chunk: string[], rows: RowValues[] | null, err: unknown): void {
    if (rows === null) {
      for (const id of chunk) for (const w of waiting.get(id)!) w.reject(err);
      return;
    }
    const byId = new Map<unknown, RowValues>();
    for (const row of rows) byId.set(row[keyIndex], row);
    for (const id of chunk) {
      const row = byId.get(id);
      for (const w of waiting.get(id)!) w.resolve(row);
    }
  }

  return (id) =>
    new Promise<RowValues | undefined>((resolve, reject) => {
      if (queue === null) {
        queue = new Map();
        // At most one flush is ever pending (this queue's), and only a flush adds to inFlight, so
        // the count checked here still holds when the flush runs.
        schedule();
      }
      const waiters = queue.get(id);
      if (waiters) waiters.push({ resolve, reject });
      else queue.set(id, [{ resolve, reject }]);
    });
}
