import { describe, expect, it } from 'vitest';
import { pooledBase62, type Random } from '../../../src/lib/clock.js';
import { ApiKeyCache } from '../../../src/modules/api-keys/api-key-cache.js';
import type { AuthenticatedKey } from '../../../src/modules/api-keys/api-keys.service.js';

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
