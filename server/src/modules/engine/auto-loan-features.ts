/**
 * Auto-loan features: what the auto-loan scorecard and policy read. The credit part is the same
 * derivation as BNPL's (one credit file, read one way); the loan and collateral part adds what an
 * auto lender prices on: loan-to-value, term, vehicle age, mileage and condition. As for BNPL,
 * nothing about who the applicant is enters (ECOA). Pure.
 */
import type { CreditFile } from '../credit-data/credit-data.types.js';
import { relationshipWithUs, type LenderHistory, type RelationshipWithUs } from './features.js';

export type VehicleCondition = 'new' | 'used';

/** The loan as the engine sees it (amounts in integer cents; no VIN, make or model: they are not scored). */
export interface AutoLoanTerms {
  amountFinancedCents: number;
  termMonths: number;
  /** Amount financed over vehicle value, percent, two decimals. */
  ltvPct: number;
  vehicleAgeYears: number;
  mileage: number;
  condition: VehicleCondition;
}

export type AutoLoanFeatures = {
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
  estimatedMonthlyIncomeCents: number | null;
  debtToIncomePct: number | null;
  /** Income could not be estimated: the policy refers for proof of income. */
  incomeVerifiable: boolean;
  amountFinancedCents: number;
  termMonths: number;
  /** Amount financed / term, whole cents, interest left out (the rate is unknown before pricing). */
  indicativeMonthlyPaymentCents: number;
  paymentToIncomePct: number | null;
  ltvPct: number;
  vehicleAgeYears: number;
  mileage: number;
  condition: VehicleCondition;
  returning: boolean;
  priorApprovals: number;
  priorDeclines: number;
  relationshipWithUs: RelationshipWithUs;
};

export function deriveAutoLoanFeatures(args: { file: CreditFile | null; loan: AutoLoanTerms; history: LenderHistory }): AutoLoanFeatures {
  const { loan, history } = args;
  const file = args.file && args.file.hasFile ? args.file : null;
  const income = file && file.estimatedMonthlyIncomeCents > 0 ? file.estimatedMonthlyIncomeCents : null;
  const payment = Math.ceil(loan.amountFinancedCents / loan.termMonths);
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
    incomeVerifiable: income !== null,
    amountFinancedCents: loan.amountFinancedCents,
    termMonths: loan.termMonths,
    indicativeMonthlyPaymentCents: payment,
    paymentToIncomePct: income !== null ? percent(payment, income) : null,
    ltvPct: loan.ltvPct,
    vehicleAgeYears: loan.vehicleAgeYears,
    mileage: loan.mileage,
    condition: loan.condition,
    returning: history.returning,
    priorApprovals: history.priorApprovals,
    priorDeclines: history.priorDeclines,
    relationshipWithUs: relationshipWithUs(history),
  };
}

function percent(part: number, whole: number): number {
  return Math.round((part * 10_000) / whole) / 100;
}
