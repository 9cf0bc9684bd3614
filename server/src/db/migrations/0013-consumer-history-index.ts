/**
 * 0013: the consumer history index also holds the outcome. Every create reads the consumer's
 * latest 50 decisions' outcomes (consumers.history); with `(consumer_id, created_at)` each of those
 * rows cost a table lookup (about 0.2 ms a create on SQLite, docs/performance.md), with the outcome
 * in the index the read is answered from the index alone. It replaces 0002's index (a prefix of it,
 * so the consumer's application list is served as before) rather than adding one: decisions inserts
 * maintain the same number of indexes.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('decisions_consumer').execute();
  await db.schema.createIndex('decisions_consumer').on('decisions').columns(['consumer_id', 'created_at', 'outcome']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('decisions_consumer').execute();
  await db.schema.createIndex('decisions_consumer').on('decisions').columns(['consumer_id', 'created_at']).execute();
}
