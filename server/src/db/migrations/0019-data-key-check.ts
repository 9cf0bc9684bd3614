/**
 * 0019: `data_key_checks`, one row naming the DATA_ENCRYPTION_KEY this database's sealed values
 * are sealed with (its fingerprint, never the key): what lets a process with another key refuse
 * to start instead of answering 500 wherever it meets a value it cannot open (app/data-key-check.ts,
 * ADR 0032). Empty after this migration; the first process that starts fills it.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('data_key_checks')
    // Always 1: one key per database.
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('data_key_checks').execute();
}
