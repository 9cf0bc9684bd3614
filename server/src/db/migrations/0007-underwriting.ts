/**
 * 0007: the underwriting workplace (lender portal, part 2).
 *
 * - underwriting_actions: the append-only record of what people did to a decision in the portal:
 *   approve, decline, request documents, add a condition, reveal the applicant's PII, view an
 *   uploaded document, review a verification. Who (portal user id, and the name they had then, so
 *   the history survives their removal), when (the service clock), what (JSON, never PII).
 * - document_requests: an underwriter's request for documents; its hosted upload page is reached
 *   with a single-use token stored as a hash (and sealed, so the portal can show the link again).
 * - decision_conditions: approval conditions attached by an underwriter.
 * - verification_review_items: the verification review queue, one row per decision that has
 *   something for the lender to look at (a failed hard-tier verification or an uploaded document),
 *   reopened when a new document arrives.
 * - verification_documents gains the document request and type an upload answered.
 * - decisions gains the index the referral queue reads (oldest referral first).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('underwriting_actions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('decision_id', 'text', (c) => c.notNull().references('decisions.id'))
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) =>
      c.notNull().check(inList('kind', ['approved', 'declined', 'documents_requested', 'condition_added', 'pii_revealed', 'document_viewed', 'verification_reviewed'])),
    )
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('user_name', 'text', (c) => c.notNull())
    .addColumn('details_json', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('underwriting_actions_decision').on('underwriting_actions').columns(['decision_id', 'created_at']).execute();

  await db.schema
    .createTable('document_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('decision_id', 'text', (c) => c.notNull().references('decisions.id'))
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('document_types_json', 'text', (c) => c.notNull())
    .addColumn('note', 'text')
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('token_sealed', 'text', (c) => c.notNull())
    .addColumn('requested_by', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('fulfilled_at', 'bigint')
    .execute();
  await db.schema.createIndex('document_requests_decision').on('document_requests').columns(['decision_id', 'created_at']).execute();

  await db.schema
    .createTable('decision_conditions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('decision_id', 'text', (c) => c.notNull().references('decisions.id'))
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('note', 'text')
    .addColumn('added_by', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('decision_conditions_decision').on('decision_conditions').columns(['decision_id', 'created_at']).execute();

  await db.schema
    .createTable('verification_review_items')
    .addColumn('decision_id', 'text', (c) => c.primaryKey().references('decisions.id'))
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('verification_failed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('status', 'text', (c) => c.notNull().check(inList('status', ['pending', 'accepted', 'rejected'])))
    .addColumn('opened_at', 'bigint', (c) => c.notNull())
    .addColumn('reviewed_by', 'text')
    .addColumn('reviewed_at', 'bigint')
    .addColumn('review_note', 'text')
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await db.schema.createIndex('verification_review_queue').on('verification_review_items').columns(['tenant_id', 'environment', 'status', 'opened_at']).execute();

  await db.schema.alterTable('verification_documents').addColumn('document_request_id', 'text').execute();
  await db.schema.alterTable('verification_documents').addColumn('document_type', 'text').execute();

  await db.schema.createIndex('decisions_referral_queue').on('decisions').columns(['tenant_id', 'environment', 'outcome', 'completed_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('decisions_referral_queue').execute();
  await db.schema.alterTable('verification_documents').dropColumn('document_type').execute();
  await db.schema.alterTable('verification_documents').dropColumn('document_request_id').execute();
  await db.schema.dropTable('verification_review_items').execute();
  await db.schema.dropTable('decision_conditions').execute();
  await db.schema.dropTable('document_requests').execute();
  await db.schema.dropTable('underwriting_actions').execute();
}

function inList(column: string, values: string[]) {
  return sql`${sql.ref(column)} in (${sql.join(values.map((v) => sql.lit(v)))})`;
}
