/**
 * The underwriting workplace: what people do to referred decisions in the lender portal.
 *
 * Every action is one transaction holding, together or not at all:
 *   1. the decision row, changed only `WHERE id = ? AND version = <the version the person saw>`
 *      and its version bumped (optimistic concurrency: of two underwriters acting on the same
 *      decision, the second finds no row at its version and gets 409 decision_version_conflict);
 *   2. what the action created (a document request, a condition) and its line in
 *      `underwriting_actions` (who: the portal user id; when: the service clock; what: no PII);
 *   3. the decision's audit record, extended with the override (decision_audits);
 *   4. the action's event in the outbox (and so its webhook deliveries).
 *
 *   approve            -> outcome approved: an offer built by modules/offers exactly as an
 *                         automatic approval (schedule, Appendix J APR, TILA), dated at the
 *                         override, priced by the policy's rate for the decision's risk grade;
 *                         offer valid 30 days from the override           -> decision.adjusted
 *                         BNPL: amount and plan. Auto loans: amount financed and term; the buy
 *                         rate of grade x term (+ used-vehicle adder) from the auto-loan policy,
 *                         the request's dealer markup re-checked against the term's cap, and the
 *                         offer, rates and reserve of buildAutoLoanOffer written with the very
 *                         columns an automatic auto-loan approval writes (autoLoanOfferColumns).
 *                      An approval below the requested amount is a counteroffer: it takes 1-4
 *                      adverse-action reasons (why not the full amount), for the notice owed if
 *                      the consumer does not take it (12 CFR 1002.9(a)(1)(iv)); so does the
 *                      requested amount on another plan or term than asked (other terms are a
 *                      counteroffer too, 1002.2(c)(1)(i)); refused on an approval as asked.
 *                      Kept in the action, the override and decision.adjusted, never in the
 *                      decision's decline_reasons (empty on every approval). ADR 0046.
 *   decline            -> outcome declined with 1-4 adverse-action reasons -> decision.adjusted
 *   request documents  -> a document request with a new single-use upload link (hosted page)
 *                                                                 -> application.documents_requested
 *   add condition      -> an approval condition                          -> application.condition_added
 *
 * Only `referred` decisions are acted on (anything else is 422). Reading a referral shows the
 * applicant masked; revealing the full identity is its own recorded action (`pii_revealed`).
 */
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Config, Environment } from '../../config/config.js';
import type { Database, DecisionConditionsTable, DecisionsTable, DocumentRequestsTable, UnderwritingActionsTable } from '../../db/schema.js';
import { ApiError } from '../../http/errors/error-registry.js';
import type { Clock, Random } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/crypto.js';
import { formatMoney, parseMoney } from '../../lib/money.js';
import type { ConsumersService } from '../consumers/consumers.service.js';
import { storedAnswerOf } from './decision.presenter.js';
import {
  adverseActionReason,
  autoLoanBuyRateBps,
  autoLoanCollateralRules,
  isAdverseActionCode,
  lowestPricedAutoLoanGrade,
  lowestPricedGrade,
  markupCapBps,
  ratesForGrade,
  REFERRAL_ONLY_CODES,
  RISK_GRADES,
  type AdverseActionReason,
  type CompiledAutoLoanPolicy,
  type GradeRates,
  type RiskGrade,
} from '../engine/index.js';
import type { NewEvent, Outbox } from '../events/outbox.js';
import { AUTO_LOAN_TERMS, buildAutoLoanOffer, formatRateBps, isAutoLoanTerm, type AutoLoanTerm } from '../offers/auto-loan-offer.js';
import { buildOffer } from '../offers/offer.js';
import { allowedRangeText, isMonthlyTerm, isPlan, MONTHLY_TERMS, planAllowsAmount, PLANS, type Plan } from '../offers/schedule.js';
import { formatLtv, ltvHundredths, ltvPctForPolicy } from './auto-loan-request.js';
import { autoLoanOfferAudit, autoLoanOfferColumns, bnplOfferColumns, offerAuditOf, OFFER_TTL_MS, storedAutoLoanOf, type DecisionsService, type Scope, type StoredAutoLoan } from './decisions.service.js';
import { verifyLink } from '../kyc/verify-links.js';

/** Document types an underwriter may ask for (docs/webhooks.md, application.documents_requested). */
export const DOCUMENT_TYPES = ['government_id', 'proof_of_income', 'proof_of_address', 'bank_statement', 'other'] as const;
export type DocumentType = (typeof DOCUMENT_TYPES)[number];

/** Approval condition codes (docs/webhooks.md, application.condition_added). */
export const CONDITION_CODES = ['proof_of_income', 'proof_of_identity', 'down_payment', 'co_applicant', 'reduced_amount', 'other'] as const;
export type ConditionCode = (typeof CONDITION_CODES)[number];

/** How long an applicant has to upload requested documents. */
export const DOCUMENT_REQUEST_TTL_MS = 14 * 24 * 3600_000;
export const MAX_DECLINE_REASONS = 4;
export const MAX_NOTE_LENGTH = 1000;

export interface Actor {
  userId: string;
  name: string;
}

export type ActionKind = UnderwritingActionsTable['kind'];

export interface ApproveInput {
  expectedVersion: number;
  amount: unknown;
  plan?: string | null;
  termMonths?: number | null;
  /** Counteroffer reasons (ADR 0046): required below the requested amount or on another plan or term, refused otherwise. */
  reasonCodes?: string[] | null;
}

export interface MaskedApplicant {
  consumerId: string;
  initials: string;
  email: string;
  phone: string | null;
  state: string;
}

export interface RevealedApplicant {
  firstName: string;
  lastName: string;
  email: string;
  phone: string | null;
  dob: string;
  address: { line1: string; line2?: string | null; city: string; state: string; zip: string; country?: string | null };
}

export interface ReferralSummary {
  row: DecisionsTable;
  applicant: MaskedApplicant | null;
  reasons: AdverseActionReason[];
}

export interface ActionView {
  id: string;
  kind: ActionKind;
  userId: string;
  userName: string;
  details: Record<string, unknown>;
  createdAt: Date;
}

export interface DocumentRequestView {
  id: string;
  documentTypes: DocumentType[];
  note: string | null;
  uploadUrl: string;
  requestedBy: string;
  createdAt: Date;
  expiresAt: Date;
  fulfilledAt: Date | null;
}

export interface ConditionView {
  id: string;
  code: ConditionCode;
  note: string | null;
  addedBy: string;
  createdAt: Date;
}

/** How an approval of this referral would be priced (shown before the underwriter approves). */
export interface PricingView {
  grade: RiskGrade | null;
  /** `decision`: the decision's own grade; `lowest_priced_grade`: it has none (see ratesFor). */
  source: 'decision' | 'lowest_priced_grade';
  policyVersion: string;
  ratesBps: GradeRates;
}

/** How an auto-loan approval would be priced, for each term the policy allows (the approval form's preview). */
export interface AutoLoanPricingView {
  grade: RiskGrade | null;
  source: 'decision' | 'lowest_priced_grade';
  policyVersion: string;
  reserveSharePct: number;
  /** `collateralRules`: the policy's collateral rules this term breaks for the vehicle (the approval would be 422). */
  terms: Array<{ termMonths: AutoLoanTerm; buyRateBps: number | null; markupCapBps: number; markupAllowed: boolean; collateralRules: string[] }>;
}

/** An auto loan's application as the underwriter reads it (vehicle, loan, LTV, channel, dealer markup). */
export interface AutoLoanReferralView {
  stored: StoredAutoLoan;
  channel: 'direct' | 'indirect';
  dealerId: string | null;
  dealerName: string | null;
  pricing: AutoLoanPricingView;
}

export interface ReferralDetail extends ReferralSummary {
  audit: unknown;
  actions: ActionView[];
  documentRequests: DocumentRequestView[];
  conditions: ConditionView[];
  /** BNPL pricing by plan; null for an auto loan (its pricing is `autoLoan.pricing`). */
  pricing: PricingView | null;
  autoLoan: AutoLoanReferralView | null;
  recommendedAmountCents: number | null;
}

/** A document request as the hosted upload page needs it. */
export interface OpenDocumentRequest {
  id: string;
  decisionId: string;
  tenantId: string;
  environment: Environment;
  documentTypes: DocumentType[];
  merchantName: string;
  expiresAt: Date;
  fulfilledAt: Date | null;
}

export interface UnderwritingDeps {
  config: Readonly<Config>;
  db: Kysely<Database>;
  readDb: Kysely<Database>;
  clock: Clock;
  random: Random;
  secretBox: SecretBox;
  consumers: ConsumersService;
  outbox: Outbox;
  decisions: DecisionsService;
}

export function createUnderwritingService(deps: UnderwritingDeps) {
  const { clock, random } = deps;

  // ---------------------------------------------------------------------------------------------
  // Reading the queue
  // ---------------------------------------------------------------------------------------------

  /** Referred decisions, oldest referral first, one page at a time. */
  async function listReferrals(scope: Scope, options: { limit: number; offset: number }): Promise<{ items: ReferralSummary[]; total: number }> {
    const q = deps.readDb
      .selectFrom('decisions')
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .where('outcome', '=', 'referred');
    const [{ n }, rows] = await Promise.all([
      q.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
      q.selectAll().orderBy('completed_at').orderBy('id').limit(options.limit).offset(options.offset).execute(),
    ]);
    const items = await Promise.all(rows.map(async (row) => ({ row, applicant: maskApplicant(await deps.consumers.findConsumer(scope, row.consumer_id)), reasons: reasonsOf(row) })));
    return { items, total: Number(n) };
  }

  async function findRow(scope: Scope, decisionId: string, db: Kysely<Database> = deps.readDb): Promise<DecisionsTable | null> {
    const row = await db.selectFrom('decisions').selectAll().where('id', '=', decisionId.toLowerCase()).executeTakeFirst();
    // Another tenant's or environment's decision is indistinguishable from one that does not exist.
    if (!row || row.tenant_id !== scope.tenantId || row.environment !== scope.environment) return null;
    return row;
  }

  /**
   * A decision of the underwriting workplace: one that is referred now, or was and has been worked
   * (an underwriter approved, declined, asked for documents or added a condition), or whose identity
   * documents are in the verification review (a reviewer compares them with the applicant). Any
   * other decision (approved or declined by the engine, pending) is no one's case: its applicant
   * stays masked, as in the decision explorer, so a reveal cannot reach applicants nobody needs.
   */
  async function findReferralRow(scope: Scope, decisionId: string, db: Kysely<Database> = deps.readDb): Promise<DecisionsTable | null> {
    const row = await findRow(scope, decisionId, db);
    if (!row || row.outcome === 'referred') return row;
    const [worked, inReview] = await Promise.all([
      db
        .selectFrom('underwriting_actions')
        .select('id')
        .where('decision_id', '=', row.id)
        .where('kind', 'in', ['approved', 'declined', 'documents_requested', 'condition_added'])
        .limit(1)
        .executeTakeFirst(),
      db.selectFrom('verification_review_items').select('decision_id').where('decision_id', '=', row.id).executeTakeFirst(),
    ]);
    return worked || inReview ? row : null;
  }

  /** One referral as the underwriter sees it (any outcome: a worked referral keeps its history). */
  async function getReferral(scope: Scope, decisionId: string): Promise<ReferralDetail | null> {
    const row = await findReferralRow(scope, decisionId);
    if (!row) return null;
    const [consumer, audit, actions, requests, conditions] = await Promise.all([
      deps.consumers.findConsumer(scope, row.consumer_id),
      deps.decisions.getAuditRecord(scope, row.id),
      deps.readDb.selectFrom('underwriting_actions').selectAll().where('decision_id', '=', row.id).orderBy('created_at').orderBy('id').execute(),
      deps.readDb.selectFrom('document_requests').selectAll().where('decision_id', '=', row.id).orderBy('created_at').execute(),
      deps.readDb.selectFrom('decision_conditions').selectAll().where('decision_id', '=', row.id).orderBy('created_at').execute(),
    ]);
    const recommended = (audit as { engine?: { recommendedAmountCents?: unknown } } | null)?.engine?.recommendedAmountCents;
    return {
      row,
      applicant: maskApplicant(consumer),
      reasons: reasonsOf(row),
      audit,
      actions: actions.map(actionView),
      documentRequests: requests.map(requestView),
      conditions: conditions.map(conditionView),
      pricing: row.product === 'bnpl' ? await pricingFor(scope, row, null) : null,
      autoLoan: row.product === 'auto_loan' ? await autoLoanViewOf(scope, row) : null,
      recommendedAmountCents: typeof recommended === 'number' && recommended > 0 ? recommended : null,
    };
  }

  /** The applicant in full, for a person allowed to see it; the reveal itself is recorded first. */
  async function revealApplicant(scope: Scope, decisionId: string, actor: Actor): Promise<RevealedApplicant> {
    const row = await findReferralRow(scope, decisionId, deps.db);
    if (!row) throw new ApiError('not_found', 'No referral with this id in this environment (only referred decisions, and referrals already worked, have their applicant revealed).');
    const consumer = await deps.consumers.findConsumer(scope, row.consumer_id, deps.db);
    if (!consumer) throw new ApiError('not_found', 'This decision has no applicant on record.');
    const fields = ['first_name', 'last_name', 'email', 'phone', 'dob', 'address'];
    await deps.db.transaction().execute((trx) => recordAction(trx, row, actor, 'pii_revealed', { fields }));
    return { firstName: consumer.firstName, lastName: consumer.lastName, email: consumer.email, phone: consumer.phone, dob: consumer.dob, address: consumer.address };
  }

  // ---------------------------------------------------------------------------------------------
  // Actions
  // ---------------------------------------------------------------------------------------------

  /**
   * Approve a referral: amount 0.01 up to the requested amount, a plan that takes the amount,
   * priced by the policy at the decision's grade (or the lowest priced grade when it has none).
   */
  async function approve(scope: Scope, decisionId: string, actor: Actor, input: ApproveInput): Promise<DecisionsTable> {
    const row = await actionable(scope, decisionId, input.expectedVersion);
    if (row.product === 'auto_loan') return approveAutoLoan(scope, row, actor, input);
    const amountCents = approvedAmount(row, input.amount, 'the requested amount');
    if (input.plan === undefined || input.plan === null) throw new ApiError('unprocessable_entity', `plan is required to approve a BNPL decision (one of ${PLANS.join(', ')}).`);
    if (!isPlan(input.plan)) throw new ApiError('unprocessable_entity', `plan must be one of ${PLANS.join(', ')}.`);
    const plan: Plan = input.plan;
    if (!planAllowsAmount(plan, amountCents)) {
      throw new ApiError('unprocessable_entity', `plan ${plan} is offered for amounts from ${allowedRangeText(plan)} USD; ${formatMoney(amountCents)} is outside that range.`);
    }
    let termMonths: number | undefined;
    if (plan === 'monthly') {
      const wanted = input.termMonths ?? row.requested_term_months ?? undefined;
      if (wanted !== undefined && !isMonthlyTerm(wanted)) throw new ApiError('unprocessable_entity', `term_months must be one of ${MONTHLY_TERMS.join(', ')} for the monthly plan.`);
      termMonths = wanted;
    } else if (input.termMonths !== undefined && input.termMonths !== null) {
      throw new ApiError('unprocessable_entity', `term_months is only chosen for the monthly plan; ${plan} has a fixed term.`);
    }
    const pricing = await pricingFor(scope, row, plan);
    const rateBps = pricing.ratesBps[plan];
    if (rateBps === null) {
      throw new ApiError('unprocessable_entity', `The credit policy (${pricing.policyVersion}) does not price plan ${plan} for risk grade ${pricing.grade ?? 'none'}; choose another plan.`);
    }
    const now = clock.now();
    const offer = buildOffer({ plan, amountCents, annualRateBps: rateBps, ...(termMonths !== undefined ? { termMonths } : {}), decisionDate: now.toISOString().slice(0, 10) });
    const otherTerms = (row.requested_plan !== null && plan !== row.requested_plan) || (row.requested_term_months !== null && offer.termMonths !== row.requested_term_months);
    const counteroffer = counterofferReasons(row, amountCents, otherTerms, input.reasonCodes);
    const changes: Partial<DecisionsTable> = {
      outcome: 'approved',
      ...bnplOfferColumns(offer),
      reasons_json: '[]',
      // The underwriter's approval stands for the identity check a failed verification left open.
      kyc_status: row.kyc_status === 'pending' ? 'matched' : row.kyc_status,
      // An approved offer is valid for 30 days from the approval (decisions.md section 5).
      expires_at: now.getTime() + OFFER_TTL_MS,
    };
    const pricingRecord = { grade: pricing.grade, source: pricing.source, policy_version: pricing.policyVersion, annual_rate_bps: rateBps };
    return deps.db.transaction().execute(async (trx) => {
      const updated = await bumpVersion(trx, row, changes);
      const offerRecord = { ...offerAuditOf(offer), decision_date: offer.decisionDate };
      // The same instant as the override's: the portal's CSV takes a counteroffer's notice due date from this row.
      await recordAction(trx, updated, actor, 'approved', { previous_outcome: 'referred', amount: formatMoney(amountCents), plan, term_months: offer.termMonths, apr: offer.apr, pricing: pricingRecord, reason_codes: codesOf(counteroffer) }, now);
      await appendOverride(trx, row.id, { action: 'approved', by: actor.userId, at: now.toISOString(), previous_outcome: 'referred', outcome: 'approved', offer: offerRecord, pricing: pricingRecord, counteroffer_reasons: counteroffer });
      await deps.outbox.append(trx, scope, [adjustedEvent(updated, actor, now, counteroffer)]);
      return updated;
    });
  }

  /**
   * Approve an auto-loan referral: the amount financed (0.01 up to the requested amount financed)
   * and a term (the requested one unless changed), priced as an automatic approval of the
   * decision's grade would be (autoLoanBuyRateBps: the policy's own pricing nodes, used-vehicle
   * adder included), with the request's dealer markup on an indirect loan, re-checked against the
   * cap of the chosen term. The row gets exactly the columns an automatic approval writes; its LTV
   * becomes the approved amount financed over the vehicle's value (the stored request keeps the
   * requested one).
   */
  async function approveAutoLoan(scope: Scope, row: DecisionsTable, actor: Actor, input: ApproveInput): Promise<DecisionsTable> {
    if (input.plan !== undefined && input.plan !== null) {
      throw new ApiError('unprocessable_entity', 'plan is not chosen for an auto loan; send amount (the amount financed) and, to change it, term_months.');
    }
    const stored = storedAutoLoanOf(row);
    if (!stored) throw new Error(`auto-loan decision ${row.id} has no stored application`);
    const amountCents = approvedAmount(row, input.amount, 'the requested amount financed');
    const wanted = input.termMonths ?? row.requested_term_months ?? stored.loan.term_months;
    if (!isAutoLoanTerm(wanted)) throw new ApiError('unprocessable_entity', `term_months must be one of ${AUTO_LOAN_TERMS.join(', ')} for an auto loan; ${String(wanted)} is not.`);
    const termMonths: AutoLoanTerm = wanted;
    const policy = (await deps.decisions.documentsFor(scope, 'auto_loan')).policy;
    // Below the policy's smallest loan the schedule stops making sense (a payment rounds to 0.00
    // under 50 or so): the same floor as an application's, as a 422 that names it.
    const { minCents } = policy.constants.amountFinanced;
    if (amountCents < minCents) {
      throw new ApiError('unprocessable_entity', `amount must be at least ${formatMoney(minCents)} ${row.currency}, the credit policy's smallest amount financed (${policy.version}).`);
    }
    const markupBps = row.channel === 'indirect' ? stored.markup_bps : 0;
    const cap = markupCapBps(termMonths, policy);
    if (markupBps > cap) {
      const band = termMonths <= 60 ? 'terms up to 60 months' : 'terms above 60 months';
      throw new ApiError(
        'unprocessable_entity',
        `term_months ${termMonths}: the dealer markup of ${formatRateBps(markupBps)} percentage points is above the policy's cap of ${formatRateBps(cap)} for ${band}; keep a term the markup fits or decline.`,
      );
    }
    // A longer term can break a collateral rule the requested one did not (a term too long for the
    // vehicle's age): the policy would have declined that loan, so the override may not make it.
    const ltv = ltvHundredths(amountCents, stored.vehicle.value_cents);
    const broken = await autoLoanCollateralRules(policy, { termMonths, ltvPct: ltvPctForPolicy(amountCents, stored.vehicle.value_cents), mileage: stored.vehicle.mileage, vehicleAgeYears: stored.vehicle.age_years });
    if (broken.length > 0) {
      throw new ApiError(
        'unprocessable_entity',
        `term_months ${termMonths}: the auto-loan policy's collateral rules refuse it for this ${stored.vehicle.age_years}-year-old vehicle with ${stored.vehicle.mileage} miles (${broken.join(', ')}); choose a shorter term or decline.`,
      );
    }
    const pricing = await autoLoanGradeFor(policy, row, termMonths, stored.vehicle.condition);
    if (pricing.buyRateBps === null) {
      throw new ApiError('unprocessable_entity', `The auto-loan policy (${policy.version}) has no buy rate for risk grade ${pricing.grade ?? 'none'} at ${termMonths} months; choose another term.`);
    }
    const requestedTerm = row.requested_term_months ?? stored.loan.term_months;
    const counteroffer = counterofferReasons(row, amountCents, termMonths !== requestedTerm, input.reasonCodes);
    const reserveSharePct = policy.constants.dealerReserveSharePct;
    const now = clock.now();
    // An indirect loan approved as asked is the same credit sale: its total sale price is disclosed
    // (auto-loan-offer.ts). Approved for less, the dealer has to restructure the deal (more down, a
    // lower price or fewer add-ons) and nobody here knows which: the lines are left out rather than
    // made up, and the dealer's new contract discloses that sale (docs/auto-loan.md, ADR 0044).
    const sameSale = row.channel === 'indirect' && amountCents === stored.loan.amount_financed_cents;
    const sale = sameSale ? { loanAmountCents: stored.loan.amount_cents } : {};
    const loan = buildAutoLoanOffer({ amountFinancedCents: amountCents, termMonths, buyRateBps: pricing.buyRateBps, markupBps, reserveSharePct, decisionDate: now.toISOString().slice(0, 10), ...sale });
    const changes: Partial<DecisionsTable> = {
      outcome: 'approved',
      ...autoLoanOfferColumns(loan),
      ltv: formatLtv(ltv),
      reasons_json: '[]',
      // The underwriter's approval stands for the identity check a failed verification left open.
      kyc_status: row.kyc_status === 'pending' ? 'matched' : row.kyc_status,
      // An approved offer is valid for 30 days from the approval (decisions.md section 5).
      expires_at: now.getTime() + OFFER_TTL_MS,
    };
    const pricingRecord = { grade: pricing.grade, source: pricing.source, policy_version: policy.version, buy_rate_bps: pricing.buyRateBps, markup_bps: markupBps, markup_cap_bps: cap };
    return deps.db.transaction().execute(async (trx) => {
      const updated = await bumpVersion(trx, row, changes);
      const offerRecord = { ...autoLoanOfferAudit(loan, reserveSharePct), decision_date: loan.offer.decisionDate };
      await recordAction(trx, updated, actor, 'approved', {
        previous_outcome: 'referred',
        amount: formatMoney(amountCents),
        plan: null,
        term_months: termMonths,
        apr: loan.offer.apr,
        buy_rate: formatRateBps(loan.buyRateBps),
        contract_rate: formatRateBps(loan.contractRateBps),
        dealer_reserve: formatMoney(loan.dealerReserveCents),
        pricing: pricingRecord,
        reason_codes: codesOf(counteroffer),
      }, now);
      await appendOverride(trx, row.id, { action: 'approved', by: actor.userId, at: now.toISOString(), previous_outcome: 'referred', outcome: 'approved', offer: offerRecord, pricing: pricingRecord, counteroffer_reasons: counteroffer });
      await deps.outbox.append(trx, scope, [adjustedEvent(updated, actor, now, counteroffer)]);
      return updated;
    });
  }

  /** Decline a referral with one to four distinct adverse-action reasons (never a referral-only one). */
  async function decline(scope: Scope, decisionId: string, actor: Actor, input: { expectedVersion: number; reasonCodes: string[] }): Promise<DecisionsTable> {
    const row = await actionable(scope, decisionId, input.expectedVersion);
    const codes = input.reasonCodes;
    const reasons = chosenReasons(codes, 'decline');
    const now = clock.now();
    return deps.db.transaction().execute(async (trx) => {
      const updated = await bumpVersion(trx, row, { outcome: 'declined', reasons_json: JSON.stringify(reasons) });
      await recordAction(trx, updated, actor, 'declined', { previous_outcome: 'referred', reason_codes: codes }, now);
      await appendOverride(trx, row.id, { action: 'declined', by: actor.userId, at: now.toISOString(), previous_outcome: 'referred', outcome: 'declined', reasons });
      await deps.outbox.append(trx, scope, [adjustedEvent(updated, actor, now, reasons)]);
      return updated;
    });
  }

  /**
   * Ask the applicant for documents: a new single-use upload link (the decision's own verification
   * link may be used up or expired), sealed so the portal can show it again, valid 14 days.
   */
  async function requestDocuments(
    scope: Scope,
    decisionId: string,
    actor: Actor,
    input: { expectedVersion: number; documentTypes: string[]; note: string | null },
  ): Promise<{ decision: DecisionsTable; request: DocumentRequestView }> {
    const row = await actionable(scope, decisionId, input.expectedVersion);
    const types = input.documentTypes;
    if (types.length < 1) throw new ApiError('unprocessable_entity', 'document_types must name at least one document.');
    if (new Set(types).size !== types.length) throw new ApiError('unprocessable_entity', 'document_types must not repeat a type.');
    for (const t of types) if (!(DOCUMENT_TYPES as readonly string[]).includes(t)) throw new ApiError('unprocessable_entity', `document_types: ${t} is not one of ${DOCUMENT_TYPES.join(', ')}.`);
    const note = cleanNote(input.note);
    const now = clock.now();
    const id = random.uuid();
    const token = random.bytes(32).toString('base64url');
    const request: DocumentRequestsTable = {
      id,
      decision_id: row.id,
      tenant_id: row.tenant_id,
      environment: row.environment,
      document_types_json: JSON.stringify(types),
      note,
      token_hash: hashToken(token),
      token_sealed: deps.secretBox.seal(token, id),
      requested_by: actor.userId,
      created_at: now.getTime(),
      expires_at: now.getTime() + DOCUMENT_REQUEST_TTL_MS,
      fulfilled_at: null,
    };
    return deps.db.transaction().execute(async (trx) => {
      const updated = await bumpVersion(trx, row, {});
      await trx.insertInto('document_requests').values(request).execute();
      await recordAction(trx, updated, actor, 'documents_requested', { request_id: id, document_types: types, note });
      await deps.outbox.append(trx, scope, [
        {
          type: 'application.documents_requested',
          subjectId: row.id,
          data: {
            application_id: row.application_id,
            decision_id: row.id,
            request_id: id,
            document_types: types,
            upload_url: uploadUrl(token),
            expires_at: new Date(request.expires_at).toISOString(),
            requested_at: now.toISOString(),
            requested_by: actor.userId,
          },
        },
      ]);
      return { decision: updated, request: requestView(request) };
    });
  }

  /** Attach an approval condition (a code from the catalogue, and an optional note kept in the portal). */
  async function addCondition(scope: Scope, decisionId: string, actor: Actor, input: { expectedVersion: number; code: string; note: string | null }): Promise<{ decision: DecisionsTable; condition: ConditionView }> {
    const row = await actionable(scope, decisionId, input.expectedVersion);
    if (!(CONDITION_CODES as readonly string[]).includes(input.code)) throw new ApiError('unprocessable_entity', `code must be one of ${CONDITION_CODES.join(', ')}.`);
    const note = cleanNote(input.note);
    const now = clock.now();
    const condition: DecisionConditionsTable = { id: random.uuid(), decision_id: row.id, tenant_id: row.tenant_id, environment: row.environment, code: input.code, note, added_by: actor.userId, created_at: now.getTime() };
    return deps.db.transaction().execute(async (trx) => {
      const updated = await bumpVersion(trx, row, {});
      await trx.insertInto('decision_conditions').values(condition).execute();
      await recordAction(trx, updated, actor, 'condition_added', { condition_id: condition.id, code: input.code, note });
      await deps.outbox.append(trx, scope, [
        {
          type: 'application.condition_added',
          subjectId: row.id,
          data: { application_id: row.application_id, decision_id: row.id, condition_id: condition.id, code: input.code, added_at: now.toISOString(), added_by: actor.userId },
        },
      ]);
      return { decision: updated, condition: conditionView(condition) };
    });
  }

  // ---------------------------------------------------------------------------------------------
  // For the hosted upload page and verification review (modules/kyc)
  // ---------------------------------------------------------------------------------------------

  /** The document request an upload token belongs to (used or not), or null. */
  async function findDocumentRequestByToken(token: string): Promise<OpenDocumentRequest | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
    const request = await deps.db.selectFrom('document_requests').selectAll().where('token_hash', '=', hashToken(token)).executeTakeFirst();
    if (!request) return null;
    const decision = await deps.db.selectFrom('decisions').select('merchant_name').where('id', '=', request.decision_id).executeTakeFirstOrThrow();
    return {
      id: request.id,
      decisionId: request.decision_id,
      tenantId: request.tenant_id,
      environment: request.environment,
      documentTypes: JSON.parse(request.document_types_json) as DocumentType[],
      merchantName: decision.merchant_name,
      expiresAt: new Date(request.expires_at),
      fulfilledAt: request.fulfilled_at === null ? null : new Date(request.fulfilled_at),
    };
  }

  /** Uses up a request's token; false when it was already used or has expired (the upload must not count). */
  async function fulfilDocumentRequest(trx: Kysely<Database>, requestId: string): Promise<boolean> {
    const now = clock.now().getTime();
    const result = await trx
      .updateTable('document_requests')
      .set({ fulfilled_at: now })
      .where('id', '=', requestId)
      .where('fulfilled_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /**
   * Record an action on a decision (document viewed, verification reviewed) in the caller's
   * transaction. `at`: when it was taken, passed where the audit record's override names the same
   * instant (approve, decline).
   */
  async function recordAction(trx: Kysely<Database>, row: Pick<DecisionsTable, 'id' | 'tenant_id' | 'environment'>, actor: Actor, kind: ActionKind, details: Record<string, unknown>, at: Date = clock.now()): Promise<void> {
    await trx
      .insertInto('underwriting_actions')
      .values({
        id: random.uuid(),
        decision_id: row.id,
        tenant_id: row.tenant_id,
        environment: row.environment,
        kind,
        user_id: actor.userId,
        user_name: actor.name,
        details_json: JSON.stringify(details),
        created_at: at.getTime(),
      })
      .execute();
  }

  // ---------------------------------------------------------------------------------------------
  // Internals
  // ---------------------------------------------------------------------------------------------

  /** The decision, at the version the person saw, still referred; else the 404 / 409 / 422 that explains why not. */
  async function actionable(scope: Scope, decisionId: string, expectedVersion: number): Promise<DecisionsTable> {
    const row = await findRow(scope, decisionId, deps.db);
    if (!row) throw new ApiError('not_found', 'No such decision in this environment.');
    if (row.version !== expectedVersion) throw await conflict(row);
    if (row.outcome !== 'referred' || row.status !== 'complete') {
      throw new ApiError('unprocessable_entity', `Only referred decisions can be worked in the queue; this decision is ${row.outcome ?? 'waiting for the consumer'}.`);
    }
    return row;
  }

  /** The conditional update every action makes: only at the version read, only while referred. */
  async function bumpVersion(trx: Kysely<Database>, row: DecisionsTable, changes: Partial<DecisionsTable>): Promise<DecisionsTable> {
    const now = clock.now().getTime();
    const next: DecisionsTable = { ...row, ...changes, updated_at: now, version: row.version + 1 };
    // The answer a poll gives, rewritten with the change (ADR 0051: an update of the answer's
    // columns that left it as it was would clear it).
    const answer = storedAnswerOf(next);
    Object.assign(next, answer);
    const result = await trx
      .updateTable('decisions')
      .set({ ...changes, updated_at: now, version: next.version, ...answer })
      .where('id', '=', row.id)
      .where('version', '=', row.version)
      .where('outcome', '=', 'referred')
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) {
      const current = await trx.selectFrom('decisions').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
      throw await conflict(current, trx);
    }
    return next;
  }

  /** The approved amount of either product: 0.01 up to what was requested (`what` names it in the message). */
  function approvedAmount(row: DecisionsTable, amount: unknown, what: string): number {
    const amountCents = parseMoney(amount);
    if (amountCents === null) throw new ApiError('unprocessable_entity', 'amount must be a decimal amount with at most two decimals, e.g. "250.00".');
    if (amountCents < 1) throw new ApiError('unprocessable_entity', 'amount must be at least 0.01.');
    if (amountCents > row.requested_amount_cents) {
      throw new ApiError('unprocessable_entity', `amount must not exceed ${what} of ${formatMoney(row.requested_amount_cents)} ${row.currency}.`);
    }
    return amountCents;
  }

  /**
   * The grade and buy rate of an auto-loan override: the decision's grade, or for a referral
   * without one (nothing was scored) the policy's lowest grade with a buy rate for the term and
   * condition, as BNPL overrides do: never a better price than scoring could have given.
   */
  async function autoLoanGradeFor(policy: CompiledAutoLoanPolicy, row: DecisionsTable, termMonths: number, condition: 'new' | 'used') {
    const grade = (RISK_GRADES as readonly string[]).includes(row.risk_grade ?? '') ? (row.risk_grade as RiskGrade) : null;
    if (grade) return { grade, source: 'decision' as const, buyRateBps: await autoLoanBuyRateBps(policy, grade, termMonths, condition) };
    const lowest = await lowestPricedAutoLoanGrade(policy, termMonths, condition);
    return { grade: lowest?.grade ?? null, source: 'lowest_priced_grade' as const, buyRateBps: lowest?.buyRateBps ?? null };
  }

  /** The auto-loan facts and the pricing of every allowed term, for the referral detail. */
  async function autoLoanViewOf(scope: Scope, row: DecisionsTable): Promise<AutoLoanReferralView | null> {
    const stored = storedAutoLoanOf(row);
    if (!stored) return null;
    const policy = (await deps.decisions.documentsFor(scope, 'auto_loan')).policy;
    const markupBps = row.channel === 'indirect' ? stored.markup_bps : 0;
    let grade: RiskGrade | null = null;
    let source: AutoLoanPricingView['source'] = 'decision';
    const terms: AutoLoanPricingView['terms'] = [];
    for (const termMonths of AUTO_LOAN_TERMS) {
      const priced = await autoLoanGradeFor(policy, row, termMonths, stored.vehicle.condition);
      if (priced.grade !== null && (grade === null || termMonths === stored.loan.term_months)) grade = priced.grade;
      source = priced.source;
      const cap = markupCapBps(termMonths, policy);
      const collateralRules = await autoLoanCollateralRules(policy, { termMonths, ltvPct: ltvPctForPolicy(stored.loan.amount_financed_cents, stored.vehicle.value_cents), mileage: stored.vehicle.mileage, vehicleAgeYears: stored.vehicle.age_years });
      terms.push({ termMonths, buyRateBps: priced.buyRateBps, markupCapBps: cap, markupAllowed: markupBps <= cap, collateralRules });
    }
    return {
      stored,
      channel: row.channel === 'indirect' ? 'indirect' : 'direct',
      dealerId: row.dealer_id ?? null,
      dealerName: row.channel === 'indirect' ? row.merchant_name : null,
      pricing: { grade, source, policyVersion: policy.version, reserveSharePct: policy.constants.dealerReserveSharePct, terms },
    };
  }

  async function conflict(current: DecisionsTable, db: Kysely<Database> = deps.db): Promise<ApiError> {
    const last = await db.selectFrom('underwriting_actions').select(['user_name', 'created_at', 'kind']).where('decision_id', '=', current.id).where('kind', 'in', ['approved', 'declined', 'documents_requested', 'condition_added']).orderBy('created_at', 'desc').orderBy('id', 'desc').executeTakeFirst();
    const when = new Date(last?.created_at ?? current.updated_at).toISOString();
    const who = last ? `${last.user_name} (${last.kind.replace('_', ' ')})` : 'another underwriter';
    return new ApiError('decision_version_conflict', `This decision was changed by ${who} at ${when}; reload to see the new state.`);
  }

  async function appendOverride(trx: Kysely<Database>, decisionId: string, entry: Record<string, unknown>): Promise<void> {
    const current = await trx.selectFrom('decision_audits').select('record_json').where('decision_id', '=', decisionId).executeTakeFirst();
    const record = current ? (JSON.parse(current.record_json) as Record<string, unknown>) : {};
    const overrides = Array.isArray(record.overrides) ? record.overrides : [];
    record.overrides = [...overrides, entry];
    await trx.updateTable('decision_audits').set({ record_json: JSON.stringify(record) }).where('decision_id', '=', decisionId).execute();
  }

  /**
   * Pricing of an override: the rates the tenant's current policy gives the decision's grade. A
   * referral without a grade (nothing was scored) is priced at the policy's lowest grade that
   * prices the plan (`plan` null: the lowest grade pricing any plan, for the preview).
   */
  async function pricingFor(scope: Scope, row: DecisionsTable, plan: Plan | null): Promise<PricingView> {
    const policy = (await deps.decisions.documentsFor(scope)).policy;
    const grade = (RISK_GRADES as readonly string[]).includes(row.risk_grade ?? '') ? (row.risk_grade as RiskGrade) : null;
    if (grade) return { grade, source: 'decision', policyVersion: policy.version, ratesBps: await ratesForGrade(policy, grade) };
    for (const p of plan ? [plan] : (['monthly', 'pay_in_6', 'pay_in_4'] as const)) {
      const lowest = await lowestPricedGrade(policy, p);
      if (lowest) return { grade: lowest.grade, source: 'lowest_priced_grade', policyVersion: policy.version, ratesBps: lowest.rates };
    }
    return { grade: null, source: 'lowest_priced_grade', policyVersion: policy.version, ratesBps: { pay_in_4: null, pay_in_6: null, monthly: null } };
  }

  function requestView(r: DocumentRequestsTable): DocumentRequestView {
    return {
      id: r.id,
      documentTypes: JSON.parse(r.document_types_json) as DocumentType[],
      note: r.note,
      uploadUrl: uploadUrl(deps.secretBox.openText(r.token_sealed, r.id)),
      requestedBy: r.requested_by,
      createdAt: new Date(r.created_at),
      expiresAt: new Date(r.expires_at),
      fulfilledAt: r.fulfilled_at === null ? null : new Date(r.fulfilled_at),
    };
  }

  function uploadUrl(token: string): string {
    return verifyLink(deps.config.publicBaseUrl, token);
  }

  return {
    listReferrals,
    getReferral,
    revealApplicant,
    approve,
    decline,
    requestDocuments,
    addCondition,
    findDocumentRequestByToken,
    fulfilDocumentRequest,
    recordAction,
  };
}

export type UnderwritingService = ReturnType<typeof createUnderwritingService>;

/** decision.adjusted (docs/webhooks.md): the new state, who (a user id, never a name) and when. */
function adjustedEvent(row: DecisionsTable, actor: Actor, at: Date, reasons: AdverseActionReason[]): NewEvent {
  const approved = row.outcome === 'approved';
  return {
    type: 'decision.adjusted',
    subjectId: row.id,
    data: {
      decision_id: row.id,
      application_id: row.application_id,
      previous_outcome: 'referred',
      outcome: row.outcome,
      approved_amount: approved ? formatMoney(row.approved_amount_cents!) : null,
      currency: row.currency,
      plan: approved ? row.plan : null,
      term_months: approved ? row.term_months : null,
      apr: approved ? row.apr : null,
      // A decline's reasons, or a counteroffer's (ADR 0046); none on an approval as asked.
      reason_codes: codesOf(reasons),
      adjusted_at: at.toISOString(),
      adjusted_by: actor.userId,
    },
  };
}

/**
 * One to four distinct catalogue reasons, never a referral-only one (AA-25 explains a referral, not
 * a decline or a lower amount). `why` names what they explain in the 422s.
 */
function chosenReasons(codes: string[], why: 'decline' | 'counteroffer'): AdverseActionReason[] {
  if (codes.length < 1 || codes.length > MAX_DECLINE_REASONS) throw new ApiError('unprocessable_entity', `reason_codes must hold 1 to ${MAX_DECLINE_REASONS} adverse-action codes.`);
  if (new Set(codes).size !== codes.length) throw new ApiError('unprocessable_entity', 'reason_codes must not repeat a code.');
  for (const code of codes) {
    if (!isAdverseActionCode(code)) throw new ApiError('unprocessable_entity', `reason_codes: ${code} is not an adverse-action code of the catalogue (AA-01 to AA-25).`);
    if (REFERRAL_ONLY_CODES.has(code)) {
      const what = why === 'decline' ? 'a reason to decline' : 'a reason for a counteroffer';
      throw new ApiError('unprocessable_entity', `reason_codes: ${code} (${adverseActionReason(code).reason}) explains a referral only and cannot be ${what}.`);
    }
  }
  return codes.map((c) => adverseActionReason(c));
}

/**
 * The reasons of an underwriter's approval (ADR 0046). Less than the requested amount, or the
 * requested amount on another plan or term than asked (`otherTerms`), is a counteroffer: credit
 * not "in substantially the amount or on substantially the terms requested" (12 CFR
 * 1002.2(c)(1)(i)), and the lender owes a notice with the principal reasons if the consumer does
 * not take it (1002.9(a)(1)(iv)). Only the underwriter knows them, so they are required. An
 * approval of what was asked has nothing to explain, and reasons sent with it are refused rather
 * than kept where a notice could pick them up.
 */
function counterofferReasons(row: DecisionsTable, amountCents: number, otherTerms: boolean, codes: string[] | null | undefined): AdverseActionReason[] {
  const given = codes ?? [];
  const lower = amountCents < row.requested_amount_cents;
  if (!lower && !otherTerms) {
    if (given.length > 0) throw new ApiError('unprocessable_entity', 'reason_codes are given only with a counteroffer (less than the requested amount, or another plan or term); this approval grants what was asked.');
    return [];
  }
  if (given.length === 0) {
    const what = lower ? `less than the requested ${formatMoney(row.requested_amount_cents)} ${row.currency}` : 'on another plan or term than requested';
    throw new ApiError(
      'unprocessable_entity',
      `reason_codes is required to approve ${what}: 1 to ${MAX_DECLINE_REASONS} adverse-action codes, the principal reasons for the counteroffer (the notice owed if the consumer does not take it, 12 CFR 1002.9(a)(1)(iv)).`,
    );
  }
  return chosenReasons(given, 'counteroffer');
}

function codesOf(reasons: AdverseActionReason[]): string[] {
  return reasons.map((r) => r.code);
}

function reasonsOf(row: DecisionsTable): AdverseActionReason[] {
  return JSON.parse(row.reasons_json) as AdverseActionReason[];
}

function actionView(a: UnderwritingActionsTable): ActionView {
  return { id: a.id, kind: a.kind, userId: a.user_id, userName: a.user_name, details: JSON.parse(a.details_json) as Record<string, unknown>, createdAt: new Date(a.created_at) };
}

function conditionView(c: DecisionConditionsTable): ConditionView {
  return { id: c.id, code: c.code as ConditionCode, note: c.note, addedBy: c.added_by, createdAt: new Date(c.created_at) };
}

function cleanNote(note: string | null): string | null {
  const trimmed = note?.trim() ?? '';
  if (trimmed.length > MAX_NOTE_LENGTH) throw new ApiError('unprocessable_entity', `note must be at most ${MAX_NOTE_LENGTH} characters.`);
  return trimmed === '' ? null : trimmed;
}

function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Masked for the queue: initials, first letter of the email's local part, last four phone digits. */
export function maskApplicant(consumer: { id: string; firstName: string; lastName: string; email: string; phone: string | null; address: { state: string } } | null): MaskedApplicant | null {
  if (!consumer) return null;
  const [local = '', domain = ''] = consumer.email.split('@');
  return {
    consumerId: consumer.id,
    initials: `${consumer.firstName.trim().charAt(0)}. ${consumer.lastName.trim().charAt(0)}.`.toUpperCase(),
    email: `${local.slice(0, 1)}•••@${domain}`,
    phone: consumer.phone ? `•••• ${consumer.phone.slice(-4)}` : null,
    state: consumer.address.state,
  };
}
