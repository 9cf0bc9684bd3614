/**
 * BNPL features: the values the scorecard and the policy read, derived from the credit file, the
 * request and the consumer's history with this lender. Nothing about who the applicant is (age,
 * sex, race, marital status, address or ZIP) is an input, so nothing here can use it (ECOA).
 * Pure: the same inputs always give the same features, which the audit record stores verbatim.
 */
import type { CreditFile } from '../credit-data/credit-data.types.js';

export const BNPL_PLANS = ['pay_in_4', 'pay_in_6', 'monthly'] as const;
export type BnplPlan = (typeof BNPL_PLANS)[number];

export function isBnplPlan(value: unknown): value is BnplPlan {
  return typeof value === 'string' && (BNPL_PLANS as readonly string[]).includes(value);
}

/** What this lender already knows about the consumer, from its own decisions. */
export interface LenderHistory {
  /** The consumer came back by `consumer_id` (known to this tenant and environment). */
  returning: boolean;
  /** Earlier decisions of this tenant and environment that ended approved. */
  priorApprovals: number;
  /** Earlier decisions that ended declined. */
  priorDeclines: number;
}

export type RelationshipWithUs = 'new' | 'returning' | 'established' | 'previously_declined';

// A type alias, not an interface, so it is assignable to the scorecard's FeatureVector record.
export type BnplFeatures = {
  hasCreditFile: boolean;
  bankruptcy: boolean | null;
  revolvingUtilizationPct: number | null;
  delinquencies30dLast24m: number | null;
  delinquencies90dLast24m: number | null;
  collectionsOrJudgments: number | null;
  foreclosureOrRepossession: boolean | null;
  tradelines: number | null;
  oldestTradelineMonths: number | null;
  inquiriesLast6m: number | null;
  monthlyObligationsCents: number | null;
  /** Null when there is no file or the source could not estimate income (0 or less). */
  estimatedMonthlyIncomeCents: number | null;
  /** Existing monthly obligations over estimated monthly income, percent, 2 decimals. */
  debtToIncomePct: number | null;
  requestedAmountCents: number;
  /** The plan the request is priced on: the preference, else the default pick for the amount. */
  plan: BnplPlan;
  /** Months the indicative payment spreads the request over (see INDICATIVE_TERM_MONTHS). */
  indicativeTermMonths: number;
  /** Requested amount / indicative term, whole cents, interest left out. */
  indicativeMonthlyPaymentCents: number;
  /** Indicative monthly payment over estimated monthly income, percent, 2 decimals. */
  paymentToIncomePct: number | null;
  returning: boolean;
  priorApprovals: number;
  priorDeclines: number;
  relationshipWithUs: RelationshipWithUs;
};

/**
 * Term used only to turn a requested amount into a monthly burden for payment-to-income. It is a
 * proxy, not the offer: the offers module chooses the real schedule after the decision, and the
 * rate is unknown before pricing (pricing depends on the score), so interest is left out.
 * pay_in_4 pays 4 times over about 2 months; a monthly plan's term grows with the amount.
 */
export const INDICATIVE_TERM_MONTHS = {
  pay_in_4: 2,
  pay_in_6: 6,
  monthly: [
    { upToCents: 100_000, months: 6 },
    { upToCents: 250_000, months: 12 },
    { upToCents: 500_000, months: 18 },
    { upToCents: 1_000_000, months: 24 },
    { upToCents: Number.MAX_SAFE_INTEGER, months: 36 },
  ],
} as const;

export function indicativeTermMonths(plan: BnplPlan, amountCents: number): number {
  if (plan !== 'monthly') return INDICATIVE_TERM_MONTHS[plan];
  return INDICATIVE_TERM_MONTHS.monthly.find((step) => amountCents <= step.upToCents)?.months ?? 36;
}

export function relationshipWithUs(history: LenderHistory): RelationshipWithUs {
  if (history.priorApprovals >= 3) return 'established';
  if (history.priorApprovals >= 1) return 'returning';
  if (history.priorDeclines >= 1) return 'previously_declined';
  return 'new';
}

export function deriveBnplFeatures(args: {
  file: CreditFile | null;
  requestedAmountCents: number;
  plan: BnplPlan;
  history: LenderHistory;
}): BnplFeatures {
  const { requestedAmountCents, plan, history } = args;
  // No file at all and a "no hit" file read the same way: every bureau feature is missing.
  const file = args.file && args.file.hasFile ? args.file : null;
  const income = file && file.estimatedMonthlyIncomeCents > 0 ? file.estimatedMonthlyIncomeCents : null;
  const term = indicativeTermMonths(plan, requestedAmountCents);
  const payment = Math.ceil(requestedAmountCents / term);
  return {
    hasCreditFile: file !== null,
    bankruptcy: file ? file.bankruptcy : null,
    revolvingUtilizationPct: file ? file.revolvingUtilizationPct : null,
    delinquencies30dLast24m: file ? file.delinquencies30dLast24m : null,
    delinquencies90dLast24m: file ? file.delinquencies90dLast24m : null,
    collectionsOrJudgments: file ? file.collectionsOrJudgments : null,
    foreclosureOrRepossession: file ? file.foreclosureOrRepossession : null,
    tradelines: file ? file.tradelines : null,
    oldestTradelineMonths: file ? file.oldestTradelineMonths : null,
    inquiriesLast6m: file ? file.inquiriesLast6m : null,
    monthlyObligationsCents: file ? file.monthlyObligationsCents : null,
    estimatedMonthlyIncomeCents: income,
    debtToIncomePct: file && income !== null ? percent(file.monthlyObligationsCents, income) : null,
    requestedAmountCents,
    plan,
    indicativeTermMonths: term,
    indicativeMonthlyPaymentCents: payment,
    paymentToIncomePct: income !== null ? percent(payment, income) : null,
    returning: history.returning,
    priorApprovals: history.priorApprovals,
    priorDeclines: history.priorDeclines,
    relationshipWithUs: relationshipWithUs(history),
  };
}

/** part / whole in percent, rounded to 2 decimals so the audit record reads cleanly. */
function percent(part: number, whole: number): number {
  return Math.round((part * 10_000) / whole) / 100;
}
