/**
 * 0022: password reset links for portal users (docs/portal.md, "Passwords"; ADR 0045).
 *
 * An admin of the team (or the operator, `cds users reset-password`) creates a link for one member;
 * like an invitation it carries a 256-bit token stored only as its SHA-256, works once and expires
 * (24 h). A newer link for the same user revokes the older one. `created_by` is the admin's user
 * id, or null when the operator made it from the command line.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('password_resets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_by', 'text', (c) => c.references('users.id'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('password_resets_user').on('password_resets').columns(['user_id', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('password_resets').execute();
}
