/**
 * 0025: who made the last edit of a webhook endpoint or a dealer (`updated_by`, the portal user),
 * so the 409 of a stale edit (0024) can name them, as the notice settings' does (0023): "changed by
 * Ada Admin since you loaded it". Written with the version, by the edits the version counts; other
 * writes (rotation, disable, the worker's failure counts) leave it. Null for rows edited before.
 * A plain user id, no REFERENCES: SQLite cannot drop a column a foreign key uses (so `down` could
 * not run there), and users are deactivated, never deleted.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').addColumn('updated_by', 'text').execute();
  await db.schema.alterTable('dealers').addColumn('updated_by', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('dealers').dropColumn('updated_by').execute();
  await db.schema.alterTable('webhook_endpoints').dropColumn('updated_by').execute();
}
