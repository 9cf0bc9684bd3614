/**
 * 0009: what the portal's decision explorer and dashboard read (modules/reporting).
 *
 * - `decisions.latency_ms`: the time the service spent deciding (credit data, engine, offer: the
 *   audit record's `timings.preparedMs`), written when the decision is decided, so the dashboard's
 *   p50/p99 need no JSON parsing per decision. Null while pending, for decisions finished without
 *   the engine (verification failed, expired) and for decisions made before this migration.
 *   `double precision` (REAL on SQLite): the same IEEE double on both dialects, so percentiles of
 *   the stored values agree to the last digit.
 * - indexes for the read model: decisions by scope and status, webhook deliveries by scope and
 *   time (success rate per endpoint). Events by subject already have theirs (0002).
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('decisions').addColumn('latency_ms', 'double precision').execute();
  await db.schema.createIndex('decisions_tenant_status').on('decisions').columns(['tenant_id', 'environment', 'status', 'created_at']).execute();
  await db.schema.createIndex('webhook_deliveries_scope_created').on('webhook_deliveries').columns(['tenant_id', 'environment', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_scope_created').execute();
  await db.schema.dropIndex('decisions_tenant_status').execute();
  await db.schema.alterTable('decisions').dropColumn('latency_ms').execute();
}
