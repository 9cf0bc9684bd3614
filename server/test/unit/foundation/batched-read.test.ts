import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { batchedRead, type RowValues } from '../../../src/db/batched-read.js';

/** A fake table: rows are [value, id]; every fetch is recorded. */
function table(rows: RowValues[], fail?: (ids: string[]) => Error | null, asPromise = false) {
  const fetches: string[][] = [];
  const fetch = (ids: string[]) => {
    fetches.push(ids);
    const err = fail?.(ids);
    if (err) {
      if (asPromise) return Promise.reject(err);
      throw err;
    }
    const found = rows.filter((r) => ids.includes(r[1] as string)).reverse(); // any order
    return asPromise ? Promise.resolve(found) : found;
  };
  return { fetch, fetches };
}

describe('batchedRead', () => {
  it.each([false, true])('answers the reads of one turn with one fetch, each its own row or undefined (fetch returns a promise: %s)', async (asPromise) => {
    const t = table([['A', 'a'], ['B', 'b'], ['C', 'c']], undefined, asPromise);
    const read = batchedRead({ fetch: t.fetch, keyIndex: 1 });
    const answers = await Promise.all([read('a'), read('c'), read('missing'), read('a')]);
    expect(answers).toEqual([['A', 'a'], ['C', 'c'], undefined, ['A', 'a']]);
    expect(t.fetches).toEqual([['a', 'c', 'missing']]); // a requested twice, fetched once
  });

  it('starts a new batch for reads made after a flush', async () => {
    const t = table([['A', 'a'], ['B', 'b']]);
    const read = batchedRead({ fetch: t.fetch, keyIndex: 1 });
    expect(await read('a')).toEqual(['A', 'a']);
    await nextTurn();
    expect(await read('b')).toEqual(['B', 'b']);
    expect(t.fetches).toEqual([['a'], ['b']]);
  });

  it('splits a batch larger than maxBatch into several fetches', async () => {
    const ids = ['a', 'b', 'c', 'd', 'e'];
    const t = table(ids.map((id) => [id.toUpperCase(), id]));
    const read = batchedRead({ fetch: t.fetch, keyIndex: 1, maxBatch: 2 });
    expect(await Promise.all(ids.map(read))).toEqual(ids.map((id) => [id.toUpperCase(), id]));
    expect(t.fetches).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
  });

  it.each([false, true])('fails every read of a failed fetch with its error, and only those (fetch returns a promise: %s)', async (asPromise) => {
    const outage = new Error('database unavailable');
    const t = table([['A', 'a'], ['C', 'c']], (ids) => (ids.includes('b') ? outage : null), asPromise);
    const read = batchedRead({ fetch: t.fetch, keyIndex: 1, maxBatch: 2 });
    const settled = await Promise.allSettled([read('a'), read('b'), read('c'), read('b')]);
    expect(settled).toEqual([
      { status: 'rejected', reason: outage },
      { status: 'rejected', reason: outage },
      { status: 'fulfilled', value: ['C', 'c'] },
      { status: 'rejected', reason: outage },
    ]);
    expect(t.fetches).toEqual([['a', 'b'], ['c']]);
  });
});
