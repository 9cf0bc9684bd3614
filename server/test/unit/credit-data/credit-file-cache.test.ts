import { describe, expect, it } from 'vitest';
import type { CreditSubject } from '../../../src/modules/credit-data/credit-data.types.js';
import { CACHE_DEFAULTS, createCreditFileCache, subjectCacheKey } from '../../../src/modules/credit-data/credit-file-cache.js';
import { emptyCreditFile } from '../../../src/modules/credit-data/gateway-contract.js';

const t0 = new Date('2026-01-15T12:00:00.000Z');
const at = (ms: number): Date => new Date(t0.getTime() + ms);
const file = (id: string) => emptyCreditFile(id, 'gateway:test');
const secret = Buffer.alloc(32, 7);

const subject: CreditSubject = {
  consumerId: '6f1c1d0e-9a9b-4a47-8c53-0d7d1b0e2f11',
  firstName: 'Philomena',
  lastName: 'Quackenbush',
  dob: '1979-03-14',
  ssnLast4: '7395',
  zip: '30341',
  sandboxProfile: null,
};

describe('credit file cache', () => {
  it('defaults to 24 hours and 1,000 entries', () => {
    expect(CACHE_DEFAULTS).toEqual({ ttlMs: 86_400_000, maxEntries: 1_000 });
  });

  it('serves a file until its TTL has passed, then forgets it', () => {
    const cache = createCreditFileCache({ ttlMs: 1_000, maxEntries: 10 });
    cache.set('k', file('f1'), t0);
    expect(cache.get('k', at(999))?.fileId).toBe('f1');
    expect(cache.get('k', at(1_000))).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('evicts the least recently used entry when full', () => {
    const cache = createCreditFileCache({ ttlMs: 10_000, maxEntries: 2 });
    cache.set('a', file('a'), t0);
    cache.set('b', file('b'), t0);
    cache.get('a', t0); // a is now the most recently used
    cache.set('c', file('c'), t0);
    expect(cache.get('b', t0)).toBeUndefined();
    expect(cache.get('a', t0)?.fileId).toBe('a');
    expect(cache.get('c', t0)?.fileId).toBe('c');
  });

  it('hands out copies, so a caller cannot change what others get', () => {
    const cache = createCreditFileCache({ ttlMs: 10_000, maxEntries: 2 });
    cache.set('a', file('a'), t0);
    const first = cache.get('a', t0);
    if (first) first.tradelines = 99;
    expect(cache.get('a', t0)?.tradelines).toBe(0);
  });

  it('keeps nothing with maxEntries 0', () => {
    const cache = createCreditFileCache({ ttlMs: 10_000, maxEntries: 0 });
    cache.set('a', file('a'), t0);
    expect(cache.get('a', t0)).toBeUndefined();
  });

  it('rejects nonsense configuration', () => {
    expect(() => createCreditFileCache({ ttlMs: -1, maxEntries: 1 })).toThrow(RangeError);
    expect(() => createCreditFileCache({ ttlMs: 1, maxEntries: 0.5 })).toThrow(RangeError);
  });
});

describe('subject cache key', () => {
  const key = (s: CreditSubject, tenant = 'tenant-a', k = secret) => subjectCacheKey(s, tenant, k);

  it('is stable across case and spacing of names, and ignores the consumer id', () => {
    expect(key({ ...subject, firstName: '  philomena ', lastName: 'QUACKENBUSH', consumerId: 'other' })).toBe(key(subject));
  });

  it('differs by tenant, by each identifying field and by secret', () => {
    const base = key(subject);
    expect(key(subject, 'tenant-b')).not.toBe(base);
    expect(key({ ...subject, dob: '1979-03-15' })).not.toBe(base);
    expect(key({ ...subject, ssnLast4: null })).not.toBe(base);
    expect(key({ ...subject, zip: '30342' })).not.toBe(base);
    expect(key(subject, 'tenant-a', Buffer.alloc(32, 8))).not.toBe(base);
  });

  it('carries no PII', () => {
    const k = key(subject);
    for (const piece of ['Philomena', 'philomena', 'Quackenbush', '1979', '7395', '30341']) expect(k).not.toContain(piece);
  });
});
