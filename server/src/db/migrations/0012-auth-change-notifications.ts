/**
 * 0012: PostgreSQL tells every server process when a cached API-key lookup may be stale
 * (modules/api-keys/api-key-invalidation.ts). Triggers `pg_notify('cds_auth_changes', ...)`:
 * `key:<key_hash>` when a key is revoked, deleted or re-pointed (its hash, tenant or environment
 * changes); `tenant:<id>` when a tenant's rate limits change or it is deleted; `all` on TRUNCATE.
 * Being triggers, they fire whoever writes: the service, another process, an operator's SQL.
 * The notification leaves only when the transaction commits. `last_used_at` updates notify nothing.
 *
 * SQLite: nothing to do. It runs as one server process whose services invalidate the cache
 * themselves (api-keys.service.ts explains the bound on changes written by other processes).
 */
import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`
    create function cds_notify_api_key_change() returns trigger language plpgsql as $$
    begin
      perform pg_notify('cds_auth_changes', 'key:' || old.key_hash);
      if tg_op = 'DELETE' then return old; end if;
      return new;
    end $$`.execute(db);
  await sql`
    create trigger api_keys_notify_update after update on api_keys for each row
    when (old.revoked_at is distinct from new.revoked_at or old.key_hash is distinct from new.key_hash
          or old.tenant_id is distinct from new.tenant_id or old.environment is distinct from new.environment)
    execute function cds_notify_api_key_change()`.execute(db);
  await sql`create trigger api_keys_notify_delete after delete on api_keys for each row execute function cds_notify_api_key_change()`.execute(db);

  await sql`
    create function cds_notify_tenant_change() returns trigger language plpgsql as $$
    begin
      perform pg_notify('cds_auth_changes', 'tenant:' || old.id);
      if tg_op = 'DELETE' then return old; end if;
      return new;
    end $$`.execute(db);
  await sql`
    create trigger tenants_notify_update after update on tenants for each row
    when (old.rate_limit_live_per_s is distinct from new.rate_limit_live_per_s
          or old.rate_limit_sandbox_per_s is distinct from new.rate_limit_sandbox_per_s or old.id is distinct from new.id)
    execute function cds_notify_tenant_change()`.execute(db);
  await sql`create trigger tenants_notify_delete after delete on tenants for each row execute function cds_notify_tenant_change()`.execute(db);

  await sql`
    create function cds_notify_auth_truncate() returns trigger language plpgsql as $$
    begin
      perform pg_notify('cds_auth_changes', 'all');
      return null;
    end $$`.execute(db);
  await sql`create trigger api_keys_notify_truncate after truncate on api_keys for each statement execute function cds_notify_auth_truncate()`.execute(db);
  await sql`create trigger tenants_notify_truncate after truncate on tenants for each statement execute function cds_notify_auth_truncate()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  for (const [trigger, table] of [
    ['api_keys_notify_update', 'api_keys'], ['api_keys_notify_delete', 'api_keys'], ['api_keys_notify_truncate', 'api_keys'],
    ['tenants_notify_update', 'tenants'], ['tenants_notify_delete', 'tenants'], ['tenants_notify_truncate', 'tenants'],
  ] as const) {
    await sql`drop trigger if exists ${sql.id(trigger)} on ${sql.id(table)}`.execute(db);
  }
  for (const fn of ['cds_notify_api_key_change', 'cds_notify_tenant_change', 'cds_notify_auth_truncate']) {
    await sql`drop function if exists ${sql.id(fn)}()`.execute(db);
  }
}
