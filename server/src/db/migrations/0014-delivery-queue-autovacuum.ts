/**
 * 0014: PostgreSQL vacuums the webhook delivery queue after a fixed number of dead rows, not after
 * a fifth of the table. Every delivery updates its row twice (the lease, the result), and both
 * updates change indexed columns, so each leaves a dead row version and dead index entries that
 * the claim's index scans walk until VACUUM removes them. The default trigger (50 rows plus 20% of
 * the table) waits longer and longer as the table holds 30 days of history: at a million rows,
 * 200,000 dead versions. Measured without any vacuum, the database's CPU per delivery more than
 * doubled over 24,000 deliveries; with a VACUUM every second it stayed at the level of a fresh
 * table (docs/performance.md, "Webhook delivery throughput"). Autovacuum must be on, as it is by
 * default (docs/deployment.md); these are the table's own storage parameters (ANALYZE keeps its
default trigger), nothing else changes.
 *
 * SQLite: nothing to do (its updates rewrite rows in place; freed pages are reused).
 */
import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`
    alter table webhook_deliveries set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`
    alter table webhook_deliveries reset (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold)`.execute(db);
}
