/**
 * 0003: webhook endpoints, deliveries and attempts (docs/webhooks.md, ADR 0005).
 *
 * The delivery queue lives in the database, next to the outbox, so an event and its deliveries
 * commit in one transaction: `webhook_deliveries` holds one row per (endpoint, event), its state
 * and the time its next attempt is due; a worker leases due rows (`leased_until`, `lease_token`)
 * while it sends them. `webhook_attempts` is the history shown in the portal (30 days).
 * Endpoints are soft-deleted so their history stays readable until it is purged.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
    .addColumn('environment', 'text', (c) => c.notNull().check(inList('environment', ['sandbox', 'live'])))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('event_types_json', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull().check(inList('state', ['active', 'disabled', 'deleted'])))
    .addColumn('disabled_reason', 'text')
    .addColumn('disabled_at', 'bigint')
    .addColumn('deleted_at', 'bigint')
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('previous_secret_sealed', 'text')
    .addColumn('previous_secret_expires_at', 'bigint')
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_endpoints_scope').on('webhook_endpoints').columns(['tenant_id', 'environment', 'state']).execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id'))
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull().check(inList('state', ['pending', 'delivered', 'failed', 'cancelled'])))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint')
    .addColumn('leased_until', 'bigint')
    .addColumn('lease_token', 'text')
    .addColumn('last_attempt_at', 'bigint')
    .addColumn('last_response_status', 'integer')
    .addColumn('last_error_kind', 'text')
    .addColumn('finished_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('webhook_deliveries_endpoint_event', ['endpoint_id', 'event_id'])
    .execute();
  // Claiming: due pending rows, and per endpoint in due order.
  await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['state', 'next_attempt_at']).execute();
  await db.schema.createIndex('webhook_deliveries_endpoint_due').on('webhook_deliveries').columns(['endpoint_id', 'state', 'next_attempt_at']).execute();
  // In flight = a lease in the future; leases are cleared when an attempt is recorded, so this stays small.
  await db.schema.createIndex('webhook_deliveries_leased').on('webhook_deliveries').column('leased_until').execute();
  await db.schema.createIndex('webhook_deliveries_finished').on('webhook_deliveries').column('finished_at').execute();
  await db.schema.createIndex('webhook_deliveries_event').on('webhook_deliveries').column('event_id').execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // No foreign key: an attempt that finishes after its delivery was purged is still a fact worth keeping briefly.
    .addColumn('delivery_id', 'text', (c) => c.notNull())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('request_headers_json', 'text', (c) => c.notNull())
    .addColumn('request_body', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('error_kind', 'text')
    .addColumn('error_detail', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_attempts_delivery').on('webhook_attempts').columns(['delivery_id', 'created_at']).execute();
  await db.schema.createIndex('webhook_attempts_created').on('webhook_attempts').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['webhook_attempts', 'webhook_deliveries', 'webhook_endpoints']) await db.schema.dropTable(table).execute();
}

function inList(column: string, values: string[]) {
  return sql`${sql.ref(column)} in (${sql.join(values.map((v) => sql.lit(v)))})`;
}
