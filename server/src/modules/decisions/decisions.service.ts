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
import { formatCentsGrouped } from '../../http/errors/messages.js';
import type { Clock, Random } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/crypto.js';
import { centsToNumber, formatMoney } from '../../lib/money.js';
import type { Consumer, ConsumersService } from '../consumers/consumers.service.js';
import type { CreditDataConnector, CreditDataResult } from '../credit-data/credit-data.types.js';
import { SANDBOX_MAGIC_SSN_LAST4 } from '../credit-data/sandbox-connector.js';
import { adverseActionReason, decideBnpl, engineVersionOf, kycTierFor, type AdverseActionReason, type BnplEngineDecision, type EngineDocuments } from '../engine/index.js';
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

export function createDecisionsService(deps: DecisionsDeps) {
  const { clock, random } = deps;

  /**
   * Everything that can be decided before the transaction; returns the function that writes it.
   * Split so the route can run the write inside the idempotency transaction.
   */
  async function prepareBnplDecision(scope: Scope, body: BnplCreateBody): Promise<(trx: Kysely<Database>) => Promise<DecisionView>> {
    const startedMs = performance.now();
    const now = clock.now();
    // Only the `order` form may leave the merchant out; look the tenant's defaults up only then,
    // so the usual create costs no extra round trip.
    const money = body.order ?? body.transaction;
    const needsDefaults = money !== undefined && (money.merchant_name === undefined || money.merchant_category === undefined);
    const merchantDefaults = needsDefaults ? await deps.merchantDefaultsFor(scope.tenantId) : { merchantName: '', merchantCategory: '' };
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
      const { enhancedFromCents, hardFromCents } = documents.policy.constants.kycTiers;
      const band = tier === 'hard' ? `from ${formatCentsGrouped(hardFromCents)} USD` : `from ${formatCentsGrouped(enhancedFromCents)} to below ${formatCentsGrouped(hardFromCents)} USD`;
      throw new ApiError(
        'unprocessable_entity',
        `consumer.ssn_last4 is required for amounts ${band} (${tier} identity verification); below ${formatCentsGrouped(enhancedFromCents)} USD it is optional.`,
      );
    }

    const decisionId = random.uuid();
    const consumerId = existing?.id ?? random.uuid();
    const ids = { decisionId, applicationId: decisionId, consumerId };
    if (tier !== 'soft') return (trx) => writePending(trx, scope, application, ids, tier, now);

    // Soft tier: identity check, credit data, engine, offer: all before the transaction.
    const verificationFails = scope.environment === 'sandbox' && ssnLast4 === SANDBOX_MAGIC_SSN_LAST4.verificationFails;
    const evaluation = await evaluate({
      scope,
      consumerId,
      identity: identityFor(existing, application),
      ssnLast4,
      sandboxProfile: existing?.sandboxProfile ?? null,
      returning: existing !== null,
      amountCents: application.amountCents,
      requestedPlan: application.requestedPlan,
      requestedTermMonths: application.requestedTermMonths,
      now,
    });
    const kycStatus: DecisionsTable['kyc_status'] = verificationFails ? 'pending' : existing?.identityStatus === 'verified' ? 'skipped' : 'matched';
    if (verificationFails) {
      // The identity could not be verified: a person must look at it, whatever the score says.
      evaluation.outcome = 'referred';
      evaluation.reasons = [adverseActionReason('AA-24')];
      evaluation.offer = null;
    }
    evaluation.timings.preparedMs = round(performance.now() - startedMs);

    return async (trx) => {
      if (!existing) await deps.consumers.createConsumer(trx, scope, application.applicant.kind === 'new' ? application.applicant.identity : never(), consumerId);
      if (verificationFails) await deps.consumers.setIdentityStatus(trx, consumerId, 'failed');
      else if (existing?.identityStatus !== 'verified') await deps.consumers.setIdentityStatus(trx, consumerId, 'verified');
      const row: DecisionsTable = {
        ...baseRow(scope, application, ids, now),
        ...decidedColumns(evaluation, now),
        status: 'complete',
        kyc_tier: 'soft',
        kyc_status: kycStatus,
      };
      await trx.insertInto('decisions').values(row).execute();
      await trx
        .insertInto('decision_audits')
        .values({ decision_id: decisionId, created_at: now.getTime(), record_json: JSON.stringify({ request: redactedRequest(application), ...auditOf(evaluation, { tier: 'soft', status: kycStatus, identity_verification_failed: verificationFails }) }) })
        .execute();
      await deps.outbox.append(trx, scope, [
        ...openingEvents(row, application),
        scoreEvent(row, evaluation),
        ...(verificationFails ? [kycFailedEvent(row)] : []),
        finalizedEvent(row, scoringOf(row, evaluation)),
      ]);
      return { row, body: presentDecision(row, null) };
    };
  }

  /** Credit data, engine and offer for one application. Slow parts (a live pull) happen here, outside any transaction. */
  async function evaluate(args: EvaluateArgs): Promise<Evaluation> {
    const creditStarted = performance.now();
    const creditData = await deps.creditData[args.scope.environment].fetchCreditFile(
      { consumerId: args.consumerId, ...args.identity, ssnLast4: args.ssnLast4, sandboxProfile: args.sandboxProfile },
      { asOf: args.now, tenantId: args.scope.tenantId },
    );
    const creditDataMs = round(performance.now() - creditStarted);
    const history = args.returning ? await deps.consumers.history(args.consumerId) : { priorApprovals: 0, priorDeclines: 0 };
    const engine = await decideBnpl(
      {
        requestedAmountCents: args.amountCents,
        planPreference: args.requestedPlan,
        history: { returning: args.returning, priorApprovals: history.priorApprovals, priorDeclines: history.priorDeclines },
        creditData,
        asOf: args.now.toISOString(),
      },
      deps.documentsFor(args.scope),
    );
    const offer = engine.outcome === 'approved' ? offerFor(engine, args.requestedTermMonths, args.now) : null;
    return { engine, creditData, offer, outcome: engine.outcome, reasons: engine.reasons, timings: { creditDataMs, engineMs: engine.timings.totalMs } };
  }

  /**
   * The consumer passed verification: the engine decides now. Returns null when the decision is no
   * longer waiting (finished meanwhile); otherwise the write step, which itself returns false if
   * another request finished the decision between this read and the write (optimistic version).
   */
  async function prepareVerifiedCompletion(decisionId: string): Promise<((trx: Kysely<Database>) => Promise<boolean>) | null> {
    const row = await deps.db.selectFrom('decisions').selectAll().where('id', '=', decisionId).executeTakeFirst();
    if (!row || row.status !== 'needs_consumer_action') return null;
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
      amountCents: row.requested_amount_cents,
      requestedPlan: row.requested_plan as Plan | null,
      requestedTermMonths: row.requested_term_months,
      now,
    });
    return async (trx) => {
      const updated = await finishRow(trx, row, { ...decidedColumns(evaluation, now), kyc_status: 'matched' });
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
    await deps.outbox.append(trx, { tenantId: row.tenant_id, environment: row.environment }, [kycFailedEvent(updated), finalizedEvent(updated, unscored(['AA-24'], policyVersionFor(row)))]);
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
    await deps.outbox.append(trx, { tenantId: row.tenant_id, environment: row.environment }, [finalizedEvent(updated, unscored(['AA-01'], policyVersionFor(row)))]);
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
  function policyVersionFor(row: DecisionsTable): string {
    return engineVersionOf(deps.documentsFor({ tenantId: row.tenant_id, environment: row.environment }));
  }

  /** Conditional update: only a still-waiting decision at the version read is finished. */
  async function finishRow(trx: Kysely<Database>, row: DecisionsTable, changes: Partial<DecisionsTable>): Promise<DecisionsTable | null> {
    const now = clock.now().getTime();
    const next: DecisionsTable = { ...row, ...changes, status: 'complete', updated_at: now, version: row.version + 1, verification_token_sealed: null };
    const result = await trx
      .updateTable('decisions')
      .set({ ...changes, status: 'complete', updated_at: now, version: next.version, verification_token_sealed: null })
      .where('id', '=', row.id)
      .where('status', '=', 'needs_consumer_action')
      .where('version', '=', row.version)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1 ? next : null;
  }

  async function appendAudit(trx: Kysely<Database>, decisionId: string, addition: Record<string, unknown>): Promise<void> {
    const current = await trx.selectFrom('decision_audits').select('record_json').where('decision_id', '=', decisionId).executeTakeFirst();
    const record = { ...(current ? (JSON.parse(current.record_json) as Record<string, unknown>) : {}), ...addition };
    await trx.updateTable('decision_audits').set({ record_json: JSON.stringify(record) }).where('decision_id', '=', decisionId).execute();
  }

  /** The pending decision a hosted-verification token belongs to (any state), or null. */
  async function findByVerificationToken(token: string): Promise<DecisionsTable | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
    const row = await deps.readDb.selectFrom('decisions').selectAll().where('verification_token_hash', '=', hashToken(token)).executeTakeFirst();
    return row ?? null;
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
    const view = await readDecision(scope, product, decisionId);
    // Lazy expiry: a poll never shows a pending state past its deadline (the sweeper catches the rest).
    if (view && view.row.status === 'needs_consumer_action' && view.row.expires_at <= clock.now().getTime()) {
      await deps.db.transaction().execute((trx) => finalizeExpired(trx, view.row.id));
      return readDecision(scope, product, decisionId, deps.db);
    }
    return view;
  }

  async function readDecision(scope: Scope, product: 'bnpl', decisionId: string, db: Kysely<Database> = deps.readDb): Promise<DecisionView | null> {
    // By primary key alone, scope checked here: the plan never depends on table statistics, and a
    // decision of another tenant or environment is indistinguishable from one that does not exist.
    const row = await db.selectFrom('decisions').selectAll().where('id', '=', decisionId.toLowerCase()).executeTakeFirst();
    if (!row || row.tenant_id !== scope.tenantId || row.environment !== scope.environment || row.product !== product) return null;
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
    return `${deps.config.publicBaseUrl}/verify/${token}`;
  }

  return {
    prepareBnplDecision,
    getDecision,
    getAuditRecord,
    listForConsumer,
    prepareVerifiedCompletion,
    finalizeFailedVerification,
    finalizeExpired,
    expireOverdue,
    findByVerificationToken,
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

interface EvaluateArgs {
  scope: Scope;
  consumerId: string;
  identity: { firstName: string; lastName: string; dob: string; zip: string };
  ssnLast4: string | null;
  sandboxProfile: Consumer['sandboxProfile'];
  returning: boolean;
  amountCents: number;
  requestedPlan: Plan | null;
  requestedTermMonths: number | null;
  now: Date;
}

interface Evaluation {
  engine: BnplEngineDecision;
  creditData: CreditDataResult;
  offer: Offer | null;
  outcome: BnplEngineDecision['outcome'];
  reasons: AdverseActionReason[];
  timings: Record<string, number>;
}

/** The approval as an offer: the engine's plan and amount, the caller's term for monthly, priced at the engine's rate. */
function offerFor(engine: BnplEngineDecision, requestedTermMonths: number | null, now: Date): Offer {
  const plan = engine.plan as Plan;
  const amount = engine.approvedAmountCents!;
  const termMonths = plan === 'monthly' ? (requestedTermMonths ?? monthlyTermFor(amount)) : undefined;
  return buildOffer({
    plan,
    amountCents: amount,
    annualRateBps: engine.rateBps ?? 0,
    ...(termMonths !== undefined ? { termMonths } : {}),
    decisionDate: now.toISOString().slice(0, 10),
  });
}

/** The columns a decided (engine-path) decision sets. */
function decidedColumns(e: Evaluation, now: Date) {
  const wire = e.offer ? presentOffer(e.offer) : null;
  return {
    outcome: e.outcome,
    approved_amount_cents: e.offer?.approvedAmountCents ?? null,
    plan: e.offer?.plan ?? null,
    term_months: e.offer?.termMonths ?? null,
    apr: e.offer?.apr ?? null,
    payment_frequency: e.offer?.paymentFrequency ?? null,
    schedule_json: wire ? JSON.stringify(wire.payment_schedule) : null,
    tila_json: wire ? JSON.stringify(wire.tila_disclosure) : null,
    reasons_json: JSON.stringify(e.reasons),
    score: e.engine.score,
    risk_grade: e.engine.riskGrade,
    engine_version: e.engine.engineVersion,
    // An approved offer is valid for 30 days from the decision (decisions.md section 5).
    expires_at: now.getTime() + OFFER_TTL_MS,
    completed_at: now.getTime(),
  };
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
    offer: e.offer ? { plan: e.offer.plan, approved_amount_cents: e.offer.approvedAmountCents, annual_rate_bps: e.offer.annualRateBps, apr: e.offer.apr, apr_exact: e.offer.aprExact, term_months: e.offer.termMonths } : null,
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

function scoreEvent(row: DecisionsTable, e: Evaluation): NewEvent {
  if (e.creditData.status !== 'ok') {
    return { type: 'score.errored', subjectId: row.id, data: { decision_id: row.id, application_id: row.application_id, reason: e.creditData.reason, engine_version: e.engine.engineVersion } };
  }
  return {
    type: 'score.completed',
    subjectId: row.id,
    data: { decision_id: row.id, application_id: row.application_id, score: e.engine.score, confidence: e.engine.confidence, risk_grade: e.engine.riskGrade, engine_version: e.engine.engineVersion },
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
    reasonCodes: e.reasons.map((r) => r.code),
    engineVersion: e.engine.engineVersion,
  };
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
