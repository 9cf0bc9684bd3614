/**
 * 0011: the in-flight deliveries index leads with the endpoint. The delivery worker counts each
 * endpoint's leased deliveries (its per-endpoint concurrency cap), so `(endpoint_id, leased_until)`
 * answers that from the index; 0003's `(leased_until)` could not. A new migration, not an edit of
 * 0003: databases that already ran 0003 must end with the same index as new ones.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_leased').execute();
  await db.schema.createIndex('webhook_deliveries_leased').on('webhook_deliveries').columns(['endpoint_id', 'leased_until']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_leased').execute();
  await db.schema.createIndex('webhook_deliveries_leased').on('webhook_deliveries').column('leased_until').execute();
}
