/**
 * From a schema-valid auto-loan request to a normalised application, applying the rules the schema
 * cannot express (decisions.md sections 2 and 10; docs/auto-loan.md defines every figure):
 *
 *   amount financed = loan.amount - loan.down_payment - loan.trade_in_value
 *   ltv             = amount financed / vehicle.value x 100, rounded half up to two decimals
 *   vehicle age     = decision year - vehicle.year, at least 0 (next year's models are 0)
 *
 * 400 `invalid_request` (shape): a VIN that is not 17 characters, uses I, O or Q or fails its check
 * digit; money that is not a decimal with at most two decimals; a dealer on a direct loan or none on
 * an indirect one. 422 `unprocessable_entity` (business rule): currency other than USD, a model year
 * outside 1981..next year or other than the VIN's (position 10), a vehicle value of 0, down
 * payment plus trade-in covering the whole amount, an amount financed outside the policy's range, a
 * markup above the policy's cap for the term. Rules that need stored data (unknown consumer,
 * unknown or disabled dealer, ssn_last4 needed by the tier) are checked by the service.
 */
import { ApiError } from '../../http/errors/error-registry.js';
import { formatMoney, MONEY_FORMAT_RULE, parseMoney, type Cents } from '../../lib/money.js';
import type { AutoLoanPolicyConstants, VehicleCondition } from '../engine/index.js';
import { markupCapBps } from '../engine/index.js';
import { formatRateBps, isAutoLoanTerm, type AutoLoanTerm } from '../offers/auto-loan-offer.js';
import { normalizeApplicant, type ApplicantRef, type BnplCreateBody } from './bnpl-request.js';
import { vinModelYearCode, vinModelYears, vinProblem } from './vin.js';

/** First model year with the 17-character VIN and its check digit (49 CFR 565). */
export const FIRST_VIN_MODEL_YEAR = 1981;

export interface AutoLoanCreateBody {
  consumer: BnplCreateBody['consumer'];
  vehicle: { vin: string; year: number; make: string; model: string; mileage: number; condition: VehicleCondition; value: string | number };
  loan: { amount: string | number; down_payment: string | number; trade_in_value?: string | number; term_months: number; currency: string };
  channel: 'direct' | 'indirect';
  dealer?: { dealer_id: string; markup_rate_pct: string | number };
}

export interface AutoLoanApplication {
  applicant: ApplicantRef;
  currency: 'USD';
  vehicle: { vin: string; year: number; make: string; model: string; mileage: number; condition: VehicleCondition; valueCents: Cents; ageYears: number };
  loan: { amountCents: Cents; downPaymentCents: Cents; tradeInValueCents: Cents; amountFinancedCents: Cents; termMonths: AutoLoanTerm };
  /** Hundredths of a percent (8523 = 85.23%), exact. */
  ltvHundredths: number;
  channel: 'direct' | 'indirect';
  dealer: { dealerId: string; markupBps: number } | null;
}

export function normalizeAutoLoanRequest(body: AutoLoanCreateBody, policy: AutoLoanPolicyConstants, asOf: Date): AutoLoanApplication {
  // Shape first (400), so a request with several problems is told the 400 before any 422.
  const vin = body.vehicle.vin.toUpperCase();
  const problem = vinProblem(vin);
  if (problem === 'length') throw new ApiError('invalid_request', `vehicle.vin must be exactly 17 characters; it has ${vin.length}.`);
  if (problem === 'characters') throw new ApiError('invalid_request', 'vehicle.vin may contain only digits and the letters A-Z except I, O and Q.');
  if (problem === 'check_digit') throw new ApiError('invalid_request', 'vehicle.vin fails its check digit (position 9, 49 CFR 565); check the VIN for a typing error.');
  const money = (value: unknown, field: string): Cents => {
    const cents = parseMoney(value);
    if (cents === null) throw new ApiError('invalid_request', `${field} must be ${MONEY_FORMAT_RULE}, such as "25000.00".`);
    return cents;
  };
  const valueCents = money(body.vehicle.value, 'vehicle.value');
  const amountCents = money(body.loan.amount, 'loan.amount');
  const downPaymentCents = money(body.loan.down_payment, 'loan.down_payment');
  const tradeInValueCents = body.loan.trade_in_value === undefined ? 0 : money(body.loan.trade_in_value, 'loan.trade_in_value');
  if (!isAutoLoanTerm(body.loan.term_months)) throw new ApiError('invalid_request', 'loan.term_months must be one of 24, 36, 48, 60, 72, 84.');
  let dealer: AutoLoanApplication['dealer'] = null;
  if (body.channel === 'indirect') {
    if (!body.dealer) throw new ApiError('invalid_request', 'dealer is required when channel is indirect (dealer_id and markup_rate_pct).');
    const markupBps = parseMoney(body.dealer.markup_rate_pct);
    if (markupBps === null) throw new ApiError('invalid_request', 'dealer.markup_rate_pct must be a non-negative number of percentage points with at most two decimals, such as "1.25".');
    dealer = { dealerId: body.dealer.dealer_id.toLowerCase(), markupBps };
  } else if (body.dealer) {
    throw new ApiError('invalid_request', 'dealer is only sent with channel indirect; a direct loan has no dealer.');
  }
  const applicant = normalizeApplicant(body.consumer, asOf);

  // Business rules from here on: 422.
  if (body.loan.currency !== 'USD') throw new ApiError('unprocessable_entity', `loan.currency ${body.loan.currency} is not supported; only USD is.`);
  const latestYear = asOf.getUTCFullYear() + 1;
  if (body.vehicle.year < FIRST_VIN_MODEL_YEAR || body.vehicle.year > latestYear) {
    throw new ApiError('unprocessable_entity', `vehicle.year must be a model year from ${FIRST_VIN_MODEL_YEAR} to ${latestYear}.`);
  }
  // The VIN encodes the model year (position 10); a year that disagrees with it prices the wrong
  // vehicle (age drives the buy rate, the collateral rules and the score), so it is refused, not guessed.
  if (vin[9] !== vinModelYearCode(body.vehicle.year)) {
    const named = vinModelYears(vin[9]!);
    const code = named.length > 0 ? `model-year code "${vin[9]}" (position 10) means model year ${named.join(' or ')}` : `position 10 "${vin[9]}" is not a model-year code`;
    throw new ApiError('unprocessable_entity', `vehicle.year ${body.vehicle.year} does not match vehicle.vin, whose ${code}; check both.`);
  }
  if (valueCents === 0) throw new ApiError('unprocessable_entity', 'vehicle.value must be more than 0.00.');
  if (downPaymentCents + tradeInValueCents >= amountCents) {
    throw new ApiError('unprocessable_entity', 'loan.down_payment plus loan.trade_in_value must be less than loan.amount: nothing would be financed.');
  }
  const amountFinancedCents = amountCents - downPaymentCents - tradeInValueCents;
  const { minCents, maxCents } = policy.amountFinanced;
  if (amountFinancedCents < minCents || amountFinancedCents > maxCents) {
    throw new ApiError(
      'unprocessable_entity',
      `The amount financed (loan.amount - loan.down_payment - loan.trade_in_value = ${formatMoney(amountFinancedCents)}) must be from ${formatMoney(minCents)} to ${formatMoney(maxCents)} USD.`,
    );
  }
  if (dealer) {
    const cap = markupCapBps(body.loan.term_months, policy);
    if (dealer.markupBps > cap) {
      const band = body.loan.term_months <= 60 ? 'terms up to 60 months' : 'terms above 60 months';
      throw new ApiError('unprocessable_entity', `dealer.markup_rate_pct ${formatRateBps(dealer.markupBps)} is above the cap of ${formatRateBps(cap)} percentage points for ${band}.`);
    }
  }
  return {
    applicant,
    currency: 'USD',
    vehicle: {
      vin,
      year: body.vehicle.year,
      make: body.vehicle.make.trim(),
      model: body.vehicle.model.trim(),
      mileage: body.vehicle.mileage,
      condition: body.vehicle.condition,
      valueCents,
      ageYears: Math.max(0, asOf.getUTCFullYear() - body.vehicle.year),
    },
    loan: { amountCents, downPaymentCents, tradeInValueCents, amountFinancedCents, termMonths: body.loan.term_months },
    ltvHundredths: ltvHundredths(amountFinancedCents, valueCents),
    channel: body.channel,
    dealer,
  };
}

/** financed / value x 100 in hundredths of a percent, rounded half up, in exact integer arithmetic: the figure shown. */
export function ltvHundredths(amountFinancedCents: Cents, valueCents: Cents): number {
  const n = BigInt(amountFinancedCents) * 10_000n;
  const d = BigInt(valueCents);
  return Number((2n * n + d) / (2n * d));
}

/**
 * The LTV the credit policy compares with its maximum (and scores): in hundredths rounded UP, as a
 * percent. Up, so a loan over a limit never reads as at it: 130.0049% is shown "130.00" but
 * compared as 130.01, above a 130 maximum (lenders round LTV up for eligibility; Fannie Mae's
 * Selling Guide to the next whole percent).
 */
export function ltvPctForPolicy(amountFinancedCents: Cents, valueCents: Cents): number {
  const n = BigInt(amountFinancedCents) * 10_000n;
  const d = BigInt(valueCents);
  return Number((n + d - 1n) / d) / 100;
}

/** Hundredths of a percent as the wire shows it: 8523 -> "85.23". */
export function formatLtv(hundredths: number): string {
  return formatRateBps(hundredths);
}
