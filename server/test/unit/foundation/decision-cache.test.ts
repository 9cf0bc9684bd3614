/**
 * The poll cache's own rules (modules/decisions/decision-cache.ts): bounded by its bytes, oldest
 * insertion out first, a fill refused once anything was invalidated after it started, a pending
 * decision not served at or past its deadline, hits and misses counted.
 */
import { describe, expect, it } from 'vitest';
import { answerBytes, DecisionCache, ENTRY_OVERHEAD_BYTES, type CachedDecision } from '../../../src/modules/decisions/decision-cache.js';

const entry = (json: string, servedUntilMs = Infinity): CachedDecision => ({ body: answerBytes(json), tenantId: 't1', environment: 'sandbox', product: 'bnpl', servedUntilMs });
const sized = (bytes: number) => 'x'.repeat(bytes - ENTRY_OVERHEAD_BYTES);

describe('DecisionCache', () => {
  it('serves what it was given, and counts hits and misses', () => {
    const cache = new DecisionCache(10_000);
    expect(cache.set('a', entry('{"a":1}'), cache.generation)).toBe(true);
    expect(cache.get('a', 0)?.body.toString()).toBe('{"a":1}');
    expect(cache.get('b', 0)).toBeUndefined();
    expect(cache.stats()).toEqual({ entries: 1, bytes: 7 + ENTRY_OVERHEAD_BYTES, hits: 1, misses: 1 });
  });

  it('drops the oldest insertions once over its bytes, whatever was hit since', () => {
    const cache = new DecisionCache(3_000);
    for (const id of ['a', 'b', 'c']) cache.set(id, entry(sized(1_000)), cache.generation);
    expect(cache.get('a', 0)).toBeDefined(); // a hit does not reorder
    cache.set('d', entry(sized(1_000)), cache.generation);
    expect(['a', 'b', 'c', 'd'].map((id) => cache.has(id))).toEqual([false, true, true, true]);
    cache.set('e', entry(sized(2_000)), cache.generation);
    expect(['b', 'c', 'd', 'e'].map((id) => cache.has(id))).toEqual([false, false, true, true]);
    expect(cache.stats().bytes).toBe(3_000);
  });

  it('replaces an entry in place of counting it twice, and refuses one larger than the whole bound', () => {
    const cache = new DecisionCache(2_000);
    cache.set('a', entry(sized(1_000)), cache.generation);
    cache.set('a', entry(sized(1_500)), cache.generation);
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: 1_500 });
    expect(cache.set('big', entry(sized(2_001)), cache.generation)).toBe(false);
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: 1_500 });
  });

  it('refuses a fill that started before an invalidation of any decision, or a clear', () => {
    const cache = new DecisionCache(10_000);
    const started = cache.generation;
    cache.invalidate('other');
    expect(cache.set('a', entry('{}'), started)).toBe(false);
    expect(cache.has('a')).toBe(false);
    const again = cache.generation;
    cache.clear();
    expect(cache.set('a', entry('{}'), again)).toBe(false);
    expect(cache.set('a', entry('{}'), cache.generation)).toBe(true);
  });

  it('drops an invalidated decision and everything on clear, with their bytes', () => {
    const cache = new DecisionCache(10_000);
    cache.set('a', entry(sized(1_000)), cache.generation);
    cache.set('b', entry(sized(1_000)), cache.generation);
    cache.invalidate('a');
    expect([cache.has('a'), cache.has('b')]).toEqual([false, true]);
    expect(cache.stats().bytes).toBe(1_000);
    cache.clear();
    expect(cache.stats()).toMatchObject({ entries: 0, bytes: 0 });
  });

  it('keeps an answer as its UTF-8 bytes in a buffer of its own, not a slice of a shared pool', () => {
    const bytes = answerBytes('{"merchant_name":"Café Zürich"}');
    expect(bytes.toString('utf8')).toBe('{"merchant_name":"Café Zürich"}');
    expect(bytes.length).toBe(Buffer.byteLength('{"merchant_name":"Café Zürich"}'));
    expect(bytes.buffer.byteLength).toBe(bytes.length);
  });

  it('does not serve an entry at or past its deadline, and forgets it', () => {
    const cache = new DecisionCache(10_000);
    cache.set('p', entry('{"status":"needs_consumer_action"}', 5_000), cache.generation);
    expect(cache.get('p', 4_999)).toBeDefined();
    expect(cache.get('p', 5_000)).toBeUndefined();
    expect(cache.has('p')).toBe(false);
    expect(cache.stats().bytes).toBe(0);
  });
});

describe('DecisionCache under churn', () => {
  it('keeps evicting the oldest insertion after many invalidations and replacements, with its queue bounded', () => {
    const cache = new DecisionCache(100 * (100 + ENTRY_OVERHEAD_BYTES));
    const text = 'y'.repeat(100);
    // Replaced and invalidated entries leave stale items in the insertion queue; none may be evicted for them.
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 100; i++) cache.set(`r${i}`, entry(text), cache.generation);
      for (let i = 0; i < 100; i += 2) cache.invalidate(`r${i}`);
    }
    expect(cache.stats().entries).toBe(50);
    const queued = (cache as unknown as { orderIds: string[]; head: number }).orderIds.length - (cache as unknown as { head: number }).head;
    expect(queued).toBeLessThanOrEqual(2 * 50 + 1024 + 1);
    // Now full: 50 more evict exactly the 50 odd ones, oldest first, then the new ones go in order.
    for (let i = 0; i < 50; i++) cache.set(`n${i}`, entry(text), cache.generation);
    expect(cache.stats().entries).toBe(100);
    cache.set('last', entry(text), cache.generation);
    expect(cache.has('r1')).toBe(false);
    expect(cache.has('r3')).toBe(true);
    expect(cache.has('n0')).toBe(true);
    expect(cache.stats().bytes).toBe(100 * (100 + ENTRY_OVERHEAD_BYTES));
  });

  it('evicts the oldest insertions in order through 200,000 fills of a cache of 50,000 (each fill evicts one: no walk over what was evicted before)', () => {
    const cache = new DecisionCache(50_000 * (10 + ENTRY_OVERHEAD_BYTES));
    const text = 'z'.repeat(10);
    for (let i = 0; i < 200_000; i++) cache.set(`id${i}`, entry(text), cache.generation);
    expect(cache.stats().entries).toBe(50_000);
    expect(cache.has('id149999')).toBe(false);
    expect(cache.has('id150000')).toBe(true);
  });
});
