/**
 * 0008: credit policy versions (modules/credit-policy). Every version a tenant uploads or edits is
 * kept, numbered 1, 2, 3... per tenant, environment and product; at most one is active per scope
 * (a partial unique index backs up the promote transaction). `policy_heads` holds one row per scope
 * with the active version, a generation number that every promote increments (what other processes
 * poll to know their cached policy is stale) and the last version number handed out.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('policy_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
    .addColumn('environment', 'text', (c) => c.notNull().check(sql`environment in ('sandbox', 'live')`))
    // 'bnpl' and 'auto_loan' (modules/credit-policy/policy-products.ts); each product its own key.
    .addColumn('product', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    // The name decisions carry in engine_version, e.g. bnpl-policy-sandbox-v3 (also policy.version inside the document).
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('document_json', 'text', (c) => c.notNull())
    .addColumn('scorecard_version', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('draft', 'active', 'retired')`))
    .addColumn('note', 'text')
    .addColumn('based_on', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('promoted_at', 'bigint')
    .addColumn('promoted_by', 'text', (c) => c.references('users.id'))
    .addColumn('retired_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('policy_versions_number')
    .on('policy_versions')
    .columns(['tenant_id', 'environment', 'product', 'version'])
    .unique()
    .execute();
  await db.schema
    .createIndex('policy_versions_name')
    .on('policy_versions')
    .columns(['tenant_id', 'environment', 'product', 'name'])
    .unique()
    .execute();
  await db.schema
    .createIndex('policy_versions_one_active')
    .on('policy_versions')
    .columns(['tenant_id', 'environment', 'product'])
    .unique()
    .where(sql.ref('status'), '=', 'active')
    .execute();

  await db.schema
    .createTable('policy_heads')
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('product', 'text', (c) => c.notNull())
    .addColumn('active_version_id', 'text', (c) => c.references('policy_versions.id'))
    .addColumn('generation', 'integer', (c) => c.notNull())
    .addColumn('last_version', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('policy_heads_pk', ['tenant_id', 'environment', 'product'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('policy_heads').execute();
  await db.schema.dropTable('policy_versions').execute();
}
