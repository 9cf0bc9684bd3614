/**
 * 0027: when the last edit of a webhook endpoint or a dealer was made (`edited_at`, epoch ms),
 * written with the version and the editor (0024, 0025) by the edits the version counts, so the
 * 409 of a stale edit can say when, as a decision's does: "changed by Ada Admin at
 * 2026-06-01T10:01:00.000Z since you loaded it". Not `updated_at`: that also moves when a secret is
 * rotated, an endpoint is disabled by the worker or re-enabled, a dealer disabled or enabled,
 * none of which an edit form shows. Null for rows not edited since (the 409 then gives no time).
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').addColumn('edited_at', 'bigint').execute();
  await db.schema.alterTable('dealers').addColumn('edited_at', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('dealers').dropColumn('edited_at').execute();
  await db.schema.alterTable('webhook_endpoints').dropColumn('edited_at').execute();
}
