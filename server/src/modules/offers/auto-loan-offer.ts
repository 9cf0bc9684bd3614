/**
 * An approved auto loan as an offer: the amortised monthly schedule at the contract rate, its Truth
 * in Lending block, and the dealer's reserve. One pure function of the amount financed, term, rates
 * and decision date (docs/auto-loan.md has the formulas and worked examples).
 *
 * - Schedule: `term_months` level monthly payments at the contract rate (buy rate + dealer markup),
 *   due k months after the decision date (day of month kept, clamped to month end), each month's
 *   interest rounded to the cent and the last payment clearing the balance: the same amortisation as
 *   the BNPL monthly plan (schedule.ts `monthlyInstallments`), so one convention serves both.
 * - TILA: total of payments = sum of the schedule; amount financed = the loan's amount financed (cash
 *   price - down payment - trade-in); finance charge = the difference; APR by Appendix J on the real
 *   due dates (apr.ts), disclosed with two decimals.
 * - Dealer reserve (indirect loans): the dealer's share of the extra finance charge its markup
 *   creates, as dealer participation is paid in the industry:
 *       reserve = round_half_up(share_pct / 100 * (FC at contract rate - FC at buy rate))
 *   where both finance charges are of the same amount, term and dates, amortised the same way. The
 *   share is a policy value (default 75%). A direct loan has no dealer: contract = buy, reserve 0.
 * - Credit sale (indirect loans): the dealer sells the vehicle on credit, so the disclosure also
 *   carries the total sale price of 12 CFR 1026.18(j) and the downpayment it includes:
 *       total down payment = loan amount - amount financed   (cash down + trade-in, 1026.2(a)(18))
 *       total sale price   = loan amount + finance charge    (= total of payments + total down payment)
 *   where the loan amount (`loan.amount`) is the cash price plus the other amounts financed, so the
 *   total sale price is 1026.18(j)'s cash price + other charges financed + finance charge.
 *   A direct loan is the lender's cash advance, not a sale: no total sale price (1026.18(j) applies
 *   to credit sales only).
 */
import { formatMoney, formatRateBps, type Cents } from '../../lib/money.js';
import { computeApr, formatCalendarDate, toCalendarDate, type DateInput } from './apr.js';
import { assertOfferInvariants, type Offer } from './offer.js';
import { monthlyDueDates, monthlyInstallments, type ScheduledPayment } from './schedule.js';

export const AUTO_LOAN_TERMS = [24, 36, 48, 60, 72, 84] as const;
export type AutoLoanTerm = (typeof AUTO_LOAN_TERMS)[number];

export function isAutoLoanTerm(value: unknown): value is AutoLoanTerm {
  return typeof value === 'number' && (AUTO_LOAN_TERMS as readonly number[]).includes(value);
}

export interface BuildAutoLoanOfferInput {
  amountFinancedCents: Cents;
  termMonths: AutoLoanTerm;
  /** The lender's risk-based rate, integer basis points (649 = 6.49%). */
  buyRateBps: number;
  /** Dealer markup over the buy rate, basis points; 0 for direct loans. Caps are checked by the caller (policy). */
  markupBps: number;
  /** Dealer participation in the markup's finance charge, whole percent 0-100. */
  reserveSharePct: number;
  decisionDate: DateInput;
  /**
   * `loan.amount` (cash price + other amounts financed) of an indirect loan, a credit sale: its disclosure then carries
   * the total sale price. Omitted for a direct loan. At least the amount financed.
   */
  loanAmountCents?: Cents;
}

/** The credit-sale figures of 12 CFR 1026.18(j), integer cents. */
export interface CreditSaleDisclosure {
  loanAmountCents: Cents;
  /** Cash down payment plus trade-in: everything paid towards the loan amount that is not financed. */
  totalDownPaymentCents: Cents;
  totalSalePriceCents: Cents;
}

export interface AutoLoanOffer {
  /** The schedule and TILA block at the contract rate (plan is `monthly` in the offers vocabulary). */
  offer: Offer;
  buyRateBps: number;
  contractRateBps: number;
  markupBps: number;
  /** Finance charge the same loan would carry at the buy rate (reserve basis, audit). */
  buyRateFinanceChargeCents: Cents;
  dealerReserveCents: Cents;
  /** Indirect loans (credit sales) only; null for a direct loan. */
  creditSale: CreditSaleDisclosure | null;
}

/** Finance charge of `amount` over `term` at `rateBps`: sum of the amortised payments - amount. */
export function financeChargeAt(amountCents: Cents, rateBps: number, termMonths: number): Cents {
  return monthlyInstallments(amountCents, rateBps, termMonths).reduce((s, p) => s + p, 0) - amountCents;
}

/** share% of a finance-charge difference, rounded half up to the cent, exactly (integers only). */
export function dealerReserveCents(contractFinanceChargeCents: Cents, buyFinanceChargeCents: Cents, sharePct: number): Cents {
  const diff = contractFinanceChargeCents - buyFinanceChargeCents;
  if (diff <= 0) return 0;
  return Math.floor((2 * diff * sharePct + 100) / 200);
}

export function buildAutoLoanOffer(input: BuildAutoLoanOfferInput): AutoLoanOffer {
  const { amountFinancedCents, termMonths, buyRateBps, markupBps, reserveSharePct } = input;
  if (!isAutoLoanTerm(termMonths)) throw new RangeError(`auto-loan term must be one of ${AUTO_LOAN_TERMS.join(', ')}: ${String(termMonths)}`);
  if (!Number.isSafeInteger(markupBps) || markupBps < 0) throw new RangeError(`markup must be a non-negative integer of basis points: ${markupBps}`);
  if (!Number.isSafeInteger(reserveSharePct) || reserveSharePct < 0 || reserveSharePct > 100) throw new RangeError(`reserve share must be 0-100: ${reserveSharePct}`);
  const { loanAmountCents } = input;
  if (loanAmountCents !== undefined && (!Number.isSafeInteger(loanAmountCents) || loanAmountCents < amountFinancedCents)) {
    throw new RangeError(`loan amount must be an integer of cents at least the amount financed: ${loanAmountCents}`);
  }
  const contractRateBps = buyRateBps + markupBps;
  const decisionDate = formatCalendarDate(toCalendarDate(input.decisionDate));
  const amounts = monthlyInstallments(amountFinancedCents, contractRateBps, termMonths);
  const dates = monthlyDueDates(decisionDate, termMonths);
  const payments: ScheduledPayment[] = dates.map((dueDate, n) => ({ num: n + 1, dueDate, amountCents: amounts[n]! }));
  const totalOfPaymentsCents = amounts.reduce((s, p) => s + p, 0);
  const apr = computeApr({ advanceDate: decisionDate, amountFinancedCents, payments: payments.map((p) => ({ dueDate: p.dueDate, amountCents: p.amountCents })) });
  const offer: Offer = {
    plan: 'monthly',
    approvedAmountCents: amountFinancedCents,
    termMonths,
    paymentFrequency: 'monthly',
    annualRateBps: contractRateBps,
    decisionDate,
    payments,
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
  const buyRateFinanceChargeCents = markupBps === 0 ? offer.tila.financeChargeCents : financeChargeAt(amountFinancedCents, buyRateBps, termMonths);
  return {
    offer,
    buyRateBps,
    contractRateBps,
    markupBps,
    buyRateFinanceChargeCents,
    dealerReserveCents: dealerReserveCents(offer.tila.financeChargeCents, buyRateFinanceChargeCents, reserveSharePct),
    creditSale:
      loanAmountCents === undefined
        ? null
        : {
            loanAmountCents,
            totalDownPaymentCents: loanAmountCents - amountFinancedCents,
            totalSalePriceCents: loanAmountCents + offer.tila.financeChargeCents,
          },
  };
}

/** The credit-sale lines of an indirect loan's TILA block (wire names); empty for a direct loan. */
export function creditSaleWire(loan: AutoLoanOffer): { total_down_payment: string; total_sale_price: string } | Record<string, never> {
  if (!loan.creditSale) return {};
  return { total_down_payment: formatMoney(loan.creditSale.totalDownPaymentCents), total_sale_price: formatMoney(loan.creditSale.totalSalePriceCents) };
}

// One formatter for rates, in lib/money.ts; re-exported for this module's existing importers.
export { formatRateBps };
