/**
 * API keys: `svc_test_` (sandbox) or `svc_live_` (live) followed by 40 random base62 characters.
 *
 * Only the SHA-256 of the whole key and its last four characters are stored; the key is shown once
 * at creation and cannot be recovered. A request's key is hashed and looked up by that hash; the
 * environment is taken from the stored record and must agree with the prefix. Revocation sets
 * `revoked_at` and is effective on the very next request (there is no cache to outlive it).
 */
import type { Kysely } from 'kysely';
import type { Clock, Random } from '../../lib/clock.js';
import { randomBase62 } from '../../lib/clock.js';
import { sha256Hex } from '../../lib/crypto.js';
import type { Environment } from '../../config/config.js';
import type { ApiKeysTable, Database } from '../../db/schema.js';

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

export function createApiKeysService(deps: { db: Kysely<Database>; readDb: Kysely<Database>; clock: Clock; random: Random }) {
  const { clock, random } = deps;
  const lastUsedWritten = new Map<string, number>();

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

  /** The key's tenant and environment, or null for a malformed, unknown or revoked key. */
  async function authenticate(rawKey: string): Promise<AuthenticatedKey | null> {
    const shape = KEY_SHAPE.exec(rawKey);
    if (!shape) return null;
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
      .where('api_keys.key_hash', '=', sha256Hex(rawKey))
      .executeTakeFirst();
    if (!row || row.revoked_at !== null) return null;
    const prefixEnvironment: Environment = shape[1] === 'test' ? 'sandbox' : 'live';
    if (row.environment !== prefixEnvironment) return null;
    noteUse(row.id);
    return {
      keyId: row.id,
      tenantId: row.tenant_id,
      environment: row.environment,
      rateLimitPerSecond: row.environment === 'live' ? row.live_limit : row.sandbox_limit,
    };
  }

  function noteUse(keyId: string): void {
    const now = clock.now().getTime();
    const last = lastUsedWritten.get(keyId);
    if (last !== undefined && now - last < LAST_USED_RESOLUTION_MS) return;
    lastUsedWritten.set(keyId, now);
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
    return Number(result.numUpdatedRows) > 0;
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

  return { createKey, authenticate, revokeKey, listKeys, listKeysPage };
}

export type ApiKeysService = ReturnType<typeof createApiKeysService>;
