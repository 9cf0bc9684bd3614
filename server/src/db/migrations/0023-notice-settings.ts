/**
 * 0023: what a tenant's adverse-action notices say about the lender (docs/portal.md,
 * "Adverse-action notices"; ADR 0047).
 *
 * Regulation B (12 CFR 1002.9(a)(2), (b)(1)) has a notice name the creditor and its address and
 * the federal agency that administers compliance for it, and FCRA 615(a) (15 U.S.C. 1681m(a))
 * names the consumer reporting agency whose report was used. None of that is known to the service,
 * so an admin enters it once per tenant; both environments use it (a sandbox notice shows the
 * layout a live one will have). One row per tenant, written whole; `updated_by` is the admin's
 * user id; `version` counts the writes, so an admin saving what someone else has changed since it
 * was loaded gets 409 instead of overwriting it.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('notice_settings')
    .addColumn('tenant_id', 'text', (c) => c.primaryKey().references('tenants.id'))
    .addColumn('creditor_name', 'text', (c) => c.notNull())
    .addColumn('creditor_address', 'text', (c) => c.notNull())
    .addColumn('creditor_phone', 'text')
    .addColumn('agency', 'text', (c) => c.notNull())
    .addColumn('cra_name', 'text')
    .addColumn('cra_address', 'text')
    .addColumn('cra_phone', 'text')
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('updated_by', 'text', (c) => c.references('users.id'))
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('notice_settings').execute();
}
