/**
 * 0006: auto loans. Dealers (the auto-loan tenants' dealer network, soft-disabled, never deleted:
 * decisions keep naming them) and the auto-loan columns of a decision, on the decision row itself
 * so a poll stays one read by primary key. BNPL rows leave them null.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('dealers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
    .addColumn('environment', 'text', (c) => c.notNull().check(sql`environment in ('sandbox', 'live')`))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('license_number', 'text')
    .addColumn('state', 'text')
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('active', 'disabled')`))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('disabled_at', 'bigint')
    .execute();
  await db.schema.createIndex('dealers_tenant').on('dealers').columns(['tenant_id', 'environment', 'created_at']).execute();

  // One statement per column: SQLite's ALTER TABLE adds one column at a time.
  await db.schema.alterTable('decisions').addColumn('channel', 'text').execute();
  await db.schema.alterTable('decisions').addColumn('dealer_id', 'text').execute();
  await db.schema.alterTable('decisions').addColumn('vin', 'text').execute();
  await db.schema.alterTable('decisions').addColumn('auto_loan_json', 'text').execute();
  await db.schema.alterTable('decisions').addColumn('buy_rate', 'text').execute();
  await db.schema.alterTable('decisions').addColumn('contract_rate', 'text').execute();
  await db.schema.alterTable('decisions').addColumn('dealer_reserve_cents', 'bigint').execute();
  await db.schema.alterTable('decisions').addColumn('ltv', 'text').execute();
  await db.schema.createIndex('decisions_dealer').on('decisions').columns(['dealer_id', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('decisions_dealer').execute();
  for (const column of ['ltv', 'dealer_reserve_cents', 'contract_rate', 'buy_rate', 'auto_loan_json', 'vin', 'dealer_id', 'channel']) {
    await db.schema.alterTable('decisions').dropColumn(column).execute();
  }
  await db.schema.dropTable('dealers').execute();
}
