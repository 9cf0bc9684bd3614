/**
 * Tenants: a lender. Each has two environments, `sandbox` and `live`, that never see each other's
 * data. Creating a tenant provisions both: one API key each, and the sandbox's three seeded
 * consumers. All of it commits in one transaction, so a tenant is never half-provisioned.
 */
import type { Kysely } from 'kysely';
import type { Clock, Random } from '../../lib/clock.js';
import type { Database } from '../../db/schema.js';
import type { ApiKeysService } from '../api-keys/api-keys.service.js';
import type { ConsumersService } from '../consumers/consumers.service.js';

export interface ProvisionedTenant {
  tenantId: string;
  name: string;
  sandbox: { apiKey: string; consumers: Array<{ consumerId: string; tier: 'soft' | 'enhanced' | 'hard' }> };
  live: { apiKey: string };
}

export interface TenantRecord {
  id: string;
  name: string;
  createdAt: Date;
  rateLimitLivePerSecond: number | null;
  rateLimitSandboxPerSecond: number | null;
  settings: TenantSettings;
}

export interface TenantSettings {
  default_merchant_name?: string;
  default_merchant_category?: string;
}

export function createTenantsService(deps: {
  db: Kysely<Database>;
  clock: Clock;
  random: Random;
  apiKeys: ApiKeysService;
  consumers: ConsumersService;
}) {
  async function createTenant(input: { name: string; settings?: TenantSettings }): Promise<ProvisionedTenant> {
    const name = input.name.trim();
    if (name.length === 0 || name.length > 200) throw new RangeError('tenant name must be 1 to 200 characters');
    return deps.db.transaction().execute(async (trx) => {
      const tenantId = deps.random.uuid();
      const now = deps.clock.now().getTime();
      await trx
        .insertInto('tenants')
        .values({
          id: tenantId,
          name,
          created_at: now,
          rate_limit_live_per_s: null,
          rate_limit_sandbox_per_s: null,
          settings_json: JSON.stringify(input.settings ?? {}),
        })
        .execute();
      const sandboxKey = await deps.apiKeys.createKey(trx, { tenantId, environment: 'sandbox', label: 'Default sandbox key' });
      const liveKey = await deps.apiKeys.createKey(trx, { tenantId, environment: 'live', label: 'Default live key' });
      const consumers = await deps.consumers.seedSandboxConsumers(trx, tenantId);
      return { tenantId, name, sandbox: { apiKey: sandboxKey.key, consumers }, live: { apiKey: liveKey.key } };
    });
  }

  async function getTenant(tenantId: string): Promise<TenantRecord | null> {
    const row = await deps.db.selectFrom('tenants').selectAll().where('id', '=', tenantId).executeTakeFirst();
    if (!row) return null;
    return {
      id: row.id,
      name: row.name,
      createdAt: new Date(row.created_at),
      rateLimitLivePerSecond: row.rate_limit_live_per_s,
      rateLimitSandboxPerSecond: row.rate_limit_sandbox_per_s,
      settings: JSON.parse(row.settings_json) as TenantSettings,
    };
  }

  async function setRateLimits(tenantId: string, limits: { livePerSecond?: number | null; sandboxPerSecond?: number | null }): Promise<void> {
    await deps.db
      .updateTable('tenants')
      .set({
        ...(limits.livePerSecond !== undefined ? { rate_limit_live_per_s: limits.livePerSecond } : {}),
        ...(limits.sandboxPerSecond !== undefined ? { rate_limit_sandbox_per_s: limits.sandboxPerSecond } : {}),
      })
      .where('id', '=', tenantId)
      .execute();
    // Cached API-key lookups carry the limits: this process uses the new ones from the next request.
    deps.apiKeys.invalidateTenant(tenantId);
  }

  return { createTenant, getTenant, setRateLimits };
}

export type TenantsService = ReturnType<typeof createTenantsService>;
