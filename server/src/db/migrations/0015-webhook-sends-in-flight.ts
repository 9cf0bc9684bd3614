/**
 * 0015: how many sends each delivery worker holds per endpoint, kept in a small table of its own
 * (ADR 0021), instead of being counted from the deliveries' leases.
 *
 * The per-endpoint cap counted live leases through the `(endpoint_id, leased_until)` index. On
 * PostgreSQL every claim and every result leaves a dead row version with that index entry behind,
 * and the dead versions of the last minute still carry a lease end in the future: each count
 * walked every delivery claimed since the last VACUUM. Measured (docs/performance.md, "Webhook
 * delivery throughput"), 60,000 deliveries: the database's CPU per delivery rose from 0.29 to
 * 0.78 ms and throughput fell to 1,003/s, about the target. Now:
 * - `webhook_in_flight`: one row per endpoint and worker (a random id per worker process), with
 *   the sends that worker holds there (claimed, result not yet written) and until when the count
 *   holds (the lease's length after the worker last wrote it: a worker that dies stops counting
 *   when its leases would have passed). The cap reads the sum over live rows: a handful of rows,
 *   whatever the delivery rate. A worker rewrites its rows' counts in the transactions that claim
 *   and record, so the count commits with the leases it describes.
 * - The lease index goes: nothing else reads it. So does 0003's `(state, next_attempt_at)` index,
 *   which no statement reads (claims go by endpoint: `(endpoint_id, state, next_attempt_at)`)
 *   and every result had to maintain. On PostgreSQL a claim then changes no indexed column of the
 *   delivery row, so with free room in its page (fillfactor 75 from now on) it is a HOT update:
 *   no new entry in any of the table's indexes, and its dead version is pruned with the page. A
 *   result still moves the row in the endpoint's due index (its state changes).
 * - `webhook_in_flight` changes only in place (its key never changes): fillfactor 50 keeps its
 *   updates HOT as well.
 * SQLite does the same without the storage parameters (it updates rows in place); it loses two
 * indexes to maintain on claims and results.
 */
import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhook_in_flight')
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('worker_id', 'text', (c) => c.notNull())
    .addColumn('sends', 'integer', (c) => c.notNull())
    .addColumn('held_until', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('webhook_in_flight_pkey', ['endpoint_id', 'worker_id'])
    .execute();
  await db.schema.dropIndex('webhook_deliveries_leased').execute();
  await db.schema.dropIndex('webhook_deliveries_due').execute();
  if (isPostgres(db)) {
    await sql`alter table webhook_in_flight set (fillfactor = 50)`.execute(db);
    await sql`alter table webhook_deliveries set (fillfactor = 75)`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) await sql`alter table webhook_deliveries reset (fillfactor)`.execute(db);
  await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['state', 'next_attempt_at']).execute();
  await db.schema.createIndex('webhook_deliveries_leased').on('webhook_deliveries').columns(['endpoint_id', 'leased_until']).execute();
  await db.schema.dropTable('webhook_in_flight').execute();
}
