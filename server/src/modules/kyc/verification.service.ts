/**
 * Hosted identity verification: the imperative shell around the KYC state machine.
 *
 * A consumer arrives at `/verify/{token}` (the token is in `consumer_complete_url`; only its hash is
 * stored). The first visit creates the verification record. Each action loads the record, asks the
 * pure `transition` what happens, and saves the new state with an optimistic version check, so two
 * tabs or a double-click can never both count. When the machine reaches an end state, the decision
 * is finished in the SAME transaction as the state change:
 *   matched -> the engine decides (credit pull and scoring run before the transaction opens)
 *   failed  -> referred, AA-24, application.kyc_failed
 *   expired -> declined, AA-01
 *
 * One-time codes: six digits from a CSPRNG, stored as an HMAC (keyed from DATA_ENCRYPTION_KEY and
 * bound to the decision), valid 10 minutes, at most 5 wrong tries, a new code at most every 30 s and
 * at most 5 per verification (so the page cannot be used to pump SMS). The sandbox sends nothing:
 * `000000` passes, `111111` fails the verification, anything else is a wrong try.
 */
import { createHash, createHmac, randomInt } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database, DecisionsTable, VerificationsTable } from '../../db/schema.js';
import type { Clock, Random } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/crypto.js';
import { safeEqual } from '../../lib/crypto.js';
import type { Logger } from 'pino';
import type { ConsumersService } from '../consumers/consumers.service.js';
import type { DecisionsService } from '../decisions/decisions.service.js';
import type { UnderwritingService } from '../decisions/underwriting.service.js';
import { SANDBOX_MAGIC_SSN_LAST4 } from '../credit-data/sandbox-connector.js';
import { CodeDeliveryError, type CodeSender } from './code-senders.js';
import type { DocumentReviewService } from './document-review.service.js';
import { attemptsLeft, initialState, isWaiting, transition, type KycEvent, type KycState, type Tier } from './kyc-state-machine.js';

export const CODE_VALID_MS = 10 * 60_000;
export const RESEND_COOLDOWN_MS = 30_000;
export const MAX_CODES_SENT = 5;
export const MAX_DOCUMENT_BYTES = 10 * 1024 * 1024;
export const SANDBOX_PASS_CODE = '000000';
export const SANDBOX_FAIL_CODE = '111111';

export type Step = 'send_code' | 'enter_code' | 'confirm_identity' | 'upload_document';

/** Everything a page needs, and nothing more (no PII beyond masked contact details). */
export interface PageModel {
  status: 'waiting' | 'verified' | 'failed' | 'expired';
  step: Step | null;
  tier: Tier;
  sandbox: boolean;
  merchantName: string;
  channel: 'sms' | 'email';
  maskedDestination: string;
  attemptsLeft: number | null;
  resendInSeconds: number;
  codesLeft: number;
  expiresAt: Date;
  /** Outcome-neutral notice for the page (e.g. "That code is not right."). */
  notice: { kind: 'error' | 'info'; text: string } | null;
}

/** The hosted page of an underwriter's document request (same /verify/{token} address, its own token). */
export interface RequestPageModel {
  status: 'open' | 'received' | 'expired';
  sandbox: boolean;
  merchantName: string;
  documentTypes: string[];
  expiresAt: Date;
  notice: { kind: 'error' | 'info'; text: string } | null;
}

export type ActionResult = { kind: 'ok'; page: PageModel } | { kind: 'documents'; page: RequestPageModel } | { kind: 'not_found' };

/** Most files one document request takes (one per requested type). */
export const MAX_REQUESTED_FILES = 5;

export interface DocumentUpload {
  contentType: string;
  bytes: Buffer;
}

interface Loaded {
  decision: DecisionsTable;
  record: VerificationsTable;
  state: KycState;
}

export function createVerificationService(deps: {
  db: Kysely<Database>;
  clock: Clock;
  random: Random;
  secretBox: SecretBox;
  dataKey: Buffer;
  logger: Logger;
  decisions: DecisionsService;
  consumers: ConsumersService;
  codeSender: CodeSender;
  /** Document requests made in the referral queue (their upload links land on these pages). */
  underwriting: UnderwritingService;
  /** The verification review queue: failures and uploads are put in it in their own transaction. */
  reviews: DocumentReviewService;
}) {
  const { clock } = deps;
  const codeKey = createHash('sha256').update('cds-one-time-code\u0000').update(deps.dataKey).digest();
  const hashCode = (decisionId: string, code: string) => createHmac('sha256', codeKey).update(`${decisionId}:${code}`).digest('hex');

  /** Load (creating on first visit) the verification of a token; expire it if its time has passed. */
  async function load(token: string): Promise<Loaded | null> {
    const decision = await deps.decisions.findByVerificationToken(token);
    if (!decision || decision.kyc_tier === 'soft') return null;
    let record = await deps.db.selectFrom('verifications').selectAll().where('decision_id', '=', decision.id).executeTakeFirst();
    if (!record) {
      const now = clock.now().getTime();
      const fresh: VerificationsTable = {
        decision_id: decision.id,
        tenant_id: decision.tenant_id,
        environment: decision.environment,
        tier: decision.kyc_tier,
        state_json: JSON.stringify(decision.status === 'needs_consumer_action' ? initialState() : stateOfFinished(decision)),
        channel: null,
        code_hash: null,
        code_expires_at: null,
        code_sent_at: null,
        codes_sent: 0,
        created_at: now,
        updated_at: now,
        version: 1,
      };
      await deps.db.insertInto('verifications').values(fresh).onConflict((oc) => oc.column('decision_id').doNothing()).execute();
      record = await deps.db.selectFrom('verifications').selectAll().where('decision_id', '=', decision.id).executeTakeFirstOrThrow();
    }
    let loaded: Loaded = { decision, record, state: JSON.parse(record.state_json) as KycState };
    // The decision was finished by another path (a poll that expired it): the page follows the decision.
    if (isWaiting(loaded.state) && decision.status === 'complete') return { ...loaded, state: stateOfFinished(decision) };
    if (isWaiting(loaded.state) && decision.expires_at <= clock.now().getTime()) {
      await apply(loaded, { kind: 'deadline_passed' });
      loaded = (await reload(loaded.decision.id)) ?? loaded;
    }
    return loaded;
  }

  async function reload(decisionId: string): Promise<Loaded | null> {
    const decision = await deps.db.selectFrom('decisions').selectAll().where('id', '=', decisionId).executeTakeFirst();
    const record = await deps.db.selectFrom('verifications').selectAll().where('decision_id', '=', decisionId).executeTakeFirst();
    return decision && record ? { decision, record, state: JSON.parse(record.state_json) as KycState } : null;
  }

  /**
   * Run one event through the machine and persist it; finish the decision on an end state.
   * Returns false when nothing changed (rejected event, or another request got there first).
   */
  async function apply(loaded: Loaded, event: KycEvent, extraColumns: Partial<VerificationsTable> = {}): Promise<boolean> {
    let result = transition(loaded.state, event, loaded.record.tier);
    if (!result.accepted) return false;
    // Sandbox magic value `2222` ("verification fails", decisions.md section 6) holds on every tier:
    // the consumer gets through every step, and the verification fails at the end, as it does on the
    // soft tier. The helper's `pass` is "as if the consumer had done it", so it fails the same way.
    if (result.effect === 'finalize_matched' && (await sandboxVerificationFails(loaded.decision))) {
      result = { state: { kind: 'failed', reason: 'sandbox_magic_ssn' }, effect: 'finalize_failed', accepted: true };
    }
    // The engine's slow part (credit pull) happens before the transaction opens.
    const completeMatched = result.effect === 'finalize_matched' ? await deps.decisions.prepareVerifiedCompletion(loaded.decision.id) : null;
    return deps.db.transaction().execute(async (trx) => {
      const saved = await trx
        .updateTable('verifications')
        .set({ ...extraColumns, state_json: JSON.stringify(result.state), updated_at: clock.now().getTime(), version: loaded.record.version + 1 })
        .where('decision_id', '=', loaded.decision.id)
        .where('version', '=', loaded.record.version)
        .executeTakeFirst();
      if (Number(saved.numUpdatedRows) !== 1) return false;
      if (result.effect === 'finalize_matched' && completeMatched) await completeMatched(trx);
      if (result.effect === 'finalize_failed') {
        const failed = await deps.decisions.finalizeFailedVerification(trx, loaded.decision.id, result.state.kind === 'failed' ? result.state.reason : 'failed');
        // A failed hard-tier verification is for the lender to review (verification review queue).
        if (failed && loaded.record.tier === 'hard') await deps.reviews.openItem(trx, loaded.decision, 'verification_failed');
      }
      if (result.effect === 'finalize_expired') await deps.decisions.finalizeExpired(trx, loaded.decision.id);
      return true;
    });
  }

  async function sandboxVerificationFails(decision: DecisionsTable): Promise<boolean> {
    if (decision.environment !== 'sandbox') return false;
    return (await deps.consumers.revealSsnLast4(decision.consumer_id, deps.db)) === SANDBOX_MAGIC_SSN_LAST4.verificationFails;
  }

  async function page(token: string, notice: PageModel['notice'] = null): Promise<ActionResult> {
    const loaded = await load(token);
    // Not a verification token: it may be the upload link of a document request.
    if (!loaded) return documentRequestPage(token);
    return { kind: 'ok', page: await pageOf(loaded, notice) };
  }

  async function pageOf(loaded: Loaded, notice: PageModel['notice']): Promise<PageModel> {
    const { decision, record, state } = loaded;
    const consumer = await deps.consumers.findConsumer({ tenantId: decision.tenant_id, environment: decision.environment }, decision.consumer_id, deps.db);
    const channel: 'sms' | 'email' = consumer?.phone ? 'sms' : 'email';
    const now = clock.now().getTime();
    const status: PageModel['status'] = isWaiting(state) ? 'waiting' : state.kind === 'matched' ? 'verified' : state.kind === 'failed' ? 'failed' : 'expired';
    let step: Step | null = null;
    if (state.kind === 'awaiting_code') step = record.code_hash ? 'enter_code' : 'send_code';
    else if (state.kind === 'awaiting_identity') step = 'confirm_identity';
    else if (state.kind === 'awaiting_document') step = 'upload_document';
    return {
      status,
      step,
      tier: record.tier,
      sandbox: decision.environment === 'sandbox',
      merchantName: decision.merchant_name,
      channel,
      maskedDestination: consumer ? (channel === 'sms' ? maskPhone(consumer.phone!) : maskEmail(consumer.email)) : '',
      attemptsLeft: attemptsLeft(state),
      resendInSeconds: record.code_sent_at ? Math.max(0, Math.ceil((record.code_sent_at + RESEND_COOLDOWN_MS - now) / 1000)) : 0,
      codesLeft: MAX_CODES_SENT - record.codes_sent,
      expiresAt: new Date(decision.expires_at),
      notice,
    };
  }

  async function sendCode(token: string): Promise<ActionResult> {
    const loaded = await load(token);
    if (!loaded) return { kind: 'not_found' };
    const { decision, record, state } = loaded;
    if (state.kind !== 'awaiting_code') return page(token);
    const now = clock.now().getTime();
    if (record.code_sent_at && now - record.code_sent_at < RESEND_COOLDOWN_MS) {
      return page(token, { kind: 'error', text: `Please wait ${Math.ceil((record.code_sent_at + RESEND_COOLDOWN_MS - now) / 1000)} seconds before asking for a new code.` });
    }
    if (record.codes_sent >= MAX_CODES_SENT) return page(token, { kind: 'error', text: 'No more codes can be sent for this verification.' });
    const consumer = await deps.consumers.findConsumer({ tenantId: decision.tenant_id, environment: decision.environment }, decision.consumer_id, deps.db);
    if (!consumer) return { kind: 'not_found' };
    const channel: 'sms' | 'email' = consumer.phone ? 'sms' : 'email';
    const sandbox = decision.environment === 'sandbox';
    // Sandbox: no code leaves the service; the page explains the magic codes instead.
    const code = sandbox ? null : String(randomInt(0, 1_000_000)).padStart(6, '0');
    if (code !== null) {
      try {
        await deps.codeSender.send({ channel, to: channel === 'sms' ? consumer.phone! : consumer.email, code, merchantName: decision.merchant_name, validMinutes: CODE_VALID_MS / 60_000, reference: `${decision.id}:${record.codes_sent + 1}` });
      } catch (err) {
        deps.logger.error({ decisionId: decision.id, channel, err: err instanceof CodeDeliveryError ? err.message : 'send failed' }, 'one-time code could not be sent');
        return page(token, { kind: 'error', text: 'We could not send a code just now. Please try again in a moment.' });
      }
    }
    const saved = await deps.db
      .updateTable('verifications')
      .set({
        channel,
        code_hash: code === null ? 'sandbox' : hashCode(decision.id, code),
        code_expires_at: now + CODE_VALID_MS,
        code_sent_at: now,
        codes_sent: record.codes_sent + 1,
        updated_at: now,
        version: record.version + 1,
      })
      .where('decision_id', '=', decision.id)
      .where('version', '=', record.version)
      .executeTakeFirst();
    const sentText = sandbox ? 'Sandbox: no code was sent. Enter 000000 to pass or 111111 to fail.' : `We sent a 6-digit code to ${channel === 'sms' ? 'your phone' : 'your email'}.`;
    return page(token, Number(saved.numUpdatedRows) === 1 ? { kind: 'info', text: sentText } : null);
  }

  async function submitCode(token: string, rawCode: string): Promise<ActionResult> {
    const loaded = await load(token);
    if (!loaded) return { kind: 'not_found' };
    const { decision, record, state } = loaded;
    if (state.kind !== 'awaiting_code' || !record.code_hash) return page(token);
    const code = rawCode.replace(/\s+/g, '');
    if (!/^\d{6}$/.test(code)) return page(token, { kind: 'error', text: 'Enter the 6 digits of your code.' });
    let event: KycEvent;
    if (decision.environment === 'sandbox') {
      event = code === SANDBOX_FAIL_CODE ? { kind: 'sandbox_result', result: 'fail' } : { kind: 'code_checked', correct: code === SANDBOX_PASS_CODE };
    } else {
      const fresh = (record.code_expires_at ?? 0) > clock.now().getTime();
      if (!fresh) return page(token, { kind: 'error', text: 'This code has expired. Ask for a new one.' });
      event = { kind: 'code_checked', correct: safeEqual(hashCode(decision.id, code), record.code_hash) };
    }
    await apply(loaded, event, event.kind === 'code_checked' && event.correct ? { code_hash: null, code_expires_at: null } : {});
    const after = await load(token);
    if (!after) return { kind: 'not_found' };
    const wrong = event.kind === 'code_checked' && !event.correct && after.state.kind === 'awaiting_code';
    return { kind: 'ok', page: await pageOf(after, wrong ? { kind: 'error', text: `That code is not right. ${triesLeft(attemptsLeft(after.state))}` } : null) };
  }

  async function submitIdentity(token: string, input: { ssnLast4: string; dob: string }): Promise<ActionResult> {
    const loaded = await load(token);
    if (!loaded) return { kind: 'not_found' };
    if (loaded.state.kind !== 'awaiting_identity') return page(token);
    if (!/^\d{4}$/.test(input.ssnLast4) || !/^\d{4}-\d{2}-\d{2}$/.test(input.dob)) {
      return page(token, { kind: 'error', text: 'Enter the last 4 digits of your SSN and your date of birth.' });
    }
    const { decision } = loaded;
    const consumer = await deps.consumers.findConsumer({ tenantId: decision.tenant_id, environment: decision.environment }, decision.consumer_id, deps.db);
    const storedSsn = await deps.consumers.revealSsnLast4(decision.consumer_id, deps.db);
    // Both comparisons always run (no short circuit): the time taken must not tell which one failed.
    const ssnMatches = safeEqual(storedSsn ?? '', input.ssnLast4);
    const dobMatches = safeEqual(consumer?.dob ?? '', input.dob);
    const matches = consumer !== null && storedSsn !== null && ssnMatches && dobMatches;
    await apply(loaded, { kind: 'identity_checked', matches });
    const after = await load(token);
    if (!after) return { kind: 'not_found' };
    const wrong = !matches && after.state.kind === 'awaiting_identity';
    return { kind: 'ok', page: await pageOf(after, wrong ? { kind: 'error', text: `Those details do not match our records. ${triesLeft(attemptsLeft(after.state))}` } : null) };
  }

  async function submitDocument(token: string, upload: DocumentUpload | null | 'too_large'): Promise<ActionResult> {
    const loaded = await load(token);
    if (!loaded) return { kind: 'not_found' };
    if (loaded.state.kind !== 'awaiting_document') return page(token);
    const problem = documentProblem(upload);
    if (problem) return page(token, { kind: 'error', text: problem });
    const { decision } = loaded;
    const id = deps.random.uuid();
    const bytes = (upload as DocumentUpload).bytes;
    // Stored before the state moves on: the lender's reviewers need the document whatever happens next.
    await deps.db.transaction().execute(async (trx) => {
      await storeDocument(trx, decision, id, bytes, { documentRequestId: null, documentType: null });
      await deps.reviews.openItem(trx, decision, 'document_uploaded');
    });
    await apply(loaded, { kind: 'document_stored' });
    return page(token);
  }

  async function storeDocument(trx: Kysely<Database>, decision: Pick<DecisionsTable, 'id' | 'tenant_id' | 'environment'>, id: string, bytes: Buffer, answers: { documentRequestId: string | null; documentType: string | null }): Promise<void> {
    await trx
      .insertInto('verification_documents')
      .values({
        id,
        decision_id: decision.id,
        tenant_id: decision.tenant_id,
        environment: decision.environment,
        content_type: sniffContentType(bytes)!,
        size_bytes: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        sealed_content: deps.secretBox.seal(bytes, id),
        created_at: clock.now().getTime(),
        document_request_id: answers.documentRequestId,
        document_type: answers.documentType,
      })
      .execute();
  }

  /** The page of an underwriter's document request, or not_found when the token is not one. */
  async function documentRequestPage(token: string, notice: RequestPageModel['notice'] = null): Promise<ActionResult> {
    const request = await deps.underwriting.findDocumentRequestByToken(token);
    if (!request) return { kind: 'not_found' };
    const status: RequestPageModel['status'] = request.fulfilledAt ? 'received' : request.expiresAt.getTime() <= clock.now().getTime() ? 'expired' : 'open';
    return {
      kind: 'documents',
      page: { status, sandbox: request.environment === 'sandbox', merchantName: request.merchantName, documentTypes: request.documentTypes, expiresAt: request.expiresAt, notice },
    };
  }

  /**
   * The applicant's upload for a document request: one file per requested type, all or nothing.
   * Stored sealed like the hard tier's ID document, in one transaction with the request's token
   * being used up and the decision entering verification review.
   */
  async function submitRequestedDocuments(token: string, uploads: Map<string, DocumentUpload | 'too_large'>): Promise<ActionResult> {
    const request = await deps.underwriting.findDocumentRequestByToken(token);
    if (!request) return { kind: 'not_found' };
    const current = await documentRequestPage(token);
    if (current.kind !== 'documents' || current.page.status !== 'open') return current;
    for (const type of request.documentTypes) {
      const problem = documentProblem(uploads.get(type) ?? null, 'the document');
      if (problem) return documentRequestPage(token, { kind: 'error', text: `${DOCUMENT_LABELS[type] ?? type}: ${problem}` });
    }
    const decision = { id: request.decisionId, tenant_id: request.tenantId, environment: request.environment };
    const stored = await deps.db.transaction().execute(async (trx) => {
      // Single use: a second submission (another tab, a double click) finds the token used.
      if (!(await deps.underwriting.fulfilDocumentRequest(trx, request.id))) return false;
      for (const type of request.documentTypes) {
        await storeDocument(trx, decision, deps.random.uuid(), (uploads.get(type) as DocumentUpload).bytes, { documentRequestId: request.id, documentType: type });
      }
      await deps.reviews.openItem(trx, decision, 'document_uploaded');
      return true;
    });
    return documentRequestPage(token, stored ? { kind: 'info', text: 'Thank you: your documents were received.' } : null);
  }

  /** The sandbox test helper: pass or fail a pending verification as if the consumer had. */
  async function applySandboxResult(decisionId: string, result: 'pass' | 'fail'): Promise<void> {
    const decision = await deps.db.selectFrom('decisions').selectAll().where('id', '=', decisionId).executeTakeFirst();
    if (!decision || decision.status !== 'needs_consumer_action' || decision.environment !== 'sandbox') return;
    const token = decision.verification_token_sealed ? deps.secretBox.openText(decision.verification_token_sealed, decision.id) : null;
    const loaded = token ? await load(token) : null;
    if (loaded) await apply(loaded, { kind: 'sandbox_result', result });
  }

  async function readDocument(documentId: string, scope: { tenantId: string; environment: 'sandbox' | 'live' }): Promise<DocumentUpload | null> {
    const row = await deps.db
      .selectFrom('verification_documents')
      .selectAll()
      .where('id', '=', documentId)
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .executeTakeFirst();
    return row ? { contentType: row.content_type, bytes: deps.secretBox.open(row.sealed_content, row.id) } : null;
  }

  return { page, sendCode, submitCode, submitIdentity, submitDocument, submitRequestedDocuments, applySandboxResult, readDocument };
}

export type VerificationService = ReturnType<typeof createVerificationService>;

function stateOfFinished(decision: DecisionsTable): KycState {
  if (decision.outcome === 'declined' && decision.reasons_json.includes('AA-01')) return { kind: 'expired' };
  if (decision.kyc_status === 'pending') return { kind: 'failed', reason: 'sandbox_fail' };
  return { kind: 'matched' };
}

/** Identify an upload by its bytes, never by the name or the declared type. */
export function sniffContentType(bytes: Buffer): 'image/jpeg' | 'image/png' | 'application/pdf' | null {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (bytes.length >= 5 && bytes.subarray(0, 5).toString('latin1') === '%PDF-') return 'application/pdf';
  return null;
}

/** How the pages name the requested document types. */
export const DOCUMENT_LABELS: Record<string, string> = {
  government_id: 'Government-issued photo ID',
  proof_of_income: 'Proof of income',
  proof_of_address: 'Proof of address',
  bank_statement: 'Bank statement',
  other: 'Other document',
};

/** What is wrong with an upload, in the page's words; `what` names the document ("your ID", "it"). */
function documentProblem(upload: DocumentUpload | null | 'too_large', what = 'your ID'): string | null {
  if (upload === 'too_large') return 'That file is larger than 10 MB. Upload a smaller photo or scan.';
  if (!upload || upload.bytes.length === 0) return `Choose a photo or scan of ${what} to upload.`;
  if (upload.bytes.length > MAX_DOCUMENT_BYTES) return 'That file is larger than 10 MB. Upload a smaller photo or scan.';
  if (!sniffContentType(upload.bytes)) return `That file is not a JPEG, PNG or PDF. Upload a photo or a PDF scan of ${what}.`;
  return null;
}

function triesLeft(n: number | null): string {
  return n === 1 ? '1 try left.' : `${n ?? 0} tries left.`;
}

export function maskPhone(phone: string): string {
  return `•••• ${phone.slice(-4)}`;
}

export function maskEmail(email: string): string {
  const [local = '', domain = ''] = email.split('@');
  return `${local.slice(0, 1)}•••@${domain}`;
}
