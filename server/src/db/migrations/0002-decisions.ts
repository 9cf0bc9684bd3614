/**
 * 0002: decisions, their audit records, and the event outbox.
 *
 * A decision row holds what the API returns (so a poll is one indexed read) plus what the portal
 * and the verification flow need. The audit record (inputs with PII redacted, features, partial
 * scores, reasons, versions, timings) is kept apart because it is large and read rarely. Events are
 * written to `events` in the same transaction as the change they describe (the outbox); the
 * webhook worker fans them out.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('decisions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('application_id', 'text', (c) => c.notNull())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('consumer_id', 'text', (c) => c.notNull().references('consumers.id'))
    .addColumn('product', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('kyc_tier', 'text', (c) => c.notNull())
    .addColumn('kyc_status', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text')
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('requested_amount_cents', 'bigint', (c) => c.notNull())
    .addColumn('requested_plan', 'text')
    .addColumn('requested_term_months', 'integer')
    .addColumn('merchant_name', 'text', (c) => c.notNull())
    .addColumn('merchant_category', 'text', (c) => c.notNull())
    .addColumn('approved_amount_cents', 'bigint')
    .addColumn('plan', 'text')
    .addColumn('term_months', 'integer')
    .addColumn('apr', 'text')
    .addColumn('payment_frequency', 'text')
    .addColumn('schedule_json', 'text')
    .addColumn('tila_json', 'text')
    .addColumn('reasons_json', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('score', 'integer')
    .addColumn('risk_grade', 'text')
    .addColumn('engine_version', 'text')
    .addColumn('verification_token_hash', 'text', (c) => c.unique())
    .addColumn('verification_token_sealed', 'text')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await db.schema.createIndex('decisions_consumer').on('decisions').columns(['consumer_id', 'created_at']).execute();
  await db.schema.createIndex('decisions_tenant_created').on('decisions').columns(['tenant_id', 'environment', 'created_at']).execute();
  await db.schema.createIndex('decisions_pending_expiry').on('decisions').columns(['status', 'expires_at']).execute();

  await db.schema
    .createTable('decision_audits')
    .addColumn('decision_id', 'text', (c) => c.primaryKey().references('decisions.id'))
    .addColumn('record_json', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text')
    .addColumn('data_json', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_tenant_created').on('events').columns(['tenant_id', 'environment', 'created_at']).execute();
  await db.schema.createIndex('events_subject').on('events').column('subject_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['events', 'decision_audits', 'decisions']) await db.schema.dropTable(table).execute();
}
