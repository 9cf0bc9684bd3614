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
 * Freshness is unchanged: the statement runs after every request of its batch arrived, so it
 * sees everything committed before any of them arrived, like a read per request. What batching
 * saves is the cost per statement, not per row: on PostgreSQL a round trip (a socket write and
 * read on each side, a Bind and an Execute), on SQLite the read transaction every statement opens
 * (two fcntl locks on the WAL index). It adds one turn of the event loop to a read's latency.
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
}

interface Waiter {
  resolve(row: RowValues | undefined): void;
  reject(err: unknown): void;
}

export function batchedRead(options: BatchedReadOptions): (id: string) => Promise<RowValues | undefined> {
  const { fetch, keyIndex } = options;
  const maxBatch = options.maxBatch ?? 100;
  let queue: Map<string, Waiter[]> | null = null;

  function flush(): void {
    const waiting = queue!;
    queue = null;
    const ids = [...waiting.keys()];
    for (let start = 0; start < ids.length; start += maxBatch) {
      const chunk = ids.slice(start, start + maxBatch);
      let rows: RowValues[] | Promise<RowValues[]>;
      try {
        rows = fetch(chunk);
      } catch (err) {
        settle(waiting, chunk, null, err);
        continue;
      }
      if (rows instanceof Promise) rows.then((found) => settle(waiting, chunk, found, null), (err: unknown) => settle(waiting, chunk, null, err));
      else settle(waiting, chunk, rows, null);
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
        setImmediate(flush);
      }
      const waiters = queue.get(id);
      if (waiters) waiters.push({ resolve, reject });
      else queue.set(id, [{ resolve, reject }]);
    });
}
