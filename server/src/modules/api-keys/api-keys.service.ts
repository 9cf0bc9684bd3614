/**
 * API keys: `svc_test_` (sandbox) or `svc_live_` (live) followed by 40 random base62 characters.
 *
 * Only the SHA-256 of the whole key and its last four characters are stored; the key is shown once
 * at creation and cannot be recovered. A request's key is hashed and looked up by that hash; the
 * environment is taken from the stored record and must agree with the prefix.
 *
 * Successful lookups are cached per process by hash (api-key-cache.ts: bounded by
 * API_KEY_CACHE_SIZE, 0 turns it off), together with the tenant's rate-limit override the limiter
 * needs. Unknown, malformed and revoked keys are never cached. Revocation is immediate, which here
 * means precisely:
 * - In the process that revokes (portal -> `revokeKey`) or changes a tenant's limits
 *   (`invalidateTenant`), the entry is dropped before the call returns: the next request fails.
 * - PostgreSQL, every other process: a request is served from the cache only after the freshness
 *   barrier of api-key-invalidation.ts, which guarantees that every revocation committed before the
 *   request arrived (by any process, or by hand in SQL: the trigger of migration 0012 fires
 *   whatever the writer) has been applied. While that listener is not listening, no request uses
 *   the cache. So a key revoked anywhere is refused by every server on the very next request.
 * - SQLite: one server process, so every revocation goes through this service. A change written
 *   into the file by another process (the sqlite3 shell) is seen within the cache's maximum age,
 *   SQLITE_MAX_AGE_MS; in-process changes are immediate as above.
 * A lookup that misses fills the cache only if nothing was invalidated while it read the database,
 * so a revocation racing a lookup cannot be overwritten by the row read just before it.
 */
import type { Kysely } from 'kysely';
import type { Clock, Random } from '../../lib/clock.js';
import { randomBase62 } from '../../lib/clock.js';
import { sha256Hex } from '../../lib/crypto.js';
import type { Environment } from '../../config/config.js';
import type { ApiKeysTable, Database } from '../../db/schema.js';
import type { ApiKeyCache } from './api-key-cache.js';
import { localInvalidationFeed, type InvalidationFeed } from './api-key-invalidation.js';

const PREFIX: Record<Environment, string> = { sandbox: 'svc_test_', live: 'svc_live_' };
const KEY_SHAPE = /^svc_(test|live)_[0-9A-Za-z]{32,128}$/;
const KEY_RANDOM_LENGTH = 40;

export interface AuthenticatedKey {
  keyId: string;
  tenantId: string;
  environment: Environment;
  /** The tenant's own limit for this environment (requests/s), or null for the deployment default. */
  rateLimitPerSecond: number | null;
}

export interface CreatedKey {
  id: string;
  environment: Environment;
  /** The full key: returned once, never stored. */
  key: string;
  last4: string;
  createdAt: Date;
}

export interface ApiKeySummary {
  id: string;
  environment: Environment;
  last4: string;
  label: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

/** How often last_used_at is written per key: a write per request would be a write per request. */
const LAST_USED_RESOLUTION_MS = 60_000;
/** Keys whose last write is remembered (to skip rewrites); beyond it the oldest are forgotten. */
const LAST_USED_TRACKED = 10_000;
/** SQLite: how long a cached lookup may miss a change written by another process. */
export const SQLITE_MAX_AGE_MS = 1_000;

export interface ApiKeysDeps {
  db: Kysely<Database>;
  readDb: Kysely<Database>;
  clock: Clock;
  random: Random;
  /** Null: no cache, every request reads the database. */
  cache?: ApiKeyCache | null;
  /** When the cache may be used (default: always, for a single process on SQLite). */
  feed?: InvalidationFeed;
}

export interface ApiKeyCacheStats {
  enabled: boolean;
  feed: ReturnType<InvalidationFeed['state']>;
  entries: number;
  hits: number;
  misses: number;
  /** Lookups that read the database without the cache because the feed was not ready. */
  bypassed: number;
  /** PostgreSQL: statements sent on the listener's connection, empty barriers and reads that were barriers too. */
  feedStatements: { empty: number; reads: number } | null;
}

export function createApiKeysService(deps: ApiKeysDeps) {
  const { clock, random } = deps;
  const cache = deps.cache ?? null;
  const feed = deps.feed ?? localInvalidationFeed();
  const lastUsedWritten = new Map<string, number>();
  const stats = { hits: 0, misses: 0, bypassed: 0 };

  async function createKey(
    db: Kysely<Database>,
    input: { tenantId: string; environment: Environment; label?: string | null },
  ): Promise<CreatedKey> {
    const key = PREFIX[input.environment] + randomBase62(random, KEY_RANDOM_LENGTH);
    const now = clock.now();
    const id = random.uuid();
    await db
      .insertInto('api_keys')
      .values({
        id,
        tenant_id: input.tenantId,
        environment: input.environment,
        key_hash: sha256Hex(key),
        last4: key.slice(-4),
        label: input.label ?? null,
        created_at: now.getTime(),
        last_used_at: null,
        revoked_at: null,
      })
      .execute();
    return { id, environment: input.environment, key, last4: key.slice(-4), createdAt: now };
  }

  /**
   * The key's tenant and environment, or null for a malformed, unknown or revoked key. A cache hit
   * that needs no freshness barrier (SQLite) is answered synchronously, without a promise: the
   * authentication hook runs on every /v1 request.
   */
  function authenticate(rawKey: string): AuthenticatedKey | null | Promise<AuthenticatedKey | null> {
    const shape = KEY_SHAPE.exec(rawKey);
    if (!shape) return null;
    const keyHash = sha256Hex(rawKey);
    const prefix = shape[1]!;
    if (cache === null) return lookup(keyHash, prefix);
    const ready = feed.ready();
    if (ready === true) return fromCache(cache, keyHash, prefix);
    if (ready === false) return bypass(keyHash, prefix);
    return ready.then((fresh) => (fresh ? fromCache(cache, keyHash, prefix) : bypass(keyHash, prefix)));
  }

  function bypass(keyHash: string, prefix: string): Promise<AuthenticatedKey | null> {
    stats.bypassed++;
    return lookup(keyHash, prefix);
  }

  /** Only once the feed said the cache is fresh (after the barrier, on PostgreSQL). */
  function fromCache(cache: ApiKeyCache, keyHash: string, prefix: string): AuthenticatedKey | Promise<AuthenticatedKey | null> {
    const nowMs = clock.now().getTime();
    const hit = cache.get(keyHash, nowMs);
    if (hit !== undefined) {
      stats.hits++;
      noteUse(hit.keyId, nowMs);
      return hit;
    }
    stats.misses++;
    const generation = cache.generation;
    return lookup(keyHash, prefix).then((found) => {
      if (found) cache.set(keyHash, found, generation, nowMs);
      return found;
    });
  }

  async function lookup(keyHash: string, prefix: string): Promise<AuthenticatedKey | null> {
    // One indexed lookup also fetches the tenant's rate-limit overrides the limiter needs next.
    const row = await deps.readDb
      .selectFrom('api_keys')
      .innerJoin('tenants', 'tenants.id', 'api_keys.tenant_id')
      .select([
        'api_keys.id as id',
        'api_keys.tenant_id as tenant_id',
        'api_keys.environment as environment',
        'api_keys.revoked_at as revoked_at',
        'tenants.rate_limit_live_per_s as live_limit',
        'tenants.rate_limit_sandbox_per_s as sandbox_limit',
      ])
      .where('api_keys.key_hash', '=', keyHash)
      .executeTakeFirst();
    if (!row || row.revoked_at !== null) return null;
    const prefixEnvironment: Environment = prefix === 'test' ? 'sandbox' : 'live';
    if (row.environment !== prefixEnvironment) return null;
    noteUse(row.id, clock.now().getTime());
    return {
      keyId: row.id,
      tenantId: row.tenant_id,
      environment: row.environment,
      rateLimitPerSecond: row.environment === 'live' ? row.live_limit : row.sandbox_limit,
    };
  }

  function noteUse(keyId: string, now: number): void {
    const last = lastUsedWritten.get(keyId);
    if (last !== undefined && now - last < LAST_USED_RESOLUTION_MS) return;
    lastUsedWritten.delete(keyId);
    lastUsedWritten.set(keyId, now);
    if (lastUsedWritten.size > LAST_USED_TRACKED) lastUsedWritten.delete(lastUsedWritten.keys().next().value!);
    // Best effort and off the request path: a lost "last used" time never fails a request.
    deps.db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', keyId).execute().catch(() => undefined);
  }

  async function revokeKey(input: { tenantId: string; keyId: string }): Promise<boolean> {
    const result = await deps.db
      .updateTable('api_keys')
      .set({ revoked_at: clock.now().getTime() })
      .where('id', '=', input.keyId)
      .where('tenant_id', '=', input.tenantId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    // After the commit, before answering: this process's next request already fails.
    cache?.invalidateKeyId(input.keyId);
    return Number(result.numUpdatedRows) > 0;
  }

  /** A tenant's rate limits changed (tenants.service): its cached keys carry the old ones. */
  function invalidateTenant(tenantId: string): void {
    cache?.invalidateTenant(tenantId);
  }

  function cacheStats(): ApiKeyCacheStats {
    return { enabled: cache !== null, feed: feed.state(), entries: cache?.size ?? 0, ...stats, feedStatements: feed.sent?.() ?? null };
  }

  /** Resolves once the cache can serve (PostgreSQL: its listener listens); started lazily otherwise. */
  function startCache(): Promise<void> {
    return feed.start();
  }

  /** Resolves the next time the cache's feed reaches `state` (tests, diagnostics). */
  function whenCacheFeed(state: ReturnType<InvalidationFeed['state']>): Promise<void> {
    return feed.whenState(state);
  }

  async function close(): Promise<void> {
    await feed.close();
  }

  async function listKeys(tenantId: string): Promise<ApiKeySummary[]> {
    const rows = await deps.db.selectFrom('api_keys').selectAll().where('tenant_id', '=', tenantId).orderBy('created_at', 'desc').execute();
    return rows.map(summaryOf);
  }

  function summaryOf(r: ApiKeysTable): ApiKeySummary {
    return {
      id: r.id,
      environment: r.environment,
      last4: r.last4,
      label: r.label,
      createdAt: new Date(r.created_at),
      lastUsedAt: r.last_used_at === null ? null : new Date(r.last_used_at),
      revokedAt: r.revoked_at === null ? null : new Date(r.revoked_at),
    };
  }

  /** One page of a tenant's keys, newest first, filtered by environment and status (portal). */
  async function listKeysPage(
    tenantId: string,
    options: { environment?: Environment; status?: 'active' | 'revoked'; limit?: number; offset?: number } = {},
  ): Promise<{ keys: ApiKeySummary[]; total: number }> {
    let q = deps.readDb.selectFrom('api_keys').where('tenant_id', '=', tenantId);
    if (options.environment) q = q.where('environment', '=', options.environment);
    if (options.status === 'active') q = q.where('revoked_at', 'is', null);
    if (options.status === 'revoked') q = q.where('revoked_at', 'is not', null);
    const limit = Math.min(Math.max(options.limit ?? 25, 1), 100);
    const [{ n }, rows] = await Promise.all([
      q.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
      q.selectAll().orderBy('created_at', 'desc').orderBy('id').limit(limit).offset(Math.max(options.offset ?? 0, 0)).execute(),
    ]);
    return { total: Number(n), keys: rows.map(summaryOf) };
  }

  return { createKey, authenticate, revokeKey, invalidateTenant, listKeys, listKeysPage, cacheStats, startCache, whenCacheFeed, close };
}

export type ApiKeysService = ReturnType<typeof createApiKeysService>;
