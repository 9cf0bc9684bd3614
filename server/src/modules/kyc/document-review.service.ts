/**
 * Verification review: what the lender must look at after identity verification.
 *
 * A decision enters the review queue (one `verification_review_items` row, status `pending`) when
 *   - its hard-tier verification failed (too many wrong codes, identity mismatch, sandbox fail), or
 *   - a document was uploaded for it: the hard tier's ID document, or documents an underwriter
 *     requested from the referral queue.
 * The row is written in the same transaction as the failure or the upload; a later upload reopens
 * a reviewed item. A reviewer (role with `documents:read`) views the documents, served from their
 * sealed storage only to that role, each viewing recorded, and marks the item accepted or rejected
 * (recorded with who and when, at the version they saw).
 */
import type { Kysely } from 'kysely';
import type { Environment } from '../../config/config.js';
import type { Database, VerificationReviewItemsTable } from '../../db/schema.js';
import { ApiError } from '../../http/errors/error-registry.js';
import type { Clock } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/crypto.js';
import type { Actor, UnderwritingService } from '../decisions/underwriting.service.js';
import type { KycState } from './kyc-state-machine.js';

export interface ReviewScope {
  tenantId: string;
  environment: Environment;
}

export interface ReviewDocument {
  id: string;
  contentType: string;
  sizeBytes: number;
  sha256: string;
  /** null: the hard tier's ID document; else the requested type it answers. */
  documentType: string | null;
  documentRequestId: string | null;
  uploadedAt: Date;
}

export interface ReviewItem {
  decisionId: string;
  kycTier: 'soft' | 'enhanced' | 'hard';
  outcome: string | null;
  verificationState: KycState['kind'] | null;
  verificationFailed: boolean;
  status: VerificationReviewItemsTable['status'];
  openedAt: Date;
  reviewedBy: string | null;
  reviewedAt: Date | null;
  reviewNote: string | null;
  version: number;
  documents: ReviewDocument[];
}

export type ReviewFilter = 'pending' | 'reviewed' | 'all';

export function createDocumentReviewService(deps: { db: Kysely<Database>; readDb: Kysely<Database>; clock: Clock; secretBox: SecretBox; underwriting: UnderwritingService }) {
  /** Put a decision in the queue (or back in it), inside the caller's transaction. */
  async function openItem(trx: Kysely<Database>, decision: { id: string; tenant_id: string; environment: Environment }, reason: 'verification_failed' | 'document_uploaded'): Promise<void> {
    const now = deps.clock.now().getTime();
    const failed = reason === 'verification_failed' ? 1 : 0;
    await trx
      .insertInto('verification_review_items')
      .values({ decision_id: decision.id, tenant_id: decision.tenant_id, environment: decision.environment, verification_failed: failed, status: 'pending', opened_at: now, reviewed_by: null, reviewed_at: null, review_note: null, version: 1 })
      .onConflict((oc) =>
        oc.column('decision_id').doUpdateSet((eb) => ({
          status: 'pending',
          opened_at: now,
          verification_failed: failed === 1 ? 1 : eb.ref('verification_review_items.verification_failed'),
          version: eb(eb.ref('verification_review_items.version'), '+', 1),
        })),
      )
      .execute();
  }

  /** The queue, oldest first; `reviewed` shows what was accepted or rejected, newest review first. */
  async function list(scope: ReviewScope, filter: ReviewFilter, page: { limit: number; offset: number }): Promise<{ items: ReviewItem[]; total: number }> {
    let q = deps.readDb.selectFrom('verification_review_items').where('tenant_id', '=', scope.tenantId).where('environment', '=', scope.environment);
    if (filter === 'pending') q = q.where('status', '=', 'pending');
    if (filter === 'reviewed') q = q.where('status', '!=', 'pending');
    const ordered = filter === 'reviewed' ? q.selectAll().orderBy('reviewed_at', 'desc') : q.selectAll().orderBy('opened_at');
    const [{ n }, rows] = await Promise.all([
      q.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
      ordered.orderBy('decision_id').limit(page.limit).offset(page.offset).execute(),
    ]);
    return { items: await itemsOf(rows), total: Number(n) };
  }

  async function get(scope: ReviewScope, decisionId: string): Promise<ReviewItem | null> {
    const row = await deps.readDb
      .selectFrom('verification_review_items')
      .selectAll()
      .where('decision_id', '=', decisionId)
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .executeTakeFirst();
    return row ? ((await itemsOf([row]))[0] ?? null) : null;
  }

  /**
   * The review items of a page: each item's decision, verification and documents read for the
   * whole page at once (three reads a page, not three per item), in the page's order.
   */
  async function itemsOf(rows: readonly VerificationReviewItemsTable[]): Promise<ReviewItem[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.decision_id);
    const [decisions, verifications, documents] = await Promise.all([
      deps.readDb.selectFrom('decisions').select(['id', 'kyc_tier', 'outcome']).where('id', 'in', ids).execute(),
      deps.readDb.selectFrom('verifications').select(['decision_id', 'state_json']).where('decision_id', 'in', ids).execute(),
      documentsByDecision(ids),
    ]);
    const decisionById = new Map(decisions.map((d) => [d.id, d]));
    const stateById = new Map(verifications.map((v) => [v.decision_id, (JSON.parse(v.state_json) as KycState).kind]));
    return rows.map((row) => {
      const decision = decisionById.get(row.decision_id);
      // The item's foreign key: a review item without its decision is a broken database.
      if (!decision) throw new Error(`review item ${row.decision_id} has no decision`);
      return {
        decisionId: row.decision_id,
        kycTier: decision.kyc_tier,
        outcome: decision.outcome,
        verificationState: stateById.get(row.decision_id) ?? null,
        verificationFailed: row.verification_failed === 1,
        status: row.status,
        openedAt: new Date(row.opened_at),
        reviewedBy: row.reviewed_by,
        reviewedAt: row.reviewed_at === null ? null : new Date(row.reviewed_at),
        reviewNote: row.review_note,
        version: row.version,
        documents: documents.get(row.decision_id) ?? [],
      };
    });
  }

  /** A decision's uploaded documents (metadata only), oldest first. */
  async function documentsOf(decisionId: string): Promise<ReviewDocument[]> {
    return (await documentsByDecision([decisionId])).get(decisionId) ?? [];
  }

  /** The uploaded documents (metadata only) of these decisions, by decision, each oldest first. */
  async function documentsByDecision(decisionIds: readonly string[]): Promise<Map<string, ReviewDocument[]>> {
    const rows = await deps.readDb
      .selectFrom('verification_documents')
      .select(['id', 'decision_id', 'content_type', 'size_bytes', 'sha256', 'document_type', 'document_request_id', 'created_at'])
      .where('decision_id', 'in', [...decisionIds])
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    const byDecision = new Map<string, ReviewDocument[]>();
    for (const d of rows) {
      const list = byDecision.get(d.decision_id) ?? [];
      list.push({
        id: d.id,
        contentType: d.content_type,
        sizeBytes: d.size_bytes,
        sha256: d.sha256,
        documentType: d.document_type ?? null,
        documentRequestId: d.document_request_id ?? null,
        uploadedAt: new Date(d.created_at),
      });
      byDecision.set(d.decision_id, list);
    }
    return byDecision;
  }

  /**
   * A document's bytes for a person allowed to see them. The viewing is recorded before a byte
   * leaves; a document of another tenant or environment is "not found".
   */
  async function openDocument(scope: ReviewScope, documentId: string, actor: Actor): Promise<{ contentType: string; bytes: Buffer; decisionId: string } | null> {
    const row = await deps.db
      .selectFrom('verification_documents')
      .selectAll()
      .where('id', '=', documentId)
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .executeTakeFirst();
    if (!row) return null;
    const bytes = deps.secretBox.open(row.sealed_content, row.id);
    await deps.db.transaction().execute((trx) =>
      deps.underwriting.recordAction(trx, { id: row.decision_id, tenant_id: row.tenant_id, environment: row.environment }, actor, 'document_viewed', { document_id: row.id, sha256: row.sha256 }),
    );
    return { contentType: row.content_type, bytes, decisionId: row.decision_id };
  }

  /** Mark an item reviewed, at the version the reviewer saw. */
  async function review(scope: ReviewScope, decisionId: string, actor: Actor, input: { result: 'accepted' | 'rejected'; note: string | null; expectedVersion: number }): Promise<ReviewItem> {
    const item = await get(scope, decisionId);
    if (!item) throw new ApiError('not_found', 'Nothing to review for this decision in this environment.');
    if (item.version !== input.expectedVersion) {
      throw new ApiError('decision_version_conflict', `This review item changed at ${(item.reviewedAt ?? item.openedAt).toISOString()} (${item.status === 'pending' ? 'a new document arrived' : `marked ${item.status}`}); reload to see the new state.`);
    }
    if (item.status !== 'pending') throw new ApiError('unprocessable_entity', `This verification was already reviewed (${item.status}); a new upload reopens it.`);
    const note = input.note?.trim() ? input.note.trim() : null;
    if (note && note.length > 1000) throw new ApiError('unprocessable_entity', 'note must be at most 1000 characters.');
    const now = deps.clock.now().getTime();
    await deps.db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('verification_review_items')
        .set({ status: input.result, reviewed_by: actor.userId, reviewed_at: now, review_note: note, version: item.version + 1 })
        .where('decision_id', '=', decisionId)
        .where('version', '=', item.version)
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) !== 1) throw new ApiError('decision_version_conflict', 'This review item was changed by someone else just now; reload to see the new state.');
      await deps.underwriting.recordAction(trx, { id: decisionId, tenant_id: scope.tenantId, environment: scope.environment }, actor, 'verification_reviewed', {
        result: input.result,
        note,
        document_ids: item.documents.map((d) => d.id),
      });
    });
    return (await get(scope, decisionId))!;
  }

  return { openItem, list, get, documentsOf, openDocument, review };
}

export type DocumentReviewService = ReturnType<typeof createDocumentReviewService>;
