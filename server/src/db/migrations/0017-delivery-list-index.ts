/**
 * 0017: SQLite only, an index in the order of the portal's list of an endpoint's deliveries,
 * `(endpoint_id, created_at, id)`, so a page is read newest first and stops after its rows.
 *
 * Without it a page sorted every delivery the endpoint kept (30 days of history): 40 to 110 ms at
 * 100,000 deliveries, measured (docs/performance.md, "eleventh session"). On SQLite that time is
 * spent on the event loop, so every API request of every lender waited behind an operator's page.
 * With it a page of any offset takes about 0.1 ms. Its cost is one index entry per delivery
 * created; a result never moves it (SQLite rewrites only the indexes whose columns change, and
 * these never do). Which index each filter of the list reads is named in the query
 * (webhooks.service.ts `deliveryListQuery`): SQLite keeps no statistics, and left to itself it read
 * a `pending` filter through this index too, 26 ms when the pending rows are the oldest.
 *
 * PostgreSQL: nothing. A result update there changes indexed columns (state, next_attempt_at), so
 * it is never HOT and writes a new entry into every index of the table, this one included: the
 * ninth session measured +13% of PostgreSQL's CPU per delivery for an index in the list's order
 * (ADR 0025). Its list runs in the database, off the event loop, and plans from statistics.
 * On SQLite the build reads the table once at start-up (a second or so per million rows).
 */
import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) return;
  await sql`create index webhook_deliveries_endpoint_created on webhook_deliveries (endpoint_id, created_at, id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) return;
  await db.schema.dropIndex('webhook_deliveries_endpoint_created').execute();
}
