/**
 * BNPL decisions: the use cases, in the order they happen.
 *
 * createBnplDecision
 *   1. normalise the request (400/422 rules)              bnpl-request.ts
 *   2. resolve the applicant (returning or new)           consumers service
 *   3. choose the KYC tier from the policy                engine (policy constants)
 *   enhanced/hard: 4p. open a pending state with a hosted-verification token; commit.
 *   soft:          4. identity check (sandbox magic 2222 fails; a returning verified consumer skips)
 *                  5. credit data (sandbox synthetic file, or the lender's gateway) BEFORE the
 *                     transaction: nothing slow happens while locks are held
 *                  6. the engine decides; an approval becomes an offer (schedule, APR, TILA)
 *                  7. one transaction: consumer, decision, audit record, events, idempotency record
 * getDecision: one indexed read, scoped to tenant and environment (others are "not found").
 */
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Config, Environment } from '../../config/config.js';
import type { Database, DecisionsTable } from '../../db/schema.js';
import { ApiError } from '../../http/errors/error-registry.js';
import type { Clock, Random } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/crypto.js';
import { centsToNumber, formatMoney } from '../../lib/money.js';
import type { Consumer, ConsumersService } from '../consumers/consumers.service.js';
import type { CreditDataConnector, CreditDataResult } from '../credit-data/credit-data.types.js';
import { SANDBOX_MAGIC_SSN_LAST4 } from '../credit-data/sandbox-connector.js';
import { adverseActionReason, decideBnpl, kycTierFor, type BnplEngineDecision, type EngineDocuments } from '../engine/index.js';
import type { NewEvent, Outbox } from '../events/outbox.js';
import { buildOffer, presentOffer, type Offer } from '../offers/offer.js';
import { monthlyTermFor, type Plan } from '../offers/schedule.js';
import { normalizeBnplRequest, type BnplApplication, type BnplCreateBody } from './bnpl-request.js';
import { presentDecision } from './decision.presenter.js';

export interface Scope {
  tenantId: string;
  environment: Environment;
}

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
  /** The scorecard and policy deciding for a tenant and environment. */
  documentsFor(scope: Scope): EngineDocuments;
  merchantDefaultsFor(tenantId: string): Promise<{ merchantName: string; merchantCategory: string }>;
}

export interface DecisionView {
  row: DecisionsTable;
  body: Record<string, unknown>;
}

export function createDecisionsService(deps: DecisionsDeps) {
  const { clock, random } = deps;

  /**
   * Everything that can be decided before the transaction; returns the function that writes it.
   * Split so the route can run the write inside the idempotency transaction.
   */
  async function prepareBnplDecision(scope: Scope, body: BnplCreateBody): Promise<(trx: Kysely<Database>) => Promise<DecisionView>> {
    const startedMs = performance.now();
    const now = clock.now();
    const merchantDefaults = await deps.merchantDefaultsFor(scope.tenantId);
    const application = normalizeBnplRequest(body, merchantDefaults, now);
    const documents = deps.documentsFor(scope);

    let existing: Consumer | null = null;
    if (application.applicant.kind === 'existing') {
      existing = await deps.consumers.findConsumer(scope, application.applicant.consumerId);
      if (!existing) throw new ApiError('unprocessable_entity', 'consumer.consumer_id does not match a consumer of this tenant and environment.');
    }
    const tier = kycTierFor(application.amountCents, documents.policy);
    const ssnLast4 =
      application.applicant.kind === 'new' ? application.applicant.identity.ssnLast4 : existing!.hasSsnLast4 ? await deps.consumers.revealSsnLast4(existing!.id) : null;
    if (tier !== 'soft' && ssnLast4 === null) {
      throw new ApiError('unprocessable_entity', `consumer.ssn_last4 is required for this amount (${tier} identity verification).`);
    }

    const decisionId = random.uuid();
    const consumerId = existing?.id ?? random.uuid();
    const ids = { decisionId, applicationId: decisionId, consumerId };
    if (tier !== 'soft') return (trx) => writePending(trx, scope, application, ids, tier, now);

    // Soft tier: identity check, credit data, engine, offer: all before the transaction.
    const identity = identityFor(existing, application);
    const verificationFails = scope.environment === 'sandbox' && ssnLast4 === SANDBOX_MAGIC_SSN_LAST4.verificationFails;
    const creditStarted = performance.now();
    const creditData = await deps.creditData[scope.environment].fetchCreditFile(
      { consumerId, firstName: identity.firstName, lastName: identity.lastName, dob: identity.dob, ssnLast4, zip: identity.zip, sandboxProfile: existing?.sandboxProfile ?? null },
      { asOf: now, tenantId: scope.tenantId },
    );
    const creditMs = performance.now() - creditStarted;
    const history = existing ? await deps.consumers.history(existing.id) : { priorApplications: 0, priorApprovals: 0, priorDeclines: 0, priorReferrals: 0 };
    const engine = await decideBnpl(
      {
        requestedAmountCents: application.amountCents,
        planPreference: application.requestedPlan,
        history: { returning: existing !== null, priorApprovals: history.priorApprovals, priorDeclines: history.priorDeclines },
        creditData,
        asOf: now.toISOString(),
      },
      documents,
    );

    const kycStatus: DecisionsTable['kyc_status'] = verificationFails ? 'pending' : existing?.identityStatus === 'verified' ? 'skipped' : 'matched';
    let outcome = engine.outcome;
    let reasons = engine.reasons;
    if (verificationFails) {
      // The identity could not be verified: a person must look at it, whatever the score says.
      outcome = 'referred';
      reasons = [adverseActionReason('AA-24')];
    }
    const offer = outcome === 'approved' ? offerFor(engine, application, now) : null;
    const timings = { creditDataMs: round(creditMs), engineMs: engine.timings.totalMs, preparedMs: round(performance.now() - startedMs) };

    return async (trx) => {
      if (!existing) await deps.consumers.createConsumer(trx, scope, application.applicant.kind === 'new' ? application.applicant.identity : never(), consumerId);
      if (!verificationFails && existing?.identityStatus !== 'verified') await deps.consumers.setIdentityStatus(trx, consumerId, 'verified');
      if (verificationFails) await deps.consumers.setIdentityStatus(trx, consumerId, 'failed');
      const row: DecisionsTable = {
        ...baseRow(scope, application, ids, now),
        status: 'complete',
        kyc_tier: 'soft',
        kyc_status: kycStatus,
        outcome,
        approved_amount_cents: offer?.approvedAmountCents ?? null,
        plan: offer?.plan ?? null,
        term_months: offer?.termMonths ?? null,
        apr: offer?.apr ?? null,
        payment_frequency: offer?.paymentFrequency ?? null,
        schedule_json: offer ? JSON.stringify(presentOffer(offer).payment_schedule) : null,
        tila_json: offer ? JSON.stringify(presentOffer(offer).tila_disclosure) : null,
        reasons_json: JSON.stringify(reasons),
        score: engine.score,
        risk_grade: engine.riskGrade,
        engine_version: engine.engineVersion,
        expires_at: now.getTime() + OFFER_TTL_MS,
        completed_at: now.getTime(),
      };
      await trx.insertInto('decisions').values(row).execute();
      await trx
        .insertInto('decision_audits')
        .values({ decision_id: decisionId, created_at: now.getTime(), record_json: JSON.stringify(auditRecord(application, existing, engine, creditData, offer, { kycStatus, verificationFails, timings })) })
        .execute();
      await deps.outbox.append(trx, scope, [
        ...openingEvents(row, application),
        scoreEvent(row, engine, creditData),
        ...(verificationFails ? [kycFailedEvent(row)] : []),
        finalizedEvent(row, engine, reasons.map((r) => r.code)),
      ]);
      return { row, body: presentDecision(row, null) };
    };
  }

  async function writePending(trx: Kysely<Database>, scope: Scope, application: BnplApplication, ids: Ids, tier: 'enhanced' | 'hard', now: Date): Promise<DecisionView> {
    if (application.applicant.kind === 'new') await deps.consumers.createConsumer(trx, scope, application.applicant.identity, ids.consumerId);
    // The hosted page's token: unguessable, single-use, never the decision id. Looked up by hash;
    // kept sealed only so a poll can show the same consumer_complete_url.
    const token = random.bytes(32).toString('base64url');
    const row: DecisionsTable = {
      ...baseRow(scope, application, ids, now),
      status: 'needs_consumer_action',
      kyc_tier: tier,
      kyc_status: 'pending',
      outcome: null,
      verification_token_hash: hashToken(token),
      verification_token_sealed: deps.secretBox.seal(token, ids.decisionId),
      expires_at: now.getTime() + PENDING_TTL_MS[tier],
    };
    await trx.insertInto('decisions').values(row).execute();
    await trx
      .insertInto('decision_audits')
      .values({ decision_id: ids.decisionId, created_at: now.getTime(), record_json: JSON.stringify({ request: redactedRequest(application), kyc: { tier, status: 'pending' } }) })
      .execute();
    await deps.outbox.append(trx, scope, openingEvents(row, application));
    return { row, body: presentDecision(row, completeUrl(token)) };
  }

  async function getDecision(scope: Scope, product: 'bnpl', decisionId: string): Promise<DecisionView | null> {
    const row = await deps.readDb
      .selectFrom('decisions')
      .selectAll()
      .where('id', '=', decisionId.toLowerCase())
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .where('product', '=', product)
      .executeTakeFirst();
    if (!row) return null;
    const url = row.status === 'needs_consumer_action' && row.verification_token_sealed ? completeUrl(deps.secretBox.openText(row.verification_token_sealed, row.id)) : null;
    return { row, body: presentDecision(row, url) };
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

  function completeUrl(token: string): string {
    return `${deps.config.publicBaseUrl}/verify/${token}`;
  }

  return { prepareBnplDecision, getDecision, getAuditRecord };
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

function baseRow(scope: Scope, application: BnplApplication, ids: Ids, now: Date) {
  return {
    id: ids.decisionId,
    application_id: ids.applicationId,
    tenant_id: scope.tenantId,
    environment: scope.environment,
    consumer_id: ids.consumerId,
    product: 'bnpl' as const,
    currency: application.currency,
    requested_amount_cents: application.amountCents,
    requested_plan: application.requestedPlan,
    requested_term_months: application.requestedTermMonths,
    merchant_name: application.merchantName,
    merchant_category: application.merchantCategory,
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
  };
}

function identityFor(existing: Consumer | null, application: BnplApplication) {
  if (existing) return { firstName: existing.firstName, lastName: existing.lastName, dob: existing.dob, zip: existing.address.zip };
  const identity = application.applicant.kind === 'new' ? application.applicant.identity : never();
  return { firstName: identity.firstName, lastName: identity.lastName, dob: identity.dob, zip: identity.address.zip };
}

/** The approval as an offer: the engine's plan and amount, the caller's term for monthly, priced at the engine's rate. */
function offerFor(engine: BnplEngineDecision, application: BnplApplication, now: Date): Offer {
  const plan = engine.plan as Plan;
  const amount = engine.approvedAmountCents!;
  const termMonths = plan === 'monthly' ? (application.requestedTermMonths ?? monthlyTermFor(amount)) : undefined;
  return buildOffer({
    plan,
    amountCents: amount,
    annualRateBps: engine.rateBps ?? 0,
    ...(termMonths !== undefined ? { termMonths } : {}),
    decisionDate: now.toISOString().slice(0, 10),
  });
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

function auditRecord(
  application: BnplApplication,
  existing: Consumer | null,
  engine: BnplEngineDecision,
  creditData: CreditDataResult,
  offer: Offer | null,
  extra: { kycStatus: string; verificationFails: boolean; timings: Record<string, number> },
) {
  return {
    request: redactedRequest(application),
    kyc: { tier: 'soft', status: extra.kycStatus, identity_verification_failed: extra.verificationFails, returning_verified: existing?.identityStatus === 'verified' },
    credit_data: creditData.status === 'ok' ? { status: 'ok', source: creditData.file.source, file_id: creditData.file.fileId, latency_ms: creditData.latencyMs } : { status: 'unavailable', reason: creditData.reason, latency_ms: creditData.latencyMs },
    engine,
    offer: offer ? { plan: offer.plan, approved_amount_cents: offer.approvedAmountCents, annual_rate_bps: offer.annualRateBps, apr: offer.apr, apr_exact: offer.aprExact, term_months: offer.termMonths } : null,
    timings: extra.timings,
  };
}

function openingEvents(row: DecisionsTable, application: BnplApplication): NewEvent[] {
  return [
    {
      type: 'application.created',
      subjectId: row.id,
      data: {
        application_id: row.application_id,
        decision_id: row.id,
        consumer_id: row.consumer_id,
        product: row.product,
        amount: formatMoney(application.amountCents),
        currency: row.currency,
        kyc_tier: row.kyc_tier,
        merchant_name: row.merchant_name,
        merchant_category: row.merchant_category,
      },
    },
    {
      type: 'decision.created',
      subjectId: row.id,
      data: { decision_id: row.id, application_id: row.application_id, status: row.status, kyc_tier: row.kyc_tier, kyc_status: row.kyc_status },
    },
  ];
}

function scoreEvent(row: DecisionsTable, engine: BnplEngineDecision, creditData: CreditDataResult): NewEvent {
  if (creditData.status !== 'ok') {
    return { type: 'score.errored', subjectId: row.id, data: { decision_id: row.id, application_id: row.application_id, reason: creditData.reason, engine_version: engine.engineVersion } };
  }
  return {
    type: 'score.completed',
    subjectId: row.id,
    data: { decision_id: row.id, application_id: row.application_id, score: engine.score, confidence: engine.confidence, risk_grade: engine.riskGrade, engine_version: engine.engineVersion },
  };
}

function kycFailedEvent(row: DecisionsTable): NewEvent {
  return {
    type: 'application.kyc_failed',
    subjectId: row.id,
    data: { application_id: row.application_id, decision_id: row.id, consumer_id: row.consumer_id, kyc_tier: row.kyc_tier, reason_code: 'AA-24' },
  };
}

export function finalizedEvent(row: DecisionsTable, engine: BnplEngineDecision, reasonCodes: string[]): NewEvent {
  return {
    type: 'decision.finalized',
    subjectId: row.id,
    data: {
      decision_id: row.id,
      application_id: row.application_id,
      outcome: row.outcome,
      score: engine.score,
      confidence: engine.confidence,
      recommended_amount: centsToNumber(row.outcome === 'approved' ? row.approved_amount_cents! : engine.recommendedAmountCents),
      recommended_rate_pct: engine.recommendedRatePct,
      risk_grade: engine.riskGrade,
      reason_codes: reasonCodes,
      engine_version: engine.engineVersion,
    },
  };
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

function never(): never {
  throw new Error('unreachable');
}
