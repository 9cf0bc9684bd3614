/**
 * 0010: indexes for the event history API (GET /v1/events). A page is "this tenant and
 * environment, newest first by (created_at, id), below a cursor", optionally of some types only:
 * `events_history` serves it in index order without a sort, and `events_type_history` does the
 * same for a type filter. `events_tenant_created` (0002) is a prefix of `events_history`, so it
 * goes: one index more on the outbox's insert path, not two.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('events_history').on('events').columns(['tenant_id', 'environment', 'created_at', 'id']).execute();
  await db.schema.createIndex('events_type_history').on('events').columns(['tenant_id', 'environment', 'type', 'created_at', 'id']).execute();
  await db.schema.dropIndex('events_tenant_created').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('events_tenant_created').on('events').columns(['tenant_id', 'environment', 'created_at']).execute();
  await db.schema.dropIndex('events_type_history').execute();
  await db.schema.dropIndex('events_history').execute();
}
