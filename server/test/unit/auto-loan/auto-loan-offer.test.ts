/**
 * The auto-loan offer: schedule invariants, APR recomputed independently, the dealer reserve formula
 * and its rounding, as unit tests and a property test over amounts, terms, rates and markups.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { AUTO_LOAN_TERMS, buildAutoLoanOffer, creditSaleWire, dealerReserveCents, financeChargeAt, formatRateBps } from '../../../src/modules/offers/auto-loan-offer.js';
import { independentApr } from '../../support/independent-apr.js';

const money = (c: number) => (c / 100).toFixed(2);

describe('auto-loan offer', () => {
  it('amortises 25,000.00 over 60 months at 6.49% + 1.25 markup: schedule, TILA, APR and reserve', () => {
    const o = buildAutoLoanOffer({ amountFinancedCents: 2_500_000, termMonths: 60, buyRateBps: 649, markupBps: 125, reserveSharePct: 75, decisionDate: '2026-03-15' });
    expect(o.contractRateBps).toBe(774);
    expect(o.offer.payments).toHaveLength(60);
    expect(o.offer.payments[0]).toEqual({ num: 1, dueDate: '2026-04-15', amountCents: 50_380 });
    expect(o.offer.payments[59]).toEqual({ num: 60, dueDate: '2031-03-15', amountCents: 50_417 });
    expect(o.offer.tila).toEqual({ amountFinancedCents: 2_500_000, financeChargeCents: 522_837, totalOfPaymentsCents: 3_022_837, apr: '7.74' });
    expect(o.buyRateFinanceChargeCents).toBe(434_218);
    // 0.75 x (5,228.37 - 4,342.18) = 0.75 x 886.19 = 664.6425 -> 664.64
    expect(o.dealerReserveCents).toBe(66_464);
    expect(o.creditSale).toBeNull(); // no cash price given: not disclosed as a credit sale
  });

  it('an indirect loan is a credit sale: total sale price = cash price + finance charge, downpayment = cash price - financed', () => {
    // Cash price 28,500.00 with 2,000.00 down and 1,500.00 trade-in: 25,000.00 financed, as above.
    const o = buildAutoLoanOffer({ amountFinancedCents: 2_500_000, termMonths: 60, buyRateBps: 649, markupBps: 125, reserveSharePct: 75, decisionDate: '2026-03-15', loanAmountCents: 2_850_000 });
    expect(o.creditSale).toEqual({ loanAmountCents: 2_850_000, totalDownPaymentCents: 350_000, totalSalePriceCents: 2_850_000 + 522_837 });
    expect(creditSaleWire(o)).toEqual({ total_down_payment: '3500.00', total_sale_price: '33728.37' });
    // 1026.18(j): what the consumer pays in all, downpayment included.
    expect(o.creditSale!.totalSalePriceCents).toBe(o.offer.tila.totalOfPaymentsCents + o.creditSale!.totalDownPaymentCents);
    // Nothing down is still a sale: the total sale price is then the total of payments.
    const none = buildAutoLoanOffer({ amountFinancedCents: 2_500_000, termMonths: 60, buyRateBps: 649, markupBps: 0, reserveSharePct: 75, decisionDate: '2026-03-15', loanAmountCents: 2_500_000 });
    expect(creditSaleWire(none)).toEqual({ total_down_payment: '0.00', total_sale_price: money(none.offer.tila.totalOfPaymentsCents) });
    expect(creditSaleWire(buildAutoLoanOffer({ amountFinancedCents: 2_500_000, termMonths: 60, buyRateBps: 649, markupBps: 0, reserveSharePct: 75, decisionDate: '2026-03-15' }))).toEqual({});
    // A cash price below the amount financed is a caller's bug, refused loudly.
    expect(() => buildAutoLoanOffer({ amountFinancedCents: 2_500_000, termMonths: 60, buyRateBps: 649, markupBps: 0, reserveSharePct: 75, decisionDate: '2026-03-15', loanAmountCents: 2_499_999 })).toThrow(RangeError);
  });

  it('a direct loan (no markup) has contract = buy and no reserve', () => {
    const o = buildAutoLoanOffer({ amountFinancedCents: 1_300_000, termMonths: 36, buyRateBps: 699, markupBps: 0, reserveSharePct: 75, decisionDate: '2026-01-31' });
    expect(o.contractRateBps).toBe(699);
    expect(o.dealerReserveCents).toBe(0);
    expect(o.offer.payments.slice(0, 3).map((p) => p.dueDate)).toEqual(['2026-02-28', '2026-03-31', '2026-04-30']);
  });

  it('rounds the reserve half up to the cent, exactly', () => {
    expect(dealerReserveCents(10_001, 10_000, 50)).toBe(1); // 0.5 cent -> 1
    expect(dealerReserveCents(10_003, 10_000, 50)).toBe(2); // 1.5 -> 2
    expect(dealerReserveCents(10_000, 10_000, 75)).toBe(0);
    expect(dealerReserveCents(9_000, 10_000, 75)).toBe(0);
    expect(dealerReserveCents(88_619 + 434_218, 434_218, 75)).toBe(66_464);
    expect(dealerReserveCents(100, 0, 100)).toBe(100);
  });

  it('formats rates as two-decimal percent strings', () => {
    expect([formatRateBps(649), formatRateBps(5), formatRateBps(1250), formatRateBps(0)]).toEqual(['6.49', '0.05', '12.50', '0.00']);
  });

  it('holds the invariants for any amount, term, rate and markup (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 500_000, max: 10_000_000 }),
        fc.constantFrom(...AUTO_LOAN_TERMS),
        fc.integer({ min: 0, max: 2_500 }),
        fc.integer({ min: 0, max: 125 }),
        fc.integer({ min: 0, max: 100 }),
        fc.date({ min: new Date('2025-01-01T00:00:00Z'), max: new Date('2030-12-31T00:00:00Z'), noInvalidDate: true }),
        (amount, term, buy, markup, share, when) => {
          const date = when.toISOString().slice(0, 10);
          const o = buildAutoLoanOffer({ amountFinancedCents: amount, termMonths: term, buyRateBps: buy, markupBps: markup, reserveSharePct: share, decisionDate: date });
          const sum = o.offer.payments.reduce((s, p) => s + p.amountCents, 0);
          expect(sum).toBe(o.offer.tila.totalOfPaymentsCents);
          expect(o.offer.tila.totalOfPaymentsCents - o.offer.tila.amountFinancedCents).toBe(o.offer.tila.financeChargeCents);
          expect(o.offer.tila.amountFinancedCents).toBe(amount);
          expect(o.offer.payments).toHaveLength(term);
          // Level payments; only the last carries the rounding remainder.
          expect(new Set(o.offer.payments.slice(0, -1).map((p) => p.amountCents)).size).toBe(1);
          const apr = independentApr(money(amount), date, o.offer.payments.map((p) => ({ due_date: p.dueDate, amount: money(p.amountCents) })));
          expect(Math.abs(apr - Number(o.offer.apr))).toBeLessThanOrEqual(0.005 + 1e-9);
          if (o.offer.tila.financeChargeCents === 0) expect(o.offer.apr).toBe('0.00');
          // Reserve: never negative, never more than the share of the markup's finance charge, 0 without markup.
          const extra = o.offer.tila.financeChargeCents - financeChargeAt(amount, buy, term);
          expect(o.dealerReserveCents).toBe(markup === 0 ? 0 : Math.floor((2 * Math.max(extra, 0) * share + 100) / 200));
          expect(o.dealerReserveCents).toBeGreaterThanOrEqual(0);
        },
      ),
      { numRuns: 150 },
    );
  });
});
