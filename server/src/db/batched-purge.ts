/**
 * Retention deletes in small batches, with a turn of the event loop between them.
 *
 * How it works. A purge deletes whatever has expired since its last run: after a day of keyed
 * creates at a few hundred a second, hundreds of thousands of idempotency records at once. As one
 * statement that is a second or more holding the writer, and on SQLite (synchronous, on the event
 * loop of the process that also answers the API in the default `serve`) every request of every
 * lender waiting behind it: measured 1,033 ms for 200,000 records (docs/performance.md, "eleventh
 * session"). `purgeInBatches` runs the caller's delete of at most `batch` rows until one deletes
 * fewer, and yields to the event loop (setImmediate) before each next batch, so requests and
 * commits go on between batches: 1,000 records take about 5 ms. Each batch is its own statement
 * (its own transaction): a purge stopped half-way leaves only rows that the next run deletes.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { DeleteResult } from 'kysely';

/** Rows per retention delete: a few milliseconds of SQLite's time each. */
export const PURGE_BATCH = 1_000;

/** Runs `deleteBatch(batch)` (a DELETE of at most `batch` rows) until one deletes fewer; how many it deleted in all. */
export async function purgeInBatches(deleteBatch: (batch: number) => Promise<DeleteResult>, batch = PURGE_BATCH): Promise<number> {
  let total = 0;
  for (;;) {
    const n = Number((await deleteBatch(batch)).numDeletedRows);
    total += n;
    if (n < batch) return total;
    await nextTurn();
  }
}
