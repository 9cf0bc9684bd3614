/**
 * A small in-memory cache of recent credit files: bounded, least-recently-used eviction, and a
 * time-to-live checked against a `now` the caller passes in (no clock, no timers inside).
 *
 * Keys are an HMAC of the subject under a per-process secret rather than a plain hash: name, date of
 * birth, SSN last-4 and ZIP are a small enough space that an unkeyed hash is reversible by guessing.
 */
import { createHmac } from 'node:crypto';
import type { CreditFile, CreditSubject } from './credit-data.types.js';

export interface CreditFileCacheConfig {
  /** How long a pulled file may be reused. */
  ttlMs: number;
  /** At most this many files are kept; 0 turns the cache off. */
  maxEntries: number;
}

export const CACHE_DEFAULTS: Readonly<CreditFileCacheConfig> = Object.freeze({
  ttlMs: 24 * 60 * 60 * 1000,
  maxEntries: 1_000,
});

export interface CreditFileCache {
  get(key: string, now: Date): CreditFile | undefined;
  set(key: string, file: CreditFile, now: Date): void;
  readonly size: number;
}

interface Entry {
  file: Readonly<CreditFile>;
  expiresAtMs: number;
}

export function createCreditFileCache(config: CreditFileCacheConfig): CreditFileCache {
  validateCacheConfig(config);
  // A Map iterates in insertion order, so re-inserting on every hit keeps the least recently used first.
  const entries = new Map<string, Entry>();
  return {
    get(key, now) {
      const entry = entries.get(key);
      if (!entry) return undefined;
      entries.delete(key);
      if (now.getTime() >= entry.expiresAtMs) return undefined;
      entries.set(key, entry);
      return { ...entry.file };
    },
    set(key, file, now) {
      if (config.maxEntries === 0) return;
      entries.delete(key);
      entries.set(key, { file: Object.freeze({ ...file }), expiresAtMs: now.getTime() + config.ttlMs });
      while (entries.size > config.maxEntries) {
        const oldest = entries.keys().next();
        if (oldest.done) break;
        entries.delete(oldest.value);
      }
    },
    get size() {
      return entries.size;
    },
  };
}

/**
 * The cache key of a pull. The tenant is part of it: a file pulled for one lender's application is
 * that lender's inquiry, and another lender must make its own.
 */
export function subjectCacheKey(subject: CreditSubject, tenantId: string, secret: Buffer): string {
  const parts = [
    tenantId,
    normalizeName(subject.firstName),
    normalizeName(subject.lastName),
    subject.dob.trim(),
    subject.ssnLast4?.trim() ?? '',
    subject.zip.trim(),
  ];
  // JSON keeps the parts apart: no separator character can make two subjects collide.
  return createHmac('sha256', secret).update(JSON.stringify(parts)).digest('base64url');
}

function normalizeName(name: string): string {
  return name.normalize('NFC').trim().replace(/\s+/g, ' ').toLowerCase();
}

function validateCacheConfig(config: CreditFileCacheConfig): void {
  if (!Number.isSafeInteger(config.ttlMs) || config.ttlMs < 0) throw new RangeError('cache ttlMs must be a non-negative integer');
  if (!Number.isSafeInteger(config.maxEntries) || config.maxEntries < 0) {
    throw new RangeError('cache maxEntries must be a non-negative integer');
  }
}
