/**
 * 0026: a delivery's row costs PostgreSQL less to claim and to record (docs/performance.md,
 * "thirty-fifth session").
 *
 * - **Fillfactor 50 instead of 0015's 75** (PostgreSQL). A claim changes no indexed column, so it
 *   is a HOT update (no index entry, its dead version pruned with the page) when the new version
 *   fits in the row's page. Claims take an endpoint's due rows in order, that is whole pages of
 *   rows inserted together, and at 75 a page had room for about a third of its rows' new
 *   versions: measured over 40,000 deliveries, 20,332 of 76,482 updates were HOT; at 50, 34,877
 *   (nearly every claim), and PostgreSQL's CPU per delivery fell from 0.090 to 0.076 ms. The table
 *   takes about twice the pages for its live rows; the history purge keeps it to the retention
 *   window. Pages already written keep their fill until they are rewritten.
 * - **No index on `event_id` alone** (both databases). A result is not a HOT update (its state
 *   moves in the due and queue indexes), so it writes an entry in every index of the table, and
 *   this one, keyed by a random id, was read by one query only: a decision's detail in the portal
 *   listing the deliveries of its events, which now goes through the unique
 *   `(endpoint_id, event_id)` index over the scope's endpoints (`listDeliveriesOfEvents`).
 *   Measured: 0.073 to 0.066 ms of PostgreSQL CPU per delivery. Events are never deleted, so the
 *   foreign key never has to find a delivery by its event; a purge of events would need the index
 *   back.
 *
 * Both together, three alternating pairs of `node bench/webhooks.mjs --db postgres --events 10000`
 * against the schema before: PostgreSQL's CPU per delivery 0.092, 0.086, 0.089 to 0.070, 0.067,
 * 0.067 ms, deliveries 5,730, 6,191, 6,049 to 6,471, 6,736, 6,684/s (ADR 0049).
 *
 * On PostgreSQL the index drop takes a lock that holds writes to the table for an instant; the
 * storage parameter applies to pages written from then on, without a rewrite.
 */
import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_event').execute();
  if (isPostgres(db)) await sql`alter table webhook_deliveries set (fillfactor = 50)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) await sql`alter table webhook_deliveries set (fillfactor = 75)`.execute(db);
  await db.schema.createIndex('webhook_deliveries_event').on('webhook_deliveries').column('event_id').execute();
}
