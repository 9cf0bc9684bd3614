/**
 * An approved offer: the plan's schedule plus its Truth in Lending block (12 CFR 1026.18), built as
 * one pure function of the plan, amount, nominal rate and decision date.
 *
 * The TILA figures are derived from the schedule itself, never from the nominal rate, so they cannot
 * disagree with it: total of payments = sum of the schedule; amount financed = approved amount (no
 * fees, no down payment: the first payment is due after the decision date); finance charge = total of
 * payments - amount financed. The APR is computed from the same schedule and its real due dates by
 * the Appendix J actuarial method (apr.ts), so a short February or an odd first period shows in it
 * exactly as Regulation Z counts it; a zero finance charge discloses exactly "0.00".
 */
import { formatMoney, type Cents } from '../../lib/money.js';
import { computeApr, formatCalendarDate, toCalendarDate, type DateInput } from './apr.js';
import { buildSchedule, planAllowsAmount, planNotAllowedMessage, type PaymentFrequency, type Plan, type ScheduledPayment } from './schedule.js';

export interface BuildOfferInput {
  plan: Plan;
  /** The approved amount (possibly a counteroffer below the requested amount), integer cents. */
  amountCents: Cents;
  /** Nominal annual rate in integer basis points (1599 = 15.99%); omit or 0 for pay_in_4. */
  annualRateBps?: number;
  /** `monthly` only: N in {3, 6, 12, 18, 24, 36}; chosen by amount when omitted. */
  termMonths?: number;
  /** The decision's calendar date (UTC); due dates count from it. */
  decisionDate: DateInput;
}

export interface TilaDisclosure {
  amountFinancedCents: Cents;
  financeChargeCents: Cents;
  totalOfPaymentsCents: Cents;
  /** Two decimals, e.g. "15.00". */
  apr: string;
}

export interface Offer {
  plan: Plan;
  approvedAmountCents: Cents;
  termMonths: number;
  paymentFrequency: PaymentFrequency;
  /** Nominal rate the schedule was amortized at (audit; the disclosed rate is `apr`). */
  annualRateBps: number;
  decisionDate: string;
  payments: ScheduledPayment[];
  tila: TilaDisclosure;
  /** Same as tila.apr: the decision carries it too. */
  apr: string;
  /** Unrounded Appendix J APR in percent, for the audit record. */
  aprExact: number;
}

/** Builds an offer and checks its invariants. Throws RangeError when the plan does not take the amount or rate. */
export function buildOffer(input: BuildOfferInput): Offer {
  if (!planAllowsAmount(input.plan, input.amountCents)) throw new RangeError(planNotAllowedMessage(input.plan));
  const decisionDate = formatCalendarDate(toCalendarDate(input.decisionDate));
  const schedule = buildSchedule(Object.assign({}, input, { decisionDate }));
  const totalOfPaymentsCents = schedule.payments.reduce((sum, p) => sum + p.amountCents, 0);
  const amountFinancedCents = input.amountCents;
  const apr = computeApr({
    advanceDate: decisionDate,
    amountFinancedCents,
    payments: schedule.payments.map((p) => ({ dueDate: p.dueDate, amountCents: p.amountCents })),
  });
  const offer: Offer = {
    plan: schedule.plan,
    approvedAmountCents: input.amountCents,
    termMonths: schedule.termMonths,
    paymentFrequency: schedule.paymentFrequency,
    annualRateBps: schedule.annualRateBps,
    decisionDate,
    payments: schedule.payments,
    tila: {
      amountFinancedCents,
      financeChargeCents: totalOfPaymentsCents - amountFinancedCents,
      totalOfPaymentsCents,
      apr: apr.disclosed,
    },
    apr: apr.disclosed,
    aprExact: apr.exact,
  };
  assertOfferInvariants(offer);
  return offer;
}

/**
 * The invariants of decisions.md section 3. They hold by construction; checking them anyway turns a
 * future bug into a loud error instead of a wrong disclosure to a consumer.
 */
export function assertOfferInvariants(offer: Offer): void {
  const { tila, payments } = offer;
  const sum = payments.reduce((s, p) => s + p.amountCents, 0);
  const problems: string[] = [];
  if (sum !== tila.totalOfPaymentsCents) problems.push('sum of payments != total of payments');
  if (tila.totalOfPaymentsCents - tila.amountFinancedCents !== tila.financeChargeCents) problems.push('total of payments - amount financed != finance charge');
  if (tila.amountFinancedCents !== offer.approvedAmountCents) problems.push('amount financed != approved amount');
  if (tila.financeChargeCents < 0) problems.push('negative finance charge');
  if (tila.financeChargeCents === 0 && tila.apr !== '0.00') problems.push('zero finance charge with a non-zero APR');
  if (tila.apr !== offer.apr) problems.push('APR differs between the offer and its disclosure');
  if (payments.some((p) => !Number.isSafeInteger(p.amountCents) || p.amountCents <= 0)) problems.push('a payment is not a positive number of cents');
  if (payments.some((p, n) => p.num !== n + 1)) problems.push('payments are not numbered 1..n');
  if (problems.length > 0) throw new Error(`offer invariants violated: ${problems.join('; ')}`);
}

/** Wire shape of the offer's fields on a Decision (interface.md): snake_case, money as two-decimal strings. */
export interface OfferWire {
  approved_amount: string;
  apr: string;
  term_months: number;
  payment_schedule: { num: number; due_date: string; amount: string }[];
  tila_disclosure: {
    amount_financed: string;
    finance_charge: string;
    total_of_payments: string;
    apr: string;
    payment_frequency: PaymentFrequency;
  };
}

export function presentOffer(offer: Offer): OfferWire {
  return {
    approved_amount: formatMoney(offer.approvedAmountCents),
    apr: offer.apr,
    term_months: offer.termMonths,
    payment_schedule: offer.payments.map((p) => ({ num: p.num, due_date: p.dueDate, amount: formatMoney(p.amountCents) })),
    tila_disclosure: {
      amount_financed: formatMoney(offer.tila.amountFinancedCents),
      finance_charge: formatMoney(offer.tila.financeChargeCents),
      total_of_payments: formatMoney(offer.tila.totalOfPaymentsCents),
      apr: offer.tila.apr,
      payment_frequency: offer.paymentFrequency,
    },
  };
}
