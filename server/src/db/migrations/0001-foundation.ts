/**
 * 0001: tenants, API keys, consumers, idempotency records.
 * Landed migrations are never edited; change the schema with a new numbered file.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('tenants')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('rate_limit_live_per_s', 'integer')
    .addColumn('rate_limit_sandbox_per_s', 'integer')
    .addColumn('settings_json', 'text', (c) => c.notNull().defaultTo('{}'))
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
    .addColumn('environment', 'text', (c) => c.notNull().check(inList('environment', ['sandbox', 'live'])))
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('last4', 'text', (c) => c.notNull())
    .addColumn('label', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('api_keys_tenant').on('api_keys').columns(['tenant_id', 'environment']).execute();

  await db.schema
    .createTable('consumers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
    .addColumn('environment', 'text', (c) => c.notNull().check(inList('environment', ['sandbox', 'live'])))
    .addColumn('first_name', 'text', (c) => c.notNull())
    .addColumn('last_name', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('phone', 'text')
    .addColumn('dob', 'text', (c) => c.notNull())
    .addColumn('address_json', 'text', (c) => c.notNull())
    .addColumn('ssn_last4_sealed', 'text')
    .addColumn('identity_status', 'text', (c) => c.notNull().check(inList('identity_status', ['unverified', 'verified', 'failed'])))
    .addColumn('sandbox_profile', 'text')
    .addColumn('linked_accounts_json', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('consumers_tenant').on('consumers').columns(['tenant_id', 'environment']).execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['tenant_id', 'environment', 'idempotency_key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_expiry').on('idempotency_keys').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['idempotency_keys', 'consumers', 'api_keys', 'tenants']) {
    await db.schema.dropTable(table).execute();
  }
}

function inList(column: string, values: string[]) {
  return sql`${sql.ref(column)} in (${sql.join(values.map((v) => sql.lit(v)))})`;
}
