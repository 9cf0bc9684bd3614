/**
 * 0004: hosted identity verification. One row per pending decision that a consumer has opened
 * (created on the first visit), holding where the consumer is in the KYC state machine, the hashed
 * one-time code and the counters that bound guessing. Uploaded ID documents are stored sealed
 * (AES-256-GCM) in their own table.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('verifications')
    .addColumn('decision_id', 'text', (c) => c.primaryKey().references('decisions.id'))
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('tier', 'text', (c) => c.notNull())
    .addColumn('state_json', 'text', (c) => c.notNull())
    .addColumn('channel', 'text')
    .addColumn('code_hash', 'text')
    .addColumn('code_expires_at', 'bigint')
    .addColumn('code_sent_at', 'bigint')
    .addColumn('codes_sent', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();

  await db.schema
    .createTable('verification_documents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('decision_id', 'text', (c) => c.notNull().references('decisions.id'))
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'integer', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('sealed_content', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('verification_documents_decision').on('verification_documents').column('decision_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('verification_documents').execute();
  await db.schema.dropTable('verifications').execute();
}
