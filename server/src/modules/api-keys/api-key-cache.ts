/**
 * The in-process cache of successful API-key lookups (api-keys.service.ts explains when it may be
 * used). Keyed by the key's SHA-256 (never the key itself), bounded: at most `maxEntries`, the
 * oldest insertion goes first (a hit does not reorder, so a hit costs one Map lookup). Entries may
 * carry a maximum age (SQLite: changes made by another process are picked up within it).
 *
 * Invalidation bumps `generation`. A lookup that missed notes the generation before it reads the
 * database and fills only if nothing was invalidated meanwhile: a revocation that lands while the
 * read is in flight can never be overwritten by the row read just before it.
 */
import type { AuthenticatedKey } from './api-keys.service.js';

interface Entry {
  auth: AuthenticatedKey;
  cachedAtMs: number;
}

export class ApiKeyCache {
  private readonly entries = new Map<string, Entry>();
  private current = 0;

  constructor(
    readonly maxEntries: number,
    /** Entries older than this are not served (Infinity: only invalidation removes them). */
    readonly maxAgeMs: number,
  ) {}

  get generation(): number {
    return this.current;
  }

  get size(): number {
    return this.entries.size;
  }

  get(keyHash: string, nowMs: number): AuthenticatedKey | undefined {
    const entry = this.entries.get(keyHash);
    if (entry === undefined) return undefined;
    // A clock that went backwards also expires the entry.
    if (nowMs - entry.cachedAtMs >= this.maxAgeMs || nowMs < entry.cachedAtMs) {
      this.entries.delete(keyHash);
      return undefined;
    }
    return entry.auth;
  }

  /** Fill after a database read that started at `generation`; false when it is no longer safe to. */
  set(keyHash: string, auth: AuthenticatedKey, generation: number, nowMs: number): boolean {
    if (generation !== this.current || this.maxEntries === 0) return false;
    this.entries.delete(keyHash);
    this.entries.set(keyHash, { auth, cachedAtMs: nowMs });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    return true;
  }

  invalidateKeyHash(keyHash: string): void {
    this.current++;
    this.entries.delete(keyHash);
  }

  invalidateKeyId(keyId: string): void {
    this.current++;
    for (const [hash, entry] of this.entries) if (entry.auth.keyId === keyId) this.entries.delete(hash);
  }

  invalidateTenant(tenantId: string): void {
    this.current++;
    for (const [hash, entry] of this.entries) if (entry.auth.tenantId === tenantId) this.entries.delete(hash);
  }

  clear(): void {
    this.current++;
    this.entries.clear();
  }
}
