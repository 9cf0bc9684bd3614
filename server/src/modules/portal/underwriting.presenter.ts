/**
 * Wire shapes of the underwriting workplace (referral queue, verification review): snake_case,
 * money as two-decimal strings, times ISO 8601 with Z. The applicant is masked here; only the
 * reveal route returns the full identity, and never any SSN digit.
 */
import { noticeActionOf } from '../notices/adverse-action-notice.js';
import type { DecisionsTable } from '../../db/schema.js';
import { formatMoney } from '../../lib/money.js';
import { formatLtv } from '../decisions/auto-loan-request.js';
import { formatRateBps } from '../offers/auto-loan-offer.js';
import type { ActionView, AutoLoanReferralView, ConditionView, DocumentRequestView, MaskedApplicant, PricingView, ReferralDetail, ReferralSummary, RevealedApplicant } from '../decisions/underwriting.service.js';
import type { ReviewDocument, ReviewItem } from '../kyc/document-review.service.js';
import { maskVerifyLink } from '../kyc/verify-links.js';

const iso = (d: Date | null) => (d === null ? null : d.toISOString());
const isoMs = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function presentApplicant(a: MaskedApplicant | null) {
  return a ? { consumer_id: a.consumerId, initials: a.initials, email: a.email, phone: a.phone, state: a.state } : null;
}

/** The decision as the underwriter works it (the public /v1 shape is the decisions presenter's). */
function presentDecisionFacts(row: DecisionsTable) {
  return {
    decision_id: row.id,
    application_id: row.application_id,
    version: row.version,
    status: row.status,
    outcome: row.outcome,
    kyc_tier: row.kyc_tier,
    kyc_status: row.kyc_status,
    requested_amount: formatMoney(row.requested_amount_cents),
    requested_plan: row.requested_plan,
    requested_term_months: row.requested_term_months,
    currency: row.currency,
    merchant_name: row.merchant_name,
    merchant_category: row.merchant_category,
    score: row.score,
    risk_grade: row.risk_grade,
    engine_version: row.engine_version,
    approved_amount: row.approved_amount_cents === null ? null : formatMoney(row.approved_amount_cents),
    plan: row.plan,
    term_months: row.term_months,
    apr: row.apr,
    payment_schedule: row.schedule_json ? (JSON.parse(row.schedule_json) as unknown) : null,
    tila_disclosure: row.tila_json ? (JSON.parse(row.tila_json) as unknown) : null,
    expires_at: row.outcome === 'approved' ? isoMs(row.expires_at) : null,
    created_at: isoMs(row.created_at),
    referred_at: isoMs(row.completed_at),
    updated_at: isoMs(row.updated_at),
  };
}

export function presentReferralSummary(s: ReferralSummary) {
  return { ...presentDecisionFacts(s.row), applicant: presentApplicant(s.applicant), reasons: s.reasons };
}

export function presentAction(a: ActionView) {
  return { id: a.id, kind: a.kind, user_id: a.userId, user_name: a.userName, details: a.details, created_at: iso(a.createdAt) };
}

export function presentDocumentRequest(r: DocumentRequestView, options: { uploadLink: boolean } = { uploadLink: true }) {
  return {
    id: r.id,
    document_types: r.documentTypes,
    note: r.note,
    upload_url: options.uploadLink ? r.uploadUrl : maskVerifyLink(r.uploadUrl),
    requested_by: r.requestedBy,
    created_at: iso(r.createdAt),
    expires_at: iso(r.expiresAt),
    fulfilled_at: iso(r.fulfilledAt),
  };
}

export function presentCondition(c: ConditionView) {
  return { id: c.id, code: c.code, note: c.note, added_by: c.addedBy, created_at: iso(c.createdAt) };
}

function presentPricing(p: PricingView) {
  return { risk_grade: p.grade, source: p.source, policy_version: p.policyVersion, rates_bps: p.ratesBps };
}

/** An auto loan's application and its pricing by term (rates as percent strings, money as decimals). */
function presentAutoLoan(a: AutoLoanReferralView) {
  const { vehicle, loan } = a.stored;
  return {
    vehicle: { vin: vehicle.vin, year: vehicle.year, make: vehicle.make, model: vehicle.model, mileage: vehicle.mileage, condition: vehicle.condition, value: formatMoney(vehicle.value_cents), age_years: vehicle.age_years },
    loan: {
      amount: formatMoney(loan.amount_cents),
      down_payment: formatMoney(loan.down_payment_cents),
      trade_in_value: formatMoney(loan.trade_in_value_cents),
      amount_financed: formatMoney(loan.amount_financed_cents),
      term_months: loan.term_months,
    },
    ltv: formatLtv(a.stored.ltv_hundredths),
    channel: a.channel,
    dealer: a.channel === 'indirect' ? { dealer_id: a.dealerId, name: a.dealerName, markup_rate_pct: formatRateBps(a.stored.markup_bps) } : null,
    pricing: {
      risk_grade: a.pricing.grade,
      source: a.pricing.source,
      policy_version: a.pricing.policyVersion,
      dealer_reserve_share_pct: a.pricing.reserveSharePct,
      terms: a.pricing.terms.map((t) => ({
        term_months: t.termMonths,
        buy_rate: t.buyRateBps === null ? null : formatRateBps(t.buyRateBps),
        markup_cap_pct: formatRateBps(t.markupCapBps),
        markup_allowed: t.markupAllowed,
        collateral_rules: t.collateralRules,
      })),
    },
  };
}

export function presentReviewDocument(d: ReviewDocument) {
  return {
    id: d.id,
    content_type: d.contentType,
    size_bytes: d.sizeBytes,
    sha256: d.sha256,
    document_type: d.documentType ?? 'government_id',
    document_request_id: d.documentRequestId,
    uploaded_at: iso(d.uploadedAt),
  };
}

export function presentReferralDetail(d: ReferralDetail, documents: ReviewDocument[], options: { uploadLinks: boolean } = { uploadLinks: true }) {
  return {
    ...presentReferralSummary(d),
    recommended_amount: d.recommendedAmountCents === null ? null : formatMoney(d.recommendedAmountCents),
    product: d.row.product,
    adverse_action: noticeActionOf(d.row),
    pricing: d.pricing ? presentPricing(d.pricing) : null,
    auto_loan: d.autoLoan ? presentAutoLoan(d.autoLoan) : null,
    audit_record: d.audit,
    actions: d.actions.map(presentAction),
    document_requests: d.documentRequests.map((r) => presentDocumentRequest(r, { uploadLink: options.uploadLinks })),
    conditions: d.conditions.map(presentCondition),
    documents: documents.map(presentReviewDocument),
  };
}

export function presentRevealed(a: RevealedApplicant) {
  return {
    first_name: a.firstName,
    last_name: a.lastName,
    email: a.email,
    phone: a.phone,
    dob: a.dob,
    address: { line1: a.address.line1, line2: a.address.line2 ?? null, city: a.address.city, state: a.address.state, zip: a.address.zip, country: a.address.country ?? 'US' },
  };
}

export function presentReviewItem(i: ReviewItem) {
  return {
    decision_id: i.decisionId,
    kyc_tier: i.kycTier,
    outcome: i.outcome,
    verification_state: i.verificationState,
    verification_failed: i.verificationFailed,
    status: i.status,
    version: i.version,
    opened_at: iso(i.openedAt),
    reviewed_by: i.reviewedBy,
    reviewed_at: iso(i.reviewedAt),
    review_note: i.reviewNote,
    documents: i.documents.map(presentReviewDocument),
  };
}
