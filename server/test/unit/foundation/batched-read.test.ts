import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { batchedRead, type HoldTimers, type RowValues } from '../../../src/db/batched-read.js';

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

/** A clock and timer the test moves by hand (`maxHoldMs`). */
function manualTimers() {
  let now = 0;
  const due: { at: number; fn: () => void; cancelled: boolean }[] = [];
  const timers: HoldTimers = {
    now: () => now,
    setTimeout: (fn, ms) => {
      const t = { at: now + ms, fn, cancelled: false };
      due.push(t);
      return t;
    },
    clearTimeout: (handle) => {
      (handle as { cancelled: boolean }).cancelled = true;
    },
  };
  const advance = (ms: number) => {
    now += ms;
    for (const t of due.splice(0)) {
      if (t.cancelled) continue;
      if (t.at <= now) t.fn();
      else due.push(t);
    }
  };
  return { timers, advance };
}

describe('batchedRead with maxBatchesInFlight', () => {
  /** A table whose fetches answer only when the test says so. */
  function heldTable(rows: RowValues[]) {
    const fetches: { ids: string[]; answer(): void; fail(err: Error): void }[] = [];
    const fetch = (ids: string[]) =>
      new Promise<RowValues[]>((resolve, reject) => {
        fetches.push({ ids, answer: () => resolve(rows.filter((r) => ids.includes(r[1] as string))), fail: reject });
      });
    return { fetch, fetches };
  }

  it('holds the next batch while one is in flight, gathers every read made meanwhile into it, and sends it once the first answers', async () => {
    const t = heldTable([['A', 'a'], ['B', 'b'], ['C', 'c'], ['D', 'd']]);
    const read = batchedRead({ fetch: t.fetch, keyIndex: 1, maxBatchesInFlight: 1, timers: manualTimers().timers });
    const first = read('a');
    await nextTurn();
    expect(t.fetches.map((f) => f.ids)).toEqual([['a']]);
    // Three more turns of reads while the first statement is out: none of them is sent yet.
    const later = [read('b')];
    await nextTurn();
    later.push(read('c'));
    await nextTurn();
    later.push(read('d'), read('b'));
    await nextTurn();
    expect(t.fetches.map((f) => f.ids)).toEqual([['a']]);
    t.fetches[0]!.answer();
    expect(await first).toEqual(['A', 'a']);
    await nextTurn();
    // One statement for everything that waited, sent after the first answered (so after every one of those reads arrived).
    expect(t.fetches.map((f) => f.ids)).toEqual([['a'], ['b', 'c', 'd']]);
    t.fetches[1]!.answer();
    expect(await Promise.all(later)).toEqual([['B', 'b'], ['C', 'c'], ['D', 'd'], ['B', 'b']]);
    // Nothing in flight: the next read goes out in its own turn again.
    const next = read('a');
    await nextTurn();
    expect(t.fetches).toHaveLength(3);
    t.fetches[2]!.answer();
    expect(await next).toEqual(['A', 'a']);
  });

  it('counts a batch split into several fetches as in flight until its last fetch settles, a failed one included', async () => {
    const t = heldTable([['A', 'a'], ['B', 'b'], ['C', 'c']]);
    const read = batchedRead({ fetch: t.fetch, keyIndex: 1, maxBatch: 1, maxBatchesInFlight: 1, timers: manualTimers().timers });
    const firstBatch = Promise.allSettled([read('a'), read('b')]);
    await nextTurn();
    expect(t.fetches.map((f) => f.ids)).toEqual([['a'], ['b']]);
    const held = read('c');
    t.fetches[0]!.answer();
    await nextTurn();
    await nextTurn();
    expect(t.fetches).toHaveLength(2); // 'b' is still out
    const outage = new Error('database unavailable');
    t.fetches[1]!.fail(outage);
    expect(await firstBatch).toEqual([
      { status: 'fulfilled', value: ['A', 'a'] },
      { status: 'rejected', reason: outage },
    ]);
    await nextTurn();
    expect(t.fetches.map((f) => f.ids)).toEqual([['a'], ['b'], ['c']]);
    t.fetches[2]!.answer();
    expect(await held).toEqual(['C', 'c']);
  });

  it('holds a batch at most maxHoldMs behind an unanswered one: past that, reads go out each turn until it answers', async () => {
    const t = heldTable([['A', 'a'], ['B', 'b'], ['C', 'c'], ['D', 'd']]);
    const { timers, advance } = manualTimers();
    const read = batchedRead({ fetch: t.fetch, keyIndex: 1, maxBatchesInFlight: 1, maxHoldMs: 100, timers });
    void read('a'); // its statement hangs
    await nextTurn();
    const b = read('b');
    await nextTurn();
    advance(99);
    await nextTurn();
    expect(t.fetches.map((f) => f.ids)).toEqual([['a']]); // still held
    advance(1);
    await nextTurn();
    expect(t.fetches.map((f) => f.ids)).toEqual([['a'], ['b']]); // the hold ended, 'a' still out
    t.fetches[1]!.answer();
    expect(await b).toEqual(['B', 'b']);
    // While the hung statement is out and older than the bound, each turn's reads go out at once.
    const c = read('c');
    await nextTurn();
    expect(t.fetches.map((f) => f.ids)).toEqual([['a'], ['b'], ['c']]);
    t.fetches[2]!.answer();
    expect(await c).toEqual(['C', 'c']);
    // Once it answers, batches are held again.
    t.fetches[0]!.answer();
    await nextTurn();
    void read('a');
    await nextTurn();
    const d = read('d');
    await nextTurn();
    expect(t.fetches).toHaveLength(4);
    t.fetches[3]!.answer();
    await nextTurn();
    await nextTurn();
    expect(t.fetches.map((f) => f.ids)).toEqual([['a'], ['b'], ['c'], ['a'], ['d']]);
    t.fetches[4]!.answer();
    expect(await d).toEqual(['D', 'd']);
  });

  it('never holds a synchronous fetch (SQLite): each turn is its own statement', async () => {
    const t = table([['A', 'a'], ['B', 'b']]);
    const read = batchedRead({ fetch: t.fetch, keyIndex: 1, maxBatchesInFlight: 1 });
    expect(await read('a')).toEqual(['A', 'a']);
    expect(await read('b')).toEqual(['B', 'b']);
    expect(t.fetches).toEqual([['a'], ['b']]);
  });
});
