/**
 * 0016: an index of the delivery queue only, `(endpoint_id, next_attempt_at) WHERE state =
 * 'pending'`, through which a claim finds the endpoints that have work (ADR 0025).
 *
 * A claim began by probing every active endpoint for due work, so its cost grew with the number
 * of endpoints in the whole service, busy or not: measured (ADR 0025, docs/performance.md "many
 * endpoints"), 1,000 idle endpoints of other lenders more than doubled PostgreSQL's CPU per
 * delivery and cut deliveries by about 40%. The worker now finds the endpoints that have pending
 * deliveries by skipping through this index (one index probe per such endpoint), and only those
 * are probed. The index holds pending rows only, so it stays the size of the queue whatever the
 * history kept, and a delivered row's new version adds no entry to it.
 *
 * Both databases take the same statement. The worker's statements spell `state = 'pending'` as a
 * literal, which is what lets either planner use a partial index (a bound parameter would not).
 * 0003's `(endpoint_id, state, next_attempt_at)` stays, for what else reads an endpoint's
 * deliveries of one state (the portal's list filtered by state, replays of failed deliveries,
 * deleting an endpoint). Replacing it by an index in the portal list's order was measured and
 * not kept (ADR 0025). On PostgreSQL the build reads the whole table under a lock that holds
 * writes for its duration (the migrator runs in a transaction, so not CONCURRENTLY): seconds for
 * millions of rows; the index it writes is small.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index webhook_deliveries_pending on webhook_deliveries (endpoint_id, next_attempt_at) where state = 'pending'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_pending').execute();
}
