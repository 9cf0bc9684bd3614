/**
 * Payment schedules for the three BNPL plans (spec/decisions.md section 3), as pure functions of the
 * amount, the nominal rate and the decision date; nothing here reads a clock.
 *
 * - pay_in_4: 4 interest-free payments every 14 days, the first 14 days after the decision date.
 * - pay_in_6: 6 monthly payments, the first one month after the decision date, at a nominal annual
 *   rate that may be 0.
 * - monthly: N level monthly payments, N in {3, 6, 12, 18, 24, 36}, chosen by amount unless given.
 *
 * Monthly due dates are the decision date plus k months (k = 1..N), keeping its day of month and
 * clamped to the month's last day: Jan 31 -> Feb 28 (29) -> Mar 31 -> Apr 30. Each is derived from the
 * decision date, never from the previous due date, so one short month does not drag the rest back.
 *
 * Money is integer cents throughout. Interest-free: equal cents with the rounding remainder on the
 * last payment (100.00 / 3 = 33.33, 33.33, 33.34). Interest-bearing: the standard level payment at
 * rate/12, computed in exact rational arithmetic (BigInt) and rounded half up to the cent; each
 * month's interest is rounded to the cent, and the last payment clears the balance.
 */
import { formatMoney, type Cents } from '../../lib/money.js';
import { addDays, addMonthsClamped, formatCalendarDate, toCalendarDate, type CalendarDate, type DateInput } from './apr.js';

export const PLANS = ['pay_in_4', 'pay_in_6', 'monthly'] as const;
export type Plan = (typeof PLANS)[number];

export type PaymentFrequency = 'biweekly' | 'monthly';

export const MONTHLY_TERMS = [3, 6, 12, 18, 24, 36] as const;
export type MonthlyTerm = (typeof MONTHLY_TERMS)[number];

/** Highest nominal rate a plan may carry: 35.99% (decisions.md section 3, monthly; applied to pay_in_6 too). */
export const MAX_ANNUAL_RATE_BPS = 3_599;

export interface PlanRule {
  minCents: Cents;
  maxCents: Cents;
  paymentFrequency: PaymentFrequency;
}

/** Amount ranges of decisions.md section 3, inclusive. */
export const PLAN_RULES: Readonly<Record<Plan, PlanRule>> = {
  pay_in_4: { minCents: 2_500, maxCents: 200_000, paymentFrequency: 'biweekly' },
  pay_in_6: { minCents: 10_000, maxCents: 500_000, paymentFrequency: 'monthly' },
  monthly: { minCents: 25_000, maxCents: 3_000_000, paymentFrequency: 'monthly' },
};

/**
 * Term of the `monthly` plan by amount. decisions.md fixes only the set {3, 6, 12, 18, 24, 36}; these
 * bands are ours, chosen to keep the monthly payment in a familiar range (roughly 80 to 850 at 0%):
 *
 *     250.00 -    499.99  ->  3 months
 *     500.00 -    999.99  ->  6 months
 *   1,000.00 -  2,499.99  -> 12 months
 *   2,500.00 -  4,999.99  -> 18 months
 *   5,000.00 -  9,999.99  -> 24 months
 *  10,000.00 - 30,000.00  -> 36 months
 *
 * Each row is the lowest amount of its band. A caller that names N (order.installment_count) overrides.
 */
export const MONTHLY_TERM_BANDS: readonly { fromCents: Cents; termMonths: MonthlyTerm }[] = [
  { fromCents: 0, termMonths: 3 },
  { fromCents: 50_000, termMonths: 6 },
  { fromCents: 100_000, termMonths: 12 },
  { fromCents: 250_000, termMonths: 18 },
  { fromCents: 500_000, termMonths: 24 },
  { fromCents: 1_000_000, termMonths: 36 },
];

export function isPlan(value: unknown): value is Plan {
  return typeof value === 'string' && (PLANS as readonly string[]).includes(value);
}

export function isMonthlyTerm(value: unknown): value is MonthlyTerm {
  return typeof value === 'number' && (MONTHLY_TERMS as readonly number[]).includes(value);
}

/** The `monthly` term for an amount, by the bands above (amounts below 250.00 get the first band). */
export function monthlyTermFor(amountCents: Cents): MonthlyTerm {
  let term: MonthlyTerm = 3;
  for (const band of MONTHLY_TERM_BANDS) if (amountCents >= band.fromCents) term = band.termMonths;
  return term;
}

/** term_months of decisions.md section 3: pay_in_4 2, pay_in_6 6, monthly N. */
export function termMonthsFor(plan: Plan, amountCents: Cents, requested?: number): number {
  if (plan === 'pay_in_4') return 2;
  if (plan === 'pay_in_6') return 6;
  if (requested === undefined) return monthlyTermFor(amountCents);
  if (!isMonthlyTerm(requested)) throw new RangeError(`monthly term must be one of ${MONTHLY_TERMS.join(', ')}: ${requested}`);
  return requested;
}

export function planAllowsAmount(plan: Plan, amountCents: Cents): boolean {
  const rule = PLAN_RULES[plan];
  return Number.isSafeInteger(amountCents) && amountCents >= rule.minCents && amountCents <= rule.maxCents;
}

/**
 * The plan the service picks without a preference: pay_in_4 up to 1,000.00, pay_in_6 up to 2,500.00,
 * monthly above; null when no plan takes the amount (below 25.00 or above 30,000.00).
 */
export function defaultPlanFor(amountCents: Cents): Plan | null {
  const plan: Plan = amountCents <= 100_000 ? 'pay_in_4' : amountCents <= 250_000 ? 'pay_in_6' : 'monthly';
  return planAllowsAmount(plan, amountCents) ? plan : null;
}

/** "25.00 to 2000.00": the inclusive range of a plan, in the wire's money format. */
export function allowedRangeText(plan: Plan): string {
  const rule = PLAN_RULES[plan];
  return `${formatMoney(rule.minCents)} to ${formatMoney(rule.maxCents)}`;
}

/** Message of the 422 for a plan preference the amount does not allow. */
export function planNotAllowedMessage(plan: Plan): string {
  return `plan ${plan} is offered for amounts from ${allowedRangeText(plan)} USD`;
}

/** Message of the 422 for an amount no plan takes. */
export function amountNotAllowedMessage(): string {
  return `amount must be from ${formatMoney(PLAN_RULES.pay_in_4.minCents)} to ${formatMoney(PLAN_RULES.monthly.maxCents)} USD`;
}

// ---------------------------------------------------------------------------------------------
// Due dates
// ---------------------------------------------------------------------------------------------

/** k * 14 days after the decision date, k = 1..count. */
export function biweeklyDueDates(decisionDate: DateInput, count: number): string[] {
  const start = toCalendarDate(decisionDate);
  return Array.from({ length: count }, (_, n) => formatCalendarDate(addDays(start, 14 * (n + 1))));
}

/** k months after the decision date, same day of month clamped to month end, k = 1..count. */
export function monthlyDueDates(decisionDate: DateInput, count: number): string[] {
  const start: CalendarDate = toCalendarDate(decisionDate);
  return Array.from({ length: count }, (_, n) => formatCalendarDate(addMonthsClamped(start, n + 1)));
}

// ---------------------------------------------------------------------------------------------
// Amounts
// ---------------------------------------------------------------------------------------------

function checkAmount(amountCents: Cents): void {
  if (!Number.isSafeInteger(amountCents) || amountCents <= 0) throw new RangeError(`amount must be a positive integer number of cents: ${amountCents}`);
}

function checkCount(count: number): void {
  if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`payment count must be a positive integer: ${count}`);
}

function checkRate(annualRateBps: number): void {
  if (!Number.isSafeInteger(annualRateBps) || annualRateBps < 0 || annualRateBps > MAX_ANNUAL_RATE_BPS) {
    throw new RangeError(`annual rate must be an integer from 0 to ${MAX_ANNUAL_RATE_BPS} basis points: ${annualRateBps}`);
  }
}

/** n / d rounded half up, for n >= 0 and d > 0, exactly. */
function divideRoundingHalfUp(n: bigint, d: bigint): bigint {
  return (2n * n + d) / (2n * d);
}

/** Equal payments; the rounding remainder goes on the last one: 10000 / 3 -> 3333, 3333, 3334. */
export function splitEvenly(totalCents: Cents, count: number): Cents[] {
  checkAmount(totalCents);
  checkCount(count);
  const each = Math.floor(totalCents / count);
  return Array.from({ length: count }, (_, n) => (n === count - 1 ? totalCents - each * (count - 1) : each));
}

// A month's rate is bps / 10,000 / 12, so every rate is a fraction over this denominator.
const MONTHLY_RATE_DENOMINATOR = 120_000n;

/**
 * The standard level payment P·r / (1 - (1 + r)^-n) at r = annualRateBps / 120,000, rounded half up
 * to the cent. Exact: with X = 120,000 + bps and Y = 120,000 it is P·bps·X^n / (Y·(X^n - Y^n)).
 */
export function levelPaymentCents(principalCents: Cents, annualRateBps: number, count: number): Cents {
  checkAmount(principalCents);
  checkRate(annualRateBps);
  checkCount(count);
  // At 0% the level payment is what splitEvenly uses; the remainder rides on the last payment.
  if (annualRateBps === 0) return Math.floor(principalCents / count);
  const bps = BigInt(annualRateBps);
  const y = MONTHLY_RATE_DENOMINATOR;
  const xn = (y + bps) ** BigInt(count);
  const yn = y ** BigInt(count);
  return Number(divideRoundingHalfUp(BigInt(principalCents) * bps * xn, y * (xn - yn)));
}

/** One month's interest on a balance, rounded half up to the cent. */
export function monthlyInterestCents(balanceCents: Cents, annualRateBps: number): Cents {
  return Number(divideRoundingHalfUp(BigInt(balanceCents) * BigInt(annualRateBps), MONTHLY_RATE_DENOMINATOR));
}

/**
 * Installment amounts of a monthly plan. Zero rate: `splitEvenly`. Otherwise the level payment for
 * every month but the last, which is whatever clears the balance (principal left plus its interest).
 */
export function monthlyInstallments(principalCents: Cents, annualRateBps: number, count: number): Cents[] {
  checkAmount(principalCents);
  checkRate(annualRateBps);
  checkCount(count);
  if (annualRateBps === 0) return splitEvenly(principalCents, count);
  const level = levelPaymentCents(principalCents, annualRateBps, count);
  const amounts: Cents[] = [];
  let balance = principalCents;
  for (let n = 1; n < count; n++) {
    balance = balance + monthlyInterestCents(balance, annualRateBps) - level;
    amounts.push(level);
  }
  // The level payment is rounded, so the last payment can differ from it by a few cents.
  amounts.push(balance + monthlyInterestCents(balance, annualRateBps));
  return amounts;
}

// ---------------------------------------------------------------------------------------------
// Schedules
// ---------------------------------------------------------------------------------------------

export interface ScheduledPayment {
  /** 1-based position. */
  num: number;
  /** YYYY-MM-DD */
  dueDate: string;
  amountCents: Cents;
}

export interface PlanSchedule {
  plan: Plan;
  termMonths: number;
  paymentFrequency: PaymentFrequency;
  /** The nominal rate the schedule was amortized at; always 0 for pay_in_4. */
  annualRateBps: number;
  payments: ScheduledPayment[];
}

function zip(dates: readonly string[], amounts: readonly Cents[]): ScheduledPayment[] {
  return dates.map((dueDate, n) => ({ num: n + 1, dueDate, amountCents: amounts[n] as Cents }));
}

export function buildPayIn4Schedule(amountCents: Cents, decisionDate: DateInput): PlanSchedule {
  return {
    plan: 'pay_in_4',
    termMonths: 2,
    paymentFrequency: 'biweekly',
    annualRateBps: 0,
    payments: zip(biweeklyDueDates(decisionDate, 4), splitEvenly(amountCents, 4)),
  };
}

export function buildPayIn6Schedule(amountCents: Cents, annualRateBps: number, decisionDate: DateInput): PlanSchedule {
  return {
    plan: 'pay_in_6',
    termMonths: 6,
    paymentFrequency: 'monthly',
    annualRateBps,
    payments: zip(monthlyDueDates(decisionDate, 6), monthlyInstallments(amountCents, annualRateBps, 6)),
  };
}

export function buildMonthlySchedule(amountCents: Cents, annualRateBps: number, termMonths: MonthlyTerm, decisionDate: DateInput): PlanSchedule {
  if (!isMonthlyTerm(termMonths)) throw new RangeError(`monthly term must be one of ${MONTHLY_TERMS.join(', ')}: ${String(termMonths)}`);
  return {
    plan: 'monthly',
    termMonths,
    paymentFrequency: 'monthly',
    annualRateBps,
    payments: zip(monthlyDueDates(decisionDate, termMonths), monthlyInstallments(amountCents, annualRateBps, termMonths)),
  };
}

export interface BuildScheduleInput {
  plan: Plan;
  amountCents: Cents;
  /** Nominal annual rate in basis points (1599 = 15.99%). pay_in_4 is interest-free: omit it or pass 0. */
  annualRateBps?: number;
  /** Only for `monthly` (default by amount); for the others it must match the plan's term if given. */
  termMonths?: number;
  decisionDate: DateInput;
}

/** The schedule of any plan. Does not check the plan's amount range: see `planAllowsAmount`. */
export function buildSchedule(input: BuildScheduleInput): PlanSchedule {
  const rate = input.annualRateBps ?? 0;
  const termMonths = termMonthsFor(input.plan, input.amountCents, input.plan === 'monthly' ? input.termMonths : undefined);
  if (input.termMonths !== undefined && input.termMonths !== termMonths) {
    throw new RangeError(`plan ${input.plan} has a term of ${termMonths} months, not ${input.termMonths}`);
  }
  switch (input.plan) {
    case 'pay_in_4':
      // Interest-free by definition; a rate here is a caller's mistake, not something to ignore.
      if (rate !== 0) throw new RangeError('pay_in_4 carries no interest: annualRateBps must be 0');
      return buildPayIn4Schedule(input.amountCents, input.decisionDate);
    case 'pay_in_6':
      return buildPayIn6Schedule(input.amountCents, rate, input.decisionDate);
    case 'monthly':
      return buildMonthlySchedule(input.amountCents, rate, termMonths as MonthlyTerm, input.decisionDate);
  }
}
