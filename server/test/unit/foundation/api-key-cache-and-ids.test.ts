import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { cryptoRandom, pooledBase62, pooledBytes, timeOrderedUuids, type Random } from '../../../src/lib/clock.js';
import { ApiKeyCache } from '../../../src/modules/api-keys/api-key-cache.js';
import type { AuthenticatedKey } from '../../../src/modules/api-keys/api-keys.service.js';
import { UUID_V7, unixMsOfUuid7 } from '../../support/ids.js';

const auth = (keyId: string, tenantId = 't1'): AuthenticatedKey => ({ keyId, tenantId, environment: 'sandbox', rateLimitPerSecond: null });

describe('ApiKeyCache', () => {
  it('evicts the oldest insertion beyond its bound', () => {
    const cache = new ApiKeyCache(2, Infinity);
    for (const h of ['a', 'b', 'c']) expect(cache.set(h, auth(h), cache.generation, 0)).toBe(true);
    expect(cache.size).toBe(2);
    expect(cache.get('a', 0)).toBeUndefined();
    expect(cache.get('c', 0)?.keyId).toBe('c');
  });

  it('refuses a fill that started before an invalidation (a revocation racing the read)', () => {
    const cache = new ApiKeyCache(10, Infinity);
    const startedAt = cache.generation;
    cache.invalidateKeyHash('other');
    expect(cache.set('a', auth('a'), startedAt, 0)).toBe(false);
    expect(cache.get('a', 0)).toBeUndefined();
  });

  it('drops entries by key id, by tenant, or all, and expires them by age', () => {
    const cache = new ApiKeyCache(10, 1_000);
    cache.set('h1', auth('k1', 't1'), cache.generation, 0);
    cache.set('h2', auth('k2', 't1'), cache.generation, 0);
    cache.set('h3', auth('k3', 't2'), cache.generation, 0);
    cache.invalidateKeyId('k1');
    expect(cache.get('h1', 0)).toBeUndefined();
    cache.invalidateTenant('t1');
    expect(cache.get('h2', 0)).toBeUndefined();
    expect(cache.get('h3', 999)?.keyId).toBe('k3');
    expect(cache.get('h3', 1_000)).toBeUndefined();
    cache.set('h4', auth('k4'), cache.generation, 0);
    cache.clear();
    expect(cache.size).toBe(0);
  });
});

describe('pooledBytes', () => {
  it('hands out slices of pools drawn whole, never writes a slice handed out again, and refuses more than a pool', () => {
    let calls = 0;
    let counter = 0;
    const random: Random = {
      uuid: () => 'unused',
      bytes: (n) => {
        calls++;
        return Buffer.from(Array.from({ length: n }, () => counter++ % 256));
      },
    };
    const take = pooledBytes(random, 8);
    const first = take(3);
    expect([...first]).toEqual([0, 1, 2]);
    expect([...take(3)]).toEqual([3, 4, 5]);
    expect(calls).toBe(1);
    // Two bytes left: a request for three takes a new pool (the rest is dropped), not the old one refilled.
    expect([...take(3)]).toEqual([8, 9, 10]);
    expect(calls).toBe(2);
    expect([...first]).toEqual([0, 1, 2]);
    expect(() => take(9)).toThrow(RangeError);
  });
});

describe('pooledBase62', () => {
  it('draws random bytes a pool at a time and yields base62 of the asked length', () => {
    let calls = 0;
    let counter = 0;
    const random: Random = {
      uuid: () => 'unused',
      bytes: (n) => {
        calls++;
        return Buffer.from(Array.from({ length: n }, () => counter++ % 256));
      },
    };
    const next = pooledBase62(random, 256);
    const ids = Array.from({ length: 30 }, () => next(20));
    for (const id of ids) expect(id).toMatch(/^[0-9A-Za-z]{20}$/);
    expect(new Set(ids).size).toBe(30);
    // 600 characters from bytes 0..255 repeating, 8 of every 256 rejected (no modulo bias): 3 pools.
    expect(calls).toBe(3);
  });
});

describe('timeOrderedUuids (ADR 0022)', () => {
  it('is a version 7 UUID carrying the given time, its other 74 bits drawn from the random source', () => {
    const next = timeOrderedUuids(cryptoRandom);
    for (const ms of [0, 1, 0xffff, 0x10000, Date.parse('2026-11-26T16:30:00.123Z'), 2 ** 48 - 1]) {
      const id = next(ms);
      expect(id).toMatch(UUID_V7);
      expect(unixMsOfUuid7(id)).toBe(ms);
    }
    // All bits but the version's and the variant's come from the bytes given.
    const ones: Random = { uuid: () => 'unused', bytes: (n) => Buffer.alloc(n, 0xff) };
    const zeros: Random = { uuid: () => 'unused', bytes: (n) => Buffer.alloc(n, 0) };
    expect(timeOrderedUuids(ones)(0x0123456789ab)).toBe('01234567-89ab-7fff-bfff-ffffffffffff');
    expect(timeOrderedUuids(zeros)(0x0123456789ab)).toBe('01234567-89ab-7000-8000-000000000000');
  });

  it('sorts by time as text and as bytes, so later rows append to an index', () => {
    const next = timeOrderedUuids(cryptoRandom);
    const start = Date.parse('2026-11-26T00:00:00Z');
    const times = Array.from({ length: 2_000 }, (_, i) => start + i * 997 + (i % 7) * 65_536);
    const ids = times.map((ms) => next(ms));
    const byTime = [...ids].sort((a, b) => unixMsOfUuid7(a) - unixMsOfUuid7(b));
    expect([...ids].sort()).toEqual(byTime);
    expect(ids.map(unixMsOfUuid7)).toEqual(times);
  });

  it('keeps ids of the same millisecond distinct, drawing random bytes a pool at a time', () => {
    let calls = 0;
    const random: Random = {
      uuid: () => 'unused',
      bytes: (n) => {
        calls++;
        return randomBytes(n);
      },
    };
    const next = timeOrderedUuids(random, 100); // 10 bytes per id: 10 ids per pool
    const ids = Array.from({ length: 1_000 }, () => next(1_764_000_000_000));
    expect(new Set(ids).size).toBe(1_000);
    expect(calls).toBe(100);
  });

  it('refuses what is not a Unix time in milliseconds', () => {
    const next = timeOrderedUuids(cryptoRandom);
    for (const bad of [-1, 1.5, 2 ** 48, Number.NaN]) expect(() => next(bad)).toThrow(RangeError);
  });
});
