/**
 * 0016: the delivery queue's index holds the queue only: `(endpoint_id, next_attempt_at) WHERE
 * state = 'pending'` replaces 0003's `(endpoint_id, state, next_attempt_at)` (ADR 0025).
 *
 * A claim began by probing every active endpoint for due work, so its cost grew with the number
 * of endpoints in the whole service, busy or not: measured (docs/performance.md, "Many endpoints"),
 * 1,000 idle endpoints of other lenders doubled PostgreSQL's CPU per delivery (0.18 to 0.36 ms) and
 * cut deliveries from 2,630 to 1,919/s. The worker now finds the endpoints that have pending
 * deliveries by skipping through this index (one index probe per such endpoint), and only those
 * are probed. The index holds pending rows only, so it stays the size of the queue whatever the
 * history kept, and a delivered row's new version adds no entry to it.
 *
 * Both databases take the same statement. The worker's statements spell `state = 'pending'` as a
 * literal, which is what lets either planner use a partial index (a bound parameter would not).
 * Other readers of `(endpoint_id, state)` (the portal's delivery list filtered by state, replays
 * of failed deliveries, deleting an endpoint) are served by the `(endpoint_id, event_id)` unique
 * index's prefix instead, reading an endpoint's history kept (30 days) rather than one state's.
 * On PostgreSQL the build reads the whole table under a lock that holds writes for its duration
 * (the migrator runs in a transaction, so not CONCURRENTLY): seconds for millions of rows.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index webhook_deliveries_pending on webhook_deliveries (endpoint_id, next_attempt_at) where state = 'pending'`.execute(db);
  await db.schema.dropIndex('webhook_deliveries_endpoint_due').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('webhook_deliveries_endpoint_due').on('webhook_deliveries').columns(['endpoint_id', 'state', 'next_attempt_at']).execute();
  await db.schema.dropIndex('webhook_deliveries_pending').execute();
}
