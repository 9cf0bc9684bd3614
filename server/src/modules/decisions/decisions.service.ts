/**
 * Decisions (BNPL and auto loans): the use cases, in the order they happen. Both products share
 * every step; only the request rules, the engine documents and the offer differ (`ProductRequest`).
 *
 * prepareBnplDecision / prepareAutoLoanDecision
 *   1. normalise the request (400/422 rules)              bnpl-request.ts, auto-loan-request.ts
 *      auto loans: an indirect application's dealer must be active here (dealers service)
 *   2. resolve the applicant (returning or new)           consumers service
 *   3. choose the KYC tier from the policy                engine (policy constants)
 *   enhanced/hard: 4p. open a pending state with a hosted-verification token; commit.
 *   soft:          4. identity check (sandbox magic 2222 fails; a returning verified consumer skips)
 *                  5. credit data (sandbox synthetic file, or the lender's gateway) BEFORE the
 *                     transaction: nothing slow happens while locks are held
 *                  6. the engine decides; an approval becomes an offer (schedule, APR, TILA;
 *                     auto loans also buy/contract rate and dealer reserve)
 *                  7. one transaction: consumer, decision, audit record, events, idempotency record
 * getDecision: one indexed read, scoped to tenant and environment (others are "not found").
 */
import { createHash } from 'node:crypto';
import type { CompiledQuery, Kysely } from 'kysely';
import type { Config, Environment } from '../../config/config.js';
import type { RowValues } from '../../db/batched-read.js';
import type { Storage, StoredAnswerRead } from '../../db/database.js';
import type { Database, DecisionsTable } from '../../db/schema.js';
import { insertStatement } from '../../db/statements.js';
import type { PlannableUnit } from '../../db/group-commit.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { formatCentsGrouped } from '../../http/errors/messages.js';
import type { Clock, Random } from '../../lib/clock.js';
import { openedTextCache, type SecretBox } from '../../lib/crypto.js';
import { centsToNumber, formatMoney } from '../../lib/money.js';
import type { Consumer, ConsumerHistory, ConsumersService } from '../consumers/consumers.service.js';
import type { CreditDataConnector, CreditDataResult } from '../credit-data/credit-data.types.js';
import { SANDBOX_MAGIC_SSN_LAST4 } from '../credit-data/sandbox-connector.js';
import {
  adverseActionReason, autoLoanEngineVersionOf, decideAutoLoan, decideBnpl, engineVersionOf, keyFactorCodes, kycTierFor, scoreRangeOf,
  type AdverseActionReason, type AutoLoanEngineDecision, type AutoLoanTerms, type BnplEngineDecision, type ProductEngineDocuments,
} from '../engine/index.js';
import type { NewEvent, Outbox } from '../events/outbox.js';
import { buildAutoLoanOffer, creditSaleWire, formatRateBps, type AutoLoanOffer, type AutoLoanTerm } from '../offers/auto-loan-offer.js';
import { buildOffer, presentOffer, type BuildOfferInput, type Offer } from '../offers/offer.js';
import { monthlyTermFor, type Plan } from '../offers/schedule.js';
import { formatLtv, ltvPctForPolicy, normalizeAutoLoanRequest, type AutoLoanApplication, type AutoLoanCreateBody } from './auto-loan-request.js';
import { normalizeBnplRequest, type ApplicantRef, type BnplApplication, type BnplCreateBody } from './bnpl-request.js';
import { ANSWER_FORMAT, PRESENTED_COLUMNS, presentDecision, presentDecisionJson, storedAnswerOf } from './decision.presenter.js';
import { answerBytes, type CachedDecision, type DecisionCache } from './decision-cache.js';
import { verifyLink } from '../kyc/verify-links.js';

export interface Scope {
  tenantId: string;
  environment: Environment;
}

export type Product = DecisionsTable['product'];

/** decisions.md section 5: pending states expire after 24 h (enhanced) or 72 h (hard); offers after 30 days. */
export const PENDING_TTL_MS = { enhanced: 24 * 3600_000, hard: 72 * 3600_000 } as const;
export const OFFER_TTL_MS = 30 * 24 * 3600_000;

export interface DecisionsDeps {
  config: Readonly<Config>;
  db: Kysely<Database>;
  readDb: Kysely<Database>;
  clock: Clock;
  random: Random;
  secretBox: SecretBox;
  consumers: ConsumersService;
  outbox: Outbox;
  /** Credit data per environment: sandbox never touches live sources. */
  creditData: Record<Environment, CreditDataConnector>;
  /**
   * The scorecard and policy deciding a product (BNPL when omitted) for a tenant and environment
   * now: the tenant's active policy version, else the bundled default (modules/credit-policy;
   * cached, so usually no read).
   */
  documentsFor<P extends Product = 'bnpl'>(scope: Scope, product?: P): Promise<ProductEngineDocuments[P]>;
  merchantDefaultsFor(tenantId: string): Promise<{ merchantName: string; merchantCategory: string }>;
  /** The active dealer an indirect auto loan names, or null (modules/dealers). */
  findActiveDealer(scope: Scope, dealerId: string): Promise<{ id: string; name: string } | null>;
  /** The storage's batched reads by id (`Storage.readByIds`): the poll's read. */
  readByIds: Storage['readByIds'];
  /**
   * PostgreSQL: the poll cache (decision-cache.ts, ADR 0050) and the freshness barrier a hit waits
   * for (the API-key listener's `ready()`: true once every change committed before the call has
   * reached the cache, false when it cannot say so and the poll must read). None: every poll reads.
   */
  pollCache?: { cache: DecisionCache; ready(): boolean | Promise<boolean> } | null;
}

/**
 * What a poll reads: the presenter's columns, the scope it is checked against, the pending state's
 * sealed token, and the answer stored with a final decision (ADR 0051), last.
 */
export const POLL_COLUMNS = [...PRESENTED_COLUMNS, 'tenant_id', 'environment', 'verification_token_sealed', 'answer_json'] as const;
type PollRow = Pick<DecisionsTable, Exclude<(typeof POLL_COLUMNS)[number], 'answer_json'>>;

/**
 * A row with a stored answer in this build's format is read as that answer, the scope it is
 * checked against and what the poll cache and the pending deadline look at; its other columns come
 * back null, unread (database.ts `StoredAnswerRead`).
 */
const POLL_STORED_ANSWER = {
  column: 'answer_json',
  formatColumn: 'answer_format',
  format: ANSWER_FORMAT,
  always: ['id', 'tenant_id', 'environment', 'product', 'status', 'outcome', 'expires_at'],
} as const satisfies StoredAnswerRead & { column: (typeof POLL_COLUMNS)[number]; always: readonly (typeof POLL_COLUMNS)[number][] };

/** Where a poll row's stored answer is (the last of POLL_COLUMNS). */
const STORED_ANSWER_AT = POLL_COLUMNS.indexOf('answer_json');

/**
 * A poll's row from its values in POLL_COLUMNS order. An object literal, so V8 builds every row
 * with one shape; a loop of keyed stores cost about a microsecond a poll. The unit test of this
 * function checks the order against POLL_COLUMNS, the `satisfies` that no column is missing.
 */
export function pollRowOf(v: readonly unknown[]): PollRow {
  return {
    id: v[0], application_id: v[1], product: v[2], status: v[3], kyc_tier: v[4], kyc_status: v[5], outcome: v[6], currency: v[7],
    approved_amount_cents: v[8], apr: v[9], term_months: v[10], schedule_json: v[11], tila_json: v[12], reasons_json: v[13], expires_at: v[14],
    buy_rate: v[15], contract_rate: v[16], dealer_reserve_cents: v[17], ltv: v[18], tenant_id: v[19], environment: v[20], verification_token_sealed: v[21],
  } satisfies Record<keyof PollRow, unknown> as PollRow;
}

/**
 * Whether a decision of this tenant, environment and product may be shown to a key of `scope`
 * asking for `product` (null: any product). Read by primary key alone, a decision of another
 * tenant or environment is indistinguishable from one that does not exist.
 */
function visibleTo(scope: Scope, product: Product | null, tenantId: string, environment: string, decisionProduct: string): boolean {
  return tenantId === scope.tenantId && environment === scope.environment && (product === null || decisionProduct === product);
}

/** A poll's row read while the poll cache is on, with the cache generation the read started at (its fill is refused if that changed). */
interface ReadForCache {
  readonly values: RowValues;
  readonly generation: number;
}

/**
 * What a poll's lookup found: the row's values (no poll cache), a cached answer, a row read to be
 * cached, or nothing (no decision has that id).
 */
export type PollFound = RowValues | CachedDecision | ReadForCache | undefined;

/** One line of a consumer's application history (portal). */
export interface ConsumerApplication {
  decisionId: string;
  applicationId: string;
  product: DecisionsTable['product'];
  status: DecisionsTable['status'];
  outcome: DecisionsTable['outcome'];
  kycTier: DecisionsTable['kyc_tier'];
  kycStatus: DecisionsTable['kyc_status'];
  currency: string;
  requestedAmount: string;
  approvedAmount: string | null;
  plan: string | null;
  createdAt: Date;
  completedAt: Date | null;
}

export interface DecisionView {
  row: DecisionsTable;
  body: Record<string, unknown>;
}

/** A decision just written: its row and the response body as JSON text (presentDecisionJson). */
export interface CreatedDecision {
  row: DecisionsTable;
  json: string;
}

/** Opened hosted-page tokens kept per process at most. */
const OPENED_PAGE_TOKEN_LIMIT = 10_000;

export function createDecisionsService(deps: DecisionsDeps) {
  const { clock, random } = deps;
  const insertDecisions = insertStatement(deps.db, 'decisions');
  const insertAudits = insertStatement(deps.db, 'decision_audits');
  // A pending decision's page token is opened on every poll (lib/crypto.ts, openedTextCache).
  const openPageToken = openedTextCache(deps.secretBox, OPENED_PAGE_TOKEN_LIMIT);

  /**
   * Everything that can be decided before the transaction; returns the function that writes it.
   * Split so the route can run the write inside the idempotency transaction.
   */
  async function prepareBnplDecision(scope: Scope, body: BnplCreateBody): Promise<PlannableUnit<CreatedDecision>> {
    const startedMs = performance.now();
    const now = clock.now();
    // Only the `order` form may leave the merchant out; look the tenant's defaults up only then,
    // so the usual create costs no extra round trip.
    const money = body.order ?? body.transaction;
    const needsDefaults = money !== undefined && (money.merchant_name === undefined || money.merchant_category === undefined);
    const merchantDefaults = needsDefaults ? await deps.merchantDefaultsFor(scope.tenantId) : { merchantName: '', merchantCategory: '' };
    const application = normalizeBnplRequest(body, merchantDefaults, now);
    // Read once: the tier and the decision come from the same version even if a promote lands meanwhile.
    const documents = await deps.documentsFor(scope);
    return prepareDecision(scope, now, startedMs, {
      applicant: application.applicant,
      tierAmountCents: application.amountCents,
      documents,
      seed: bnplSeed(application),
      request: { product: 'bnpl', amountCents: application.amountCents, requestedPlan: application.requestedPlan, requestedTermMonths: application.requestedTermMonths },
      redacted: redactedRequest(application),
    });
  }

  /**
   * Auto loans (decisions.md section 10): the request rules with the auto-loan policy's ranges and
   * markup caps, the dealer of an indirect loan, then the same path as BNPL.
   */
  async function prepareAutoLoanDecision(scope: Scope, body: AutoLoanCreateBody): Promise<PlannableUnit<CreatedDecision>> {
    const startedMs = performance.now();
    const now = clock.now();
    const documents = await deps.documentsFor(scope, 'auto_loan');
    const application = normalizeAutoLoanRequest(body, documents.policy.constants, now);
    let merchantName: string;
    if (application.dealer) {
      const dealer = await deps.findActiveDealer(scope, application.dealer.dealerId);
      if (!dealer) throw new ApiError('unprocessable_entity', 'dealer.dealer_id does not match an active dealer of this tenant and environment (unknown or disabled).');
      merchantName = dealer.name;
    } else {
      merchantName = (await deps.merchantDefaultsFor(scope.tenantId)).merchantName;
    }
    return prepareDecision(scope, now, startedMs, {
      applicant: application.applicant,
      tierAmountCents: application.loan.amountFinancedCents,
      documents,
      seed: autoLoanSeed(application, merchantName),
      request: autoLoanRequestOf(application),
      redacted: redactedAutoLoanRequest(application),
    });
  }

  /** Everything after a product's request rules: applicant, tier, and the pending or soft path. */
  async function prepareDecision(scope: Scope, now: Date, startedMs: number, intake: Intake): Promise<PlannableUnit<CreatedDecision>> {
    let existing: Consumer | null = null;
    let ssnLast4: string | null;
    let history: ConsumerHistory | null = null;
    if (intake.applicant.kind === 'existing') {
      const found = await deps.consumers.findConsumerForDecision(scope, intake.applicant.consumerId);
      if (!found) throw new ApiError('unprocessable_entity', 'consumer.consumer_id does not match a consumer of this tenant and environment.');
      existing = found.consumer;
      ssnLast4 = found.ssnLast4;
      history = found.history;
    } else {
      ssnLast4 = intake.applicant.identity.ssnLast4;
    }
    const tier = kycTierFor(intake.tierAmountCents, intake.documents.policy);
    if (tier !== 'soft' && ssnLast4 === null) {
      const { enhancedFromCents, hardFromCents } = intake.documents.policy.constants.kycTiers;
      const band = tier === 'hard' ? `from ${formatCentsGrouped(hardFromCents)} USD` : `from ${formatCentsGrouped(enhancedFromCents)} to below ${formatCentsGrouped(hardFromCents)} USD`;
      throw new ApiError(
        'unprocessable_entity',
        `consumer.ssn_last4 is required for amounts ${band} (${tier} identity verification); below ${formatCentsGrouped(enhancedFromCents)} USD it is optional.`,
      );
    }

    const decisionId = random.uuid();
    const consumerId = existing?.id ?? random.uuid();
    const ids = { decisionId, applicationId: decisionId, consumerId };
    if (tier !== 'soft') return (trx) => writePending(trx, scope, intake, ids, tier, now);

    // Soft tier: identity check, credit data, engine, offer: all before the transaction.
    const verificationFails = scope.environment === 'sandbox' && ssnLast4 === SANDBOX_MAGIC_SSN_LAST4.verificationFails;
    const evaluation = await evaluate({
      scope,
      consumerId,
      identity: identityFor(existing, intake.applicant),
      ssnLast4,
      sandboxProfile: existing?.sandboxProfile ?? null,
      returning: existing !== null,
      history,
      request: intake.request,
      now,
      documents: intake.documents,
    });
    // The soft tier's identity check is the credit file's match (decisions.md section 5): without
    // credit data, or with no file for the applicant, nothing was matched, so the status stays
    // `pending` and the consumer unverified.
    const identityChecked = evaluation.creditData.status === 'ok' && evaluation.creditData.file.hasFile;
    const kycStatus: DecisionsTable['kyc_status'] = verificationFails
      ? 'pending'
      : existing?.identityStatus === 'verified'
        ? 'skipped'
        : identityChecked
          ? 'matched'
          : 'pending';
    if (verificationFails) {
      // The identity could not be verified: a person must look at it, whatever the score says.
      evaluation.outcome = 'referred';
      evaluation.reasons = [adverseActionReason('AA-24')];
      evaluation.offerColumns = null;
      evaluation.offerAudit = null;
    }
    evaluation.timings.preparedMs = round(performance.now() - startedMs);

    // Everything the write needs is known now: built here, so the unit only sends it.
    const row: DecisionsTable = Object.assign(baseRow(scope, intake.seed, ids, now), decidedColumns(evaluation, now), {
      status: 'complete' as const,
      kyc_tier: 'soft' as const,
      kyc_status: kycStatus,
      latency_ms: evaluation.timings.preparedMs ?? null,
    });
    const audit = { decision_id: decisionId, created_at: now.getTime(), record_json: JSON.stringify({ request: intake.redacted, ...auditOf(evaluation, { tier: 'soft', status: kycStatus, identity_verification_failed: verificationFails }) }) };
    // A soft-tier match is a KYC success like a verification's, and is told the same way
    // (application.kyc_completed, kyc_tier soft), as a failure is (application.kyc_failed).
    const events = [
      ...openingEvents(row),
      ...(kycStatus === 'matched' ? [kycCompletedEvent(row)] : []),
      scoreEvent(row, evaluation),
      ...(verificationFails ? [kycFailedEvent(row)] : []),
      finalizedEvent(row, scoringOf(row, evaluation)),
    ];
    const json = presentDecisionJson(row, null);
    // Final at once: its poll answer is stored with it (ADR 0051), the bytes this response sends.
    Object.assign(row, storedAnswerOf(row, json));
    // What this decision learnt of the identity: failed, matched, or (no credit data) nothing.
    const identityStatus = verificationFails ? 'failed' : kycStatus === 'matched' ? 'verified' : null;
    // The applicant, the decision, its audit record, its events and the fan-out's lookup: one
    // statement on PostgreSQL (outbox `with`, db/statements.ts), in this order on SQLite.
    const writes: CompiledQuery[] = [];
    if (!existing) writes.push(deps.consumers.newConsumerInsert(scope, intake.applicant.kind === 'new' ? intake.applicant.identity : never(), consumerId, identityStatus ?? 'unverified'));
    else if (identityStatus !== null && identityStatus !== existing.identityStatus) writes.push(deps.consumers.identityStatusUpdate(consumerId, identityStatus));
    writes.push(insertDecisions([row]), insertAudits([audit]));
    const created: CreatedDecision = { row, json };
    const unit: PlannableUnit<CreatedDecision> = async (trx) => {
      await deps.outbox.append(trx, scope, events, { with: writes });
      return created;
    };
    // The same writes as data, for SQLite's writer thread or PostgreSQL's pipelined batches
    // (group-commit.ts, ADRs 0030 and 0037); `outdated` tells the fan-out its read of the
    // endpoints is stale, so the plans that follow read them again.
    const planned = await deps.outbox.plan(scope, events, { with: writes });
    if (planned) {
      unit.planned = { statements: planned.statements, value: created };
      if (planned.outdated) unit.planned.outdated = planned.outdated;
    }
    return unit;
  }

  /** Credit data, engine and offer for one application. Slow parts (a live pull) happen here, outside any transaction. */
  async function evaluate(args: EvaluateArgs): Promise<Evaluation> {
    const creditStarted = performance.now();
    const creditData = await deps.creditData[args.scope.environment].fetchCreditFile(
      { consumerId: args.consumerId, firstName: args.identity.firstName, lastName: args.identity.lastName, dob: args.identity.dob, zip: args.identity.zip, ssnLast4: args.ssnLast4, sandboxProfile: args.sandboxProfile },
      { asOf: args.now, tenantId: args.scope.tenantId },
    );
    const creditDataMs = round(performance.now() - creditStarted);
    const counts = !args.returning ? { priorApprovals: 0, priorDeclines: 0 } : (args.history ?? (await deps.consumers.history(args.consumerId)));
    const history = { returning: args.returning, priorApprovals: counts.priorApprovals, priorDeclines: counts.priorDeclines };
    const timings = (engineMs: number) => ({ creditDataMs, engineMs });
    const { request } = args;
    if (request.product === 'auto_loan') {
      // documentsFor(scope, request.product) produced them (prepareDecision, prepareVerifiedCompletion).
      const documents = args.documents as ProductEngineDocuments['auto_loan'];
      const engine = await decideAutoLoan({ loan: request.terms, history, creditData, asOf: args.now.toISOString() }, documents);
      const loan =
        engine.outcome === 'approved'
          ? buildAutoLoanOffer({
              amountFinancedCents: request.terms.amountFinancedCents,
              termMonths: request.terms.termMonths as AutoLoanTerm,
              buyRateBps: engine.buyRateBps!,
              markupBps: request.markupBps,
              reserveSharePct: documents.policy.constants.dealerReserveSharePct,
              decisionDate: args.now.toISOString().slice(0, 10),
              ...(request.loanAmountCents === null ? {} : { loanAmountCents: request.loanAmountCents }),
            })
          : null;
      return {
        engine, creditData, outcome: engine.outcome, reasons: engine.reasons, timings: timings(engine.timings.totalMs),
        offerColumns: loan ? autoLoanOfferColumns(loan) : null,
        offerAudit: loan ? autoLoanOfferAudit(loan, documents.policy.constants.dealerReserveSharePct) : null,
      };
    }
    const engine = await decideBnpl(
      { requestedAmountCents: request.amountCents, planPreference: request.requestedPlan, history, creditData, asOf: args.now.toISOString() },
      args.documents as ProductEngineDocuments['bnpl'],
    );
    const offer = engine.outcome === 'approved' ? offerFor(engine, request.requestedTermMonths, args.now) : null;
    return {
      engine, creditData, outcome: engine.outcome, reasons: engine.reasons, timings: timings(engine.timings.totalMs),
      offerColumns: offer ? bnplOfferColumns(offer) : null,
      offerAudit: offer ? offerAuditOf(offer) : null,
    };
  }

  /**
   * The consumer passed verification: the engine decides now. Returns null when the decision is no
   * longer waiting (finished meanwhile); otherwise the write step, which itself returns false if
   * another request finished the decision between this read and the write (optimistic version).
   */
  async function prepareVerifiedCompletion(decisionId: string): Promise<((trx: Kysely<Database>) => Promise<boolean>) | null> {
    const row = await deps.db.selectFrom('decisions').selectAll().where('id', '=', decisionId).executeTakeFirst();
    if (!row || row.status !== 'needs_consumer_action') return null;
    const startedMs = performance.now();
    const scope = { tenantId: row.tenant_id, environment: row.environment };
    const consumer = await deps.consumers.findConsumer(scope, row.consumer_id, deps.db);
    if (!consumer) throw new Error(`decision ${row.id} has no consumer`);
    const now = clock.now();
    const evaluation = await evaluate({
      scope,
      consumerId: consumer.id,
      identity: { firstName: consumer.firstName, lastName: consumer.lastName, dob: consumer.dob, zip: consumer.address.zip },
      ssnLast4: await deps.consumers.revealSsnLast4(consumer.id, deps.db),
      sandboxProfile: consumer.sandboxProfile,
      returning: consumer.createdAt.getTime() < row.created_at,
      request: requestOfRow(row),
      now,
      // The version in force when the consumer finishes verification is the one that decides.
      documents: await deps.documentsFor(scope, row.product),
    });
    evaluation.timings.preparedMs = round(performance.now() - startedMs);
    return async (trx) => {
      const updated = await finishRow(trx, row, Object.assign(decidedColumns(evaluation, now), { kyc_status: 'matched' as const, latency_ms: evaluation.timings.preparedMs ?? null }));
      if (!updated) return false;
      await deps.consumers.setIdentityStatus(trx, consumer.id, 'verified');
      await appendAudit(trx, row.id, auditOf(evaluation, { tier: row.kyc_tier, status: 'matched', identity_verification_failed: false }));
      await deps.outbox.append(trx, scope, [kycCompletedEvent(updated), scoreEvent(updated, evaluation), finalizedEvent(updated, scoringOf(updated, evaluation))]);
      return true;
    };
  }

  /** Verification failed: referred with AA-24 for the lender to review. False if no longer waiting. */
  async function finalizeFailedVerification(trx: Kysely<Database>, decisionId: string, reason: string): Promise<boolean> {
    const row = await trx.selectFrom('decisions').selectAll().where('id', '=', decisionId).executeTakeFirst();
    if (!row || row.status !== 'needs_consumer_action') return false;
    const now = clock.now();
    const reasons = [adverseActionReason('AA-24')];
    const updated = await finishRow(trx, row, { outcome: 'referred', reasons_json: JSON.stringify(reasons), completed_at: now.getTime(), kyc_status: 'pending' });
    if (!updated) return false;
    await deps.consumers.setIdentityStatus(trx, row.consumer_id, 'failed');
    await appendAudit(trx, row.id, { kyc: { tier: row.kyc_tier, status: 'pending', identity_verification_failed: true, failure_reason: reason } });
    await deps.outbox.append(trx, { tenantId: row.tenant_id, environment: row.environment }, [kycFailedEvent(updated), finalizedEvent(updated, unscored(['AA-24'], await policyVersionFor(row)))]);
    return true;
  }

  /** The pending state ran out: declined with AA-01 (application incomplete). False if no longer waiting. */
  async function finalizeExpired(trx: Kysely<Database>, decisionId: string): Promise<boolean> {
    const row = await trx.selectFrom('decisions').selectAll().where('id', '=', decisionId).executeTakeFirst();
    if (!row || row.status !== 'needs_consumer_action' || row.expires_at > clock.now().getTime()) return false;
    const reasons = [adverseActionReason('AA-01')];
    const updated = await finishRow(trx, row, { outcome: 'declined', reasons_json: JSON.stringify(reasons), completed_at: clock.now().getTime(), kyc_status: 'pending' });
    if (!updated) return false;
    await appendAudit(trx, row.id, { kyc: { tier: row.kyc_tier, status: 'pending', expired: true } });
    await deps.outbox.append(trx, { tenantId: row.tenant_id, environment: row.environment }, [finalizedEvent(updated, unscored(['AA-01'], await policyVersionFor(row)))]);
    return true;
  }

  /** Expire every pending decision past its deadline (the sweeper; polls also expire lazily). */
  async function expireOverdue(limit = 100): Promise<number> {
    const due = await deps.db
      .selectFrom('decisions')
      .select('id')
      .where('status', '=', 'needs_consumer_action')
      .where('expires_at', '<=', clock.now().getTime())
      .orderBy('expires_at')
      .limit(limit)
      .execute();
    let expired = 0;
    for (const { id } of due) if (await deps.db.transaction().execute((trx) => finalizeExpired(trx, id))) expired++;
    return expired;
  }

  /** A policy-path decision names the documents that would have scored it, as engine-path ones do. */
  async function policyVersionFor(row: DecisionsTable): Promise<string> {
    const scope = { tenantId: row.tenant_id, environment: row.environment };
    return row.product === 'auto_loan' ? autoLoanEngineVersionOf(await deps.documentsFor(scope, 'auto_loan')) : engineVersionOf(await deps.documentsFor(scope));
  }

  /** Conditional update: only a still-waiting decision at the version read is finished. */
  async function finishRow(trx: Kysely<Database>, row: DecisionsTable, changes: Partial<DecisionsTable>): Promise<DecisionsTable | null> {
    const now = clock.now().getTime();
    const finished = { status: 'complete' as const, updated_at: now, version: row.version + 1, verification_token_sealed: null };
    const next: DecisionsTable = Object.assign({}, row, changes, finished);
    // The final answer is stored by the statement that makes the decision final (ADR 0051).
    const answer = storedAnswerOf(next);
    Object.assign(next, answer);
    const result = await trx
      .updateTable('decisions')
      .set(Object.assign({}, changes, finished, answer))
      .where('id', '=', row.id)
      .where('status', '=', 'needs_consumer_action')
      .where('version', '=', row.version)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1 ? next : null;
  }

  async function appendAudit(trx: Kysely<Database>, decisionId: string, addition: Record<string, unknown>): Promise<void> {
    const current = await trx.selectFrom('decision_audits').select('record_json').where('decision_id', '=', decisionId).executeTakeFirst();
    const record = Object.assign(current ? (JSON.parse(current.record_json) as Record<string, unknown>) : {}, addition);
    await trx.updateTable('decision_audits').set({ record_json: JSON.stringify(record) }).where('decision_id', '=', decisionId).execute();
  }

  /** The pending decision a hosted-verification token belongs to (any state), or null. */
  async function findByVerificationToken(token: string): Promise<DecisionsTable | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
    const row = await deps.readDb.selectFrom('decisions').selectAll().where('verification_token_hash', '=', hashToken(token)).executeTakeFirst();
    return row ?? null;
  }

  async function writePending(trx: Kysely<Database>, scope: Scope, intake: Intake, ids: Ids, tier: 'enhanced' | 'hard', now: Date): Promise<CreatedDecision> {
    // The hosted page's token: unguessable, single-use, never the decision id. Looked up by hash;
    // kept sealed only so a poll can show the same consumer_complete_url.
    const token = random.bytes(32).toString('base64url');
    const row: DecisionsTable = Object.assign(baseRow(scope, intake.seed, ids, now), {
      status: 'needs_consumer_action' as const,
      kyc_tier: tier,
      kyc_status: 'pending' as const,
      outcome: null,
      verification_token_hash: hashToken(token),
      verification_token_sealed: deps.secretBox.seal(token, ids.decisionId),
      expires_at: now.getTime() + PENDING_TTL_MS[tier],
    });
    const writes: CompiledQuery[] = [];
    if (intake.applicant.kind === 'new') writes.push(deps.consumers.newConsumerInsert(scope, intake.applicant.identity, ids.consumerId, 'unverified'));
    writes.push(
      insertDecisions([row]),
      insertAudits([{ decision_id: ids.decisionId, created_at: now.getTime(), record_json: JSON.stringify({ request: intake.redacted, kyc: { tier, status: 'pending' } }) }]),
    );
    await deps.outbox.append(trx, scope, openingEvents(row), { with: writes });
    return { row, json: presentDecisionJson(row, completeUrl(token)) };
  }

  /** A decision of `product` (null: of any product, for the product-neutral sandbox helper). */
  async function getDecision(scope: Scope, product: Product | null, decisionId: string): Promise<DecisionView | null> {
    const row = await currentRow(scope, product, decisionId);
    return row ? { row, body: presentDecision(row, consumerCompleteUrlOf(row)) } : null;
  }

  /**
   * The poll's body as JSON text: the bytes of JSON.stringify(getDecision().body), built without
   * re-parsing stored JSON, from a read of only the columns it needs (`pollRead`), or from the
   * poll cache as UTF-8 bytes; either way from what `prefetchPoll(decisionId)` started for this
   * request if it ran.
   */
  async function getDecisionJson(scope: Scope, product: Product | null, decisionId: string, prefetched: Promise<PollFound> | null = null): Promise<string | Buffer | null> {
    const found = await (prefetched ?? lookUpPoll(decisionId.toLowerCase()));
    if (found === undefined) return null;
    // A cached answer, checked against the key's scope as the row would have been.
    if (!Array.isArray(found) && 'body' in found) return visibleTo(scope, product, found.tenantId, found.environment, found.product) ? found.body : null;
    const values = Array.isArray(found) ? found : found.values;
    const row = pollRowOf(values);
    if (!visibleTo(scope, product, row.tenant_id, row.environment, row.product)) return null;
    // A final decision's answer as stored with it (ADR 0051: its other columns were not read), else rendered here.
    const stored = values[STORED_ANSWER_AT] as string | null;
    if (stored === null && row.status === 'needs_consumer_action' && row.expires_at <= clock.now().getTime()) {
      const current = await currentRow(scope, product, decisionId);
      return current ? presentDecisionJson(current, consumerCompleteUrlOf(current)) : null;
    }
    const json = stored ?? presentDecisionJson(row, consumerCompleteUrlOf(row));
    if (!Array.isArray(found)) cachePoll(row, json, found.generation);
    return json;
  }

  // Batched per turn of the event loop: concurrent polls share one statement (prepared once on SQLite)
  // (database.ts `readByIds`, batched-read.ts).
  const pollRead = deps.readByIds('decisions', POLL_COLUMNS, { stored: POLL_STORED_ANSWER });
  const pollCache = deps.pollCache ?? null;

  /**
   * The poll's read, started before authentication (http/plugins/prefetch.ts) so that on
   * PostgreSQL it goes out in the same statement as the API-key barrier (ADR 0024). Unchecked:
   * `getDecisionJson` checks the row against the key's scope as for any read. Only for an id of a
   * UUID's length: anything else fails validation before the handler, so reading it is a waste.
   */
  function prefetchPoll(decisionId: string): Promise<PollFound> | null {
    return decisionId.length === 36 ? lookUpPoll(decisionId.toLowerCase()) : null;
  }

  /**
   * A poll's lookup. A decision in the poll cache is answered from it once the freshness barrier
   * asked for now has come back (the one the API-key cache waits for, so one round trip serves
   * both), and only if it is still there then: its notification, if it changed, came first.
   * Anything else is read, on PostgreSQL as that same barrier's statement.
   */
  function lookUpPoll(id: string): Promise<PollFound> {
    if (pollCache === null) return pollRead(id);
    if (!pollCache.cache.has(id)) return readForCache(id);
    const fresh = pollCache.ready();
    if (typeof fresh === 'boolean') return fresh ? cachedOrRead(id) : pollRead(id);
    return fresh.then((ok) => (ok ? cachedOrRead(id) : pollRead(id)));
  }

  function cachedOrRead(id: string): Promise<PollFound> {
    const entry = pollCache!.cache.get(id, clock.now().getTime());
    return entry !== undefined ? Promise.resolve(entry) : readForCache(id);
  }

  function readForCache(id: string): Promise<PollFound> {
    const generation = pollCache!.cache.generation;
    return pollRead(id).then((values) => (values === undefined ? undefined : { values, generation }));
  }

  /**
   * Keeps a poll's answer if the decision can still change (pending verification, referred): the
   * decisions a lender polls every few seconds until they end. A final decision is answered by its
   * create and at most read once more (a reconciliation, a webhook's follow-up); keeping those
   * would only replace what is polled again at the rate decisions are made or scanned, and grow
   * the heap (ADR 0050). Refused if a decision changed since `generation` (decision-cache.ts).
   */
  function cachePoll(row: Pick<DecisionsTable, 'id' | 'tenant_id' | 'environment' | 'product' | 'status' | 'outcome' | 'expires_at'>, json: string, generation: number): void {
    if (row.status !== 'needs_consumer_action' && row.outcome !== 'referred') return;
    pollCache?.cache.set(
      row.id,
      { body: answerBytes(json), tenantId: row.tenant_id, environment: row.environment, product: row.product, servedUntilMs: row.status === 'needs_consumer_action' ? row.expires_at : Infinity },
      generation,
    );
  }

  /** The poll cache's generation now: what a create notes before it starts, for `rememberCreated`. */
  function pollCacheGeneration(): number {
    return pollCache?.cache.generation ?? 0;
  }

  /**
   * A create's answer is its decision's first poll answer: kept once its transaction has committed
   * (the caller knows; never for a replay or a create that rolled back), if no decision changed
   * since the create started.
   */
  function rememberCreated(created: CreatedDecision, generation: number): void {
    cachePoll(created.row, created.json, generation);
  }

  async function currentRow(scope: Scope, product: Product | null, decisionId: string): Promise<DecisionsTable | null> {
    const row = await readRow(scope, product, decisionId);
    // Lazy expiry: a poll never shows a pending state past its deadline (the sweeper catches the rest).
    if (row && row.status === 'needs_consumer_action' && row.expires_at <= clock.now().getTime()) {
      await deps.db.transaction().execute((trx) => finalizeExpired(trx, row.id));
      return readRow(scope, product, decisionId, deps.db);
    }
    return row;
  }

  // Compiled once: polls run this on every request, and building and compiling it each time cost
  // more than SQLite's own work. The one parameter is the id.
  const rowByIdQuery = deps.readDb.selectFrom('decisions').selectAll().where('id', '=', '').compile();

  async function readRow(scope: Scope, product: Product | null, decisionId: string, db: Kysely<Database> = deps.readDb): Promise<DecisionsTable | null> {
    // By primary key alone, scope checked here: the plan never depends on table statistics, and a
    // decision of another tenant or environment is indistinguishable from one that does not exist.
    const { rows } = await db.executeQuery<DecisionsTable>({ query: rowByIdQuery.query, queryId: rowByIdQuery.queryId, sql: rowByIdQuery.sql, parameters: [decisionId.toLowerCase()] });
    const row = rows[0];
    return row && visibleTo(scope, product, row.tenant_id, row.environment, row.product) ? row : null;
  }

  function consumerCompleteUrlOf(row: Pick<DecisionsTable, 'id' | 'status' | 'verification_token_sealed'>): string | null {
    return row.status === 'needs_consumer_action' && row.verification_token_sealed ? completeUrl(openPageToken(row.verification_token_sealed, row.id)) : null;
  }

  async function getAuditRecord(scope: Scope, decisionId: string): Promise<unknown> {
    const row = await deps.readDb
      .selectFrom('decision_audits')
      .innerJoin('decisions', 'decisions.id', 'decision_audits.decision_id')
      .select('decision_audits.record_json')
      .where('decisions.id', '=', decisionId)
      .where('decisions.tenant_id', '=', scope.tenantId)
      .where('decisions.environment', '=', scope.environment)
      .executeTakeFirst();
    return row ? (JSON.parse(row.record_json) as unknown) : null;
  }

  /**
   * A consumer's applications, newest first, one page at a time (portal: sandbox consumers).
   * `since` hides what came before a Reset consumer state.
   */
  async function listForConsumer(
    scope: Scope,
    consumerId: string,
    options: { since?: Date | null; limit?: number; offset?: number } = {},
  ): Promise<{ applications: ConsumerApplication[]; total: number }> {
    const limit = Math.min(Math.max(options.limit ?? 20, 1), 100);
    let q = deps.readDb
      .selectFrom('decisions')
      .where('consumer_id', '=', consumerId)
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment);
    if (options.since) q = q.where('created_at', '>=', options.since.getTime());
    const [{ n }, rows] = await Promise.all([
      q.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
      q
        .select(['id', 'application_id', 'product', 'status', 'outcome', 'kyc_tier', 'kyc_status', 'currency', 'requested_amount_cents', 'approved_amount_cents', 'plan', 'created_at', 'completed_at'])
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .offset(Math.max(options.offset ?? 0, 0))
        .execute(),
    ]);
    return {
      total: Number(n),
      applications: rows.map((r) => ({
        decisionId: r.id,
        applicationId: r.application_id,
        product: r.product,
        status: r.status,
        outcome: r.outcome,
        kycTier: r.kyc_tier,
        kycStatus: r.kyc_status,
        currency: r.currency,
        requestedAmount: formatMoney(r.requested_amount_cents),
        approvedAmount: r.approved_amount_cents === null ? null : formatMoney(r.approved_amount_cents),
        plan: r.plan,
        createdAt: new Date(r.created_at),
        completedAt: r.completed_at === null ? null : new Date(r.completed_at),
      })),
    };
  }

  function completeUrl(token: string): string {
    return verifyLink(deps.config.publicBaseUrl, token);
  }

  return {
    prepareBnplDecision,
    prepareAutoLoanDecision,
    getDecision,
    getDecisionJson,
    prefetchPoll,
    pollCacheGeneration,
    rememberCreated,
    getAuditRecord,
    listForConsumer,
    prepareVerifiedCompletion,
    finalizeFailedVerification,
    finalizeExpired,
    expireOverdue,
    findByVerificationToken,
    /** The scorecard and policy in force for a scope (underwriting prices overrides with it). */
    documentsFor: deps.documentsFor,
  };
}

export type DecisionsService = ReturnType<typeof createDecisionsService>;

interface Ids {
  decisionId: string;
  applicationId: string;
  consumerId: string;
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** The product's own columns of a new decision row: what was asked for, by whom, where. */
type RowSeed = Pick<
  DecisionsTable,
  'product' | 'currency' | 'requested_amount_cents' | 'requested_plan' | 'requested_term_months' | 'merchant_name' | 'merchant_category'
> &
  Partial<Pick<DecisionsTable, 'channel' | 'dealer_id' | 'vin' | 'auto_loan_json' | 'ltv'>>;

/** What `prepareDecision` needs from a product, once its request rules have passed. */
interface Intake {
  applicant: ApplicantRef;
  /** The amount the KYC tier is chosen by (BNPL: requested; auto loans: amount financed). */
  tierAmountCents: number;
  /** The product's documents, read once: they choose the KYC tier and decide. */
  documents: ProductEngineDocuments[Product];
  seed: RowSeed;
  request: ProductRequest;
  /** The request for the audit record, PII removed. */
  redacted: Record<string, unknown>;
}

/** What the engine and the offer need, per product; rebuilt from the row when a pending decision completes. */
type ProductRequest =
  | { product: 'bnpl'; amountCents: number; requestedPlan: Plan | null; requestedTermMonths: number | null }
  | {
      product: 'auto_loan';
      terms: AutoLoanTerms;
      markupBps: number;
      /** An indirect loan's `loan.amount`: it is a credit sale, disclosed with its total sale price. Null for direct. */
      loanAmountCents: number | null;
    };

function bnplSeed(application: BnplApplication): RowSeed {
  return {
    product: 'bnpl',
    currency: application.currency,
    requested_amount_cents: application.amountCents,
    requested_plan: application.requestedPlan,
    requested_term_months: application.requestedTermMonths,
    merchant_name: application.merchantName,
    merchant_category: application.merchantCategory,
  };
}

/** Stored form of an auto-loan application (auto_loan_json): enough to decide it again after verification. */
export interface StoredAutoLoan {
  vehicle: { vin: string; year: number; make: string; model: string; mileage: number; condition: 'new' | 'used'; value_cents: number; age_years: number };
  loan: { amount_cents: number; down_payment_cents: number; trade_in_value_cents: number; amount_financed_cents: number; term_months: number };
  ltv_hundredths: number;
  markup_bps: number;
}

function autoLoanSeed(application: AutoLoanApplication, merchantName: string): RowSeed {
  const { vehicle, loan } = application;
  const stored: StoredAutoLoan = {
    vehicle: { vin: vehicle.vin, year: vehicle.year, make: vehicle.make, model: vehicle.model, mileage: vehicle.mileage, condition: vehicle.condition, value_cents: vehicle.valueCents, age_years: vehicle.ageYears },
    loan: { amount_cents: loan.amountCents, down_payment_cents: loan.downPaymentCents, trade_in_value_cents: loan.tradeInValueCents, amount_financed_cents: loan.amountFinancedCents, term_months: loan.termMonths },
    ltv_hundredths: application.ltvHundredths,
    markup_bps: application.dealer?.markupBps ?? 0,
  };
  return {
    product: 'auto_loan',
    currency: application.currency,
    requested_amount_cents: loan.amountFinancedCents,
    requested_plan: null,
    requested_term_months: loan.termMonths,
    // The dealer (indirect) or the lender (direct): the hosted verification page names it.
    merchant_name: merchantName,
    merchant_category: 'automotive',
    channel: application.channel,
    dealer_id: application.dealer?.dealerId ?? null,
    vin: vehicle.vin,
    auto_loan_json: JSON.stringify(stored),
    ltv: formatLtv(application.ltvHundredths),
  };
}

function autoLoanRequestOf(application: AutoLoanApplication): ProductRequest {
  return {
    product: 'auto_loan',
    terms: {
      amountFinancedCents: application.loan.amountFinancedCents,
      termMonths: application.loan.termMonths,
      ltvPct: ltvPctForPolicy(application.loan.amountFinancedCents, application.vehicle.valueCents),
      vehicleAgeYears: application.vehicle.ageYears,
      mileage: application.vehicle.mileage,
      condition: application.vehicle.condition,
    },
    markupBps: application.dealer?.markupBps ?? 0,
    loanAmountCents: application.channel === 'indirect' ? application.loan.amountCents : null,
  };
}

/** The stored application of an auto-loan decision row (vehicle, loan, LTV, dealer markup); null for BNPL. */
export function storedAutoLoanOf(row: Pick<DecisionsTable, 'product' | 'auto_loan_json'>): StoredAutoLoan | null {
  return row.product === 'auto_loan' && row.auto_loan_json ? (JSON.parse(row.auto_loan_json) as StoredAutoLoan) : null;
}

function requestOfRow(row: DecisionsTable): ProductRequest {
  if (row.product === 'auto_loan') {
    const stored = JSON.parse(row.auto_loan_json!) as StoredAutoLoan;
    return {
      product: 'auto_loan',
      terms: {
        amountFinancedCents: stored.loan.amount_financed_cents,
        termMonths: stored.loan.term_months,
        ltvPct: ltvPctForPolicy(stored.loan.amount_financed_cents, stored.vehicle.value_cents),
        vehicleAgeYears: stored.vehicle.age_years,
        mileage: stored.vehicle.mileage,
        condition: stored.vehicle.condition,
      },
      markupBps: stored.markup_bps,
      loanAmountCents: row.channel === 'indirect' ? stored.loan.amount_cents : null,
    };
  }
  return { product: 'bnpl', amountCents: Number(row.requested_amount_cents), requestedPlan: row.requested_plan as Plan | null, requestedTermMonths: row.requested_term_months };
}

function baseRow(scope: Scope, seed: RowSeed, ids: Ids, now: Date) {
  // Decision rows are merged with Object.assign, never `{ ...a, b }`: docs/performance.md,
  // "objects built by spreading" (on Node 20 each such object gets a map of its own).
  const identity = {
    id: ids.decisionId,
    application_id: ids.applicationId,
    tenant_id: scope.tenantId,
    environment: scope.environment,
    consumer_id: ids.consumerId,
  };
  return Object.assign(identity, seed, {
    approved_amount_cents: null,
    plan: null,
    term_months: null,
    apr: null,
    payment_frequency: null,
    schedule_json: null,
    tila_json: null,
    reasons_json: '[]',
    score: null,
    risk_grade: null,
    engine_version: null,
    verification_token_hash: null,
    verification_token_sealed: null,
    created_at: now.getTime(),
    updated_at: now.getTime(),
    completed_at: null,
    version: 1,
  });
}

function identityFor(existing: Consumer | null, applicant: ApplicantRef) {
  if (existing) return { firstName: existing.firstName, lastName: existing.lastName, dob: existing.dob, zip: existing.address.zip };
  const identity = applicant.kind === 'new' ? applicant.identity : never();
  return { firstName: identity.firstName, lastName: identity.lastName, dob: identity.dob, zip: identity.address.zip };
}

interface EvaluateArgs {
  scope: Scope;
  consumerId: string;
  identity: { firstName: string; lastName: string; dob: string; zip: string };
  ssnLast4: string | null;
  sandboxProfile: Consumer['sandboxProfile'];
  returning: boolean;
  /** A returning consumer's history when already read (with the consumer); else read here. */
  history?: ConsumerHistory | null;
  request: ProductRequest;
  now: Date;
  documents: ProductEngineDocuments[Product];
}

interface Evaluation {
  engine: BnplEngineDecision | AutoLoanEngineDecision;
  creditData: CreditDataResult;
  outcome: BnplEngineDecision['outcome'];
  reasons: AdverseActionReason[];
  timings: Record<string, number>;
  /** An approval's offer columns (schedule, TILA, APR; auto loans also rates and reserve); null otherwise. */
  offerColumns: Partial<DecisionsTable> | null;
  offerAudit: Record<string, unknown> | null;
}

/** The approval as an offer: the engine's plan and amount, the caller's term for monthly, priced at the engine's rate. */
function offerFor(engine: BnplEngineDecision, requestedTermMonths: number | null, now: Date): Offer {
  const plan = engine.plan as Plan;
  const amount = engine.approvedAmountCents!;
  const termMonths = plan === 'monthly' ? (requestedTermMonths ?? monthlyTermFor(amount)) : undefined;
  const input: BuildOfferInput = { plan, amountCents: amount, annualRateBps: engine.rateBps ?? 0, decisionDate: now.toISOString().slice(0, 10) };
  if (termMonths !== undefined) input.termMonths = termMonths;
  return buildOffer(input);
}

/**
 * The offer columns of a BNPL approval. Exported for the underwriter's override
 * (underwriting.service.ts), which must write exactly what an automatic approval writes.
 */
export function bnplOfferColumns(offer: Offer, extraTila?: Record<string, string>): Partial<DecisionsTable> {
  const wire = presentOffer(offer);
  if (extraTila) Object.assign(wire.tila_disclosure, extraTila);
  return {
    approved_amount_cents: offer.approvedAmountCents,
    plan: offer.plan,
    term_months: offer.termMonths,
    apr: offer.apr,
    payment_frequency: offer.paymentFrequency,
    schedule_json: JSON.stringify(wire.payment_schedule),
    tila_json: JSON.stringify(wire.tila_disclosure),
  };
}

/**
 * The offer columns of an auto-loan approval: the schedule at the contract rate, and its rates and
 * reserve. Exported for the underwriter's override (underwriting.service.ts), which must write
 * exactly what an automatic approval writes.
 */
export function autoLoanOfferColumns(loan: AutoLoanOffer): Partial<DecisionsTable> {
  // `plan` is the BNPL plan vocabulary; an auto loan has none.
  // An indirect loan is a credit sale: its TILA block adds the total sale price (auto-loan-offer.ts).
  return Object.assign(bnplOfferColumns(loan.offer, creditSaleWire(loan)), {
    plan: null,
    buy_rate: formatRateBps(loan.buyRateBps),
    contract_rate: formatRateBps(loan.contractRateBps),
    dealer_reserve_cents: loan.dealerReserveCents,
  });
}

/** The audit record of an auto-loan offer (automatic approval and underwriter override alike). */
export function autoLoanOfferAudit(loan: AutoLoanOffer, reserveSharePct: number): Record<string, unknown> {
  const sale = loan.creditSale;
  return Object.assign(
    offerAuditOf(loan.offer),
    { buy_rate_bps: loan.buyRateBps, markup_bps: loan.markupBps, contract_rate_bps: loan.contractRateBps, buy_rate_finance_charge_cents: loan.buyRateFinanceChargeCents, dealer_reserve_cents: loan.dealerReserveCents, reserve_share_pct: reserveSharePct },
    sale ? { loan_amount_cents: sale.loanAmountCents, total_down_payment_cents: sale.totalDownPaymentCents, total_sale_price_cents: sale.totalSalePriceCents } : {},
  );
}

/** The audit record of a BNPL offer (automatic approval and underwriter override alike). */
export function offerAuditOf(offer: Offer): Record<string, unknown> {
  return { plan: offer.plan, approved_amount_cents: offer.approvedAmountCents, annual_rate_bps: offer.annualRateBps, apr: offer.apr, apr_exact: offer.aprExact, term_months: offer.termMonths };
}

/** The columns a decided (engine-path) decision sets. */
function decidedColumns(e: Evaluation, now: Date) {
  const cleared = {
    outcome: e.outcome,
    approved_amount_cents: null,
    plan: null,
    term_months: null,
    apr: null,
    payment_frequency: null,
    schedule_json: null,
    tila_json: null,
  };
  return Object.assign(cleared, e.offerColumns, {
    reasons_json: JSON.stringify(e.reasons),
    score: e.engine.score,
    risk_grade: e.engine.riskGrade,
    engine_version: e.engine.engineVersion,
    // An approved offer is valid for 30 days from the decision (decisions.md section 5).
    expires_at: now.getTime() + OFFER_TTL_MS,
    completed_at: now.getTime(),
  });
}

function auditOf(e: Evaluation, kyc: Record<string, unknown>) {
  return {
    kyc,
    credit_data:
      e.creditData.status === 'ok'
        ? { status: 'ok', source: e.creditData.file.source, file_id: e.creditData.file.fileId, latency_ms: e.creditData.latencyMs }
        : { status: 'unavailable', reason: e.creditData.reason, latency_ms: e.creditData.latencyMs },
    engine: e.engine,
    outcome: e.outcome,
    reasons: e.reasons,
    offer: e.offerAudit,
    timings: e.timings,
  };
}

function redactedRequest(application: BnplApplication) {
  // No names, contact details, date of birth, address or SSN digits: only what explains the decision.
  return {
    amount: formatMoney(application.amountCents),
    currency: application.currency,
    requested_plan: application.requestedPlan,
    requested_term_months: application.requestedTermMonths,
    merchant_category: application.merchantCategory,
    applicant: application.applicant.kind === 'existing' ? { kind: 'existing', consumer_id: application.applicant.consumerId } : { kind: 'new', state: application.applicant.identity.address.state, ssn_last4_given: application.applicant.identity.ssnLast4 !== null },
  };
}

/** The request for the audit record: the vehicle (the VIN is not PII) and loan figures, no identity. */
function redactedAutoLoanRequest(application: AutoLoanApplication) {
  const { vehicle, loan } = application;
  return {
    product: 'auto_loan',
    vehicle: { vin: vehicle.vin, year: vehicle.year, make: vehicle.make, model: vehicle.model, mileage: vehicle.mileage, condition: vehicle.condition, value: formatMoney(vehicle.valueCents), age_years: vehicle.ageYears },
    loan: {
      amount: formatMoney(loan.amountCents),
      down_payment: formatMoney(loan.downPaymentCents),
      trade_in_value: formatMoney(loan.tradeInValueCents),
      amount_financed: formatMoney(loan.amountFinancedCents),
      term_months: loan.termMonths,
      currency: application.currency,
    },
    ltv: formatLtv(application.ltvHundredths),
    channel: application.channel,
    dealer: application.dealer ? { dealer_id: application.dealer.dealerId, markup_rate_pct: formatRateBps(application.dealer.markupBps) } : null,
    applicant: application.applicant.kind === 'existing' ? { kind: 'existing', consumer_id: application.applicant.consumerId } : { kind: 'new', state: application.applicant.identity.address.state, ssn_last4_given: application.applicant.identity.ssnLast4 !== null },
  };
}

function openingEvents(row: DecisionsTable): NewEvent[] {
  return [
    {
      type: 'application.created',
      subjectId: row.id,
      data: {
        application_id: row.application_id,
        decision_id: row.id,
        consumer_id: row.consumer_id,
        product: row.product,
        amount: formatMoney(Number(row.requested_amount_cents)),
        currency: row.currency,
        kyc_tier: row.kyc_tier,
        merchant_name: row.merchant_name,
        merchant_category: row.merchant_category,
        // Auto loans: `direct` or `indirect`, and the dealer of an indirect loan; null for BNPL.
        channel: row.channel ?? null,
        dealer_id: row.dealer_id ?? null,
      },
    },
    {
      type: 'decision.created',
      subjectId: row.id,
      data: { decision_id: row.id, application_id: row.application_id, status: row.status, kyc_tier: row.kyc_tier, kyc_status: row.kyc_status },
    },
  ];
}

function scoreEvent(row: DecisionsTable, e: Evaluation): NewEvent {
  if (e.creditData.status !== 'ok') {
    return { type: 'score.errored', subjectId: row.id, data: { decision_id: row.id, application_id: row.application_id, reason: e.creditData.reason, engine_version: e.engine.engineVersion } };
  }
  const file = e.creditData.file.hasFile ? e.creditData.file : null;
  return {
    type: 'score.completed',
    subjectId: row.id,
    data: {
      decision_id: row.id,
      application_id: row.application_id,
      score: e.engine.score,
      confidence: e.engine.confidence,
      risk_grade: e.engine.riskGrade,
      engine_version: e.engine.engineVersion,
      // What an FCRA 615(a) disclosure needs beside the score, should it be used in adverse action
      // (engine/key-factors.ts); the event's `created` is its date. No file: nothing to disclose.
      score_range: scoreRangeOf(e.engine.versions.scorecard),
      key_factor_codes: file ? keyFactorCodes(e.engine.partialScores) : [],
      credit_file_source: file?.source ?? null,
    },
  };
}

function kycFailedEvent(row: DecisionsTable): NewEvent {
  return {
    type: 'application.kyc_failed',
    subjectId: row.id,
    data: { application_id: row.application_id, decision_id: row.id, consumer_id: row.consumer_id, kyc_tier: row.kyc_tier, reason_code: 'AA-24' },
  };
}

function kycCompletedEvent(row: DecisionsTable): NewEvent {
  return {
    type: 'application.kyc_completed',
    subjectId: row.id,
    data: { application_id: row.application_id, decision_id: row.id, consumer_id: row.consumer_id, kyc_tier: row.kyc_tier, kyc_status: 'matched' },
  };
}

interface Scoring {
  score: number | null;
  confidence: number;
  recommendedAmountCents: number;
  recommendedRatePct: number;
  riskGrade: string | null;
  reasonCodes: string[];
  engineVersion: string;
}

/** The scoring facts of an engine-path decision. */
function scoringOf(row: DecisionsTable, e: Evaluation): Scoring {
  return {
    score: e.engine.score,
    confidence: e.engine.confidence,
    recommendedAmountCents: row.outcome === 'approved' ? row.approved_amount_cents! : e.engine.recommendedAmountCents,
    recommendedRatePct: e.engine.recommendedRatePct,
    riskGrade: e.engine.riskGrade,
    reasonCodes: finalizedReasons(e).map((r) => r.code),
    engineVersion: e.engine.engineVersion,
  };
}

/**
 * The reasons `decision.finalized` carries: a decline's or a referral's; none for an approval in
 * full; for a counteroffer (approved for less than asked), the principal reasons the full amount was
 * not offered, which the lender's adverse-action notice needs if the consumer does not take the
 * lower amount (12 CFR 1002.9(a)(1)(iv)). The decision body itself keeps `decline_reasons` empty
 * on every approval (interface.md).
 */
function finalizedReasons(e: Evaluation): AdverseActionReason[] {
  return e.outcome === 'approved' && 'counterofferReasons' in e.engine ? e.engine.counterofferReasons : e.reasons;
}

/** A policy-path decision (verification failed, or expired): nothing was scored. */
function unscored(reasonCodes: string[], engineVersion: string): Scoring {
  return { score: null, confidence: 0, recommendedAmountCents: 0, recommendedRatePct: 0, riskGrade: null, reasonCodes, engineVersion };
}

/** decision.finalized (interface.md, data of decision.finalized; score and risk_grade null when nothing was scored). */
function finalizedEvent(row: DecisionsTable, s: Scoring): NewEvent {
  return {
    type: 'decision.finalized',
    subjectId: row.id,
    data: {
      decision_id: row.id,
      application_id: row.application_id,
      outcome: row.outcome,
      score: s.score,
      confidence: s.confidence,
      recommended_amount: centsToNumber(s.recommendedAmountCents),
      recommended_rate_pct: s.recommendedRatePct,
      risk_grade: s.riskGrade,
      reason_codes: s.reasonCodes,
      engine_version: s.engineVersion,
    },
  };
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

function never(): never {
  throw new Error('unreachable');
}
