import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { daysInMonth } from '../../../src/modules/offers/apr.js';
import { assertOfferInvariants, buildOffer, presentOffer, type Offer } from '../../../src/modules/offers/offer.js';
import { MAX_ANNUAL_RATE_BPS, MONTHLY_TERMS, PLAN_RULES, PLANS, type Plan } from '../../../src/modules/offers/schedule.js';

/**
 * An APR recomputed from the returned schedule alone, independently of apr.ts: every due date of our
 * plans is a whole number of unit-periods after the decision date (k·14 days, or k months on the
 * decision's day clamped to month end), so the equation is Σ P_k / (1 + i)^k = amount financed,
 * solved by plain bisection.
 */
function independentApr(offer: Offer): number {
  const start = new Date(`${offer.decisionDate}T00:00:00Z`);
  const periods = offer.payments.map((p) => {
    const due = new Date(`${p.dueDate}T00:00:00Z`);
    if (offer.paymentFrequency === 'biweekly') return Math.round((due.getTime() - start.getTime()) / 86_400_000) / 14;
    return (due.getUTCFullYear() - start.getUTCFullYear()) * 12 + (due.getUTCMonth() - start.getUTCMonth());
  });
  const w = offer.paymentFrequency === 'biweekly' ? 26 : 12;
  const financed = offer.tila.amountFinancedCents;
  const excess = (i: number): number => offer.payments.reduce((s, p, n) => s + p.amountCents / Math.pow(1 + i, periods[n] as number), 0) - financed;
  if (excess(0) === 0) return 0;
  let lo = 0;
  let hi = 1;
  for (let n = 0; n < 200; n++) {
    const mid = (lo + hi) / 2;
    if (excess(mid) > 0) lo = mid;
    else hi = mid;
  }
  return 100 * w * lo;
}

describe('buildOffer', () => {
  it('pay_in_4: four interest-free payments, APR exactly 0.00, term 2 months', () => {
    const offer = buildOffer({ plan: 'pay_in_4', amountCents: 14_997, decisionDate: '2026-01-15' });
    expect(offer).toMatchObject({ plan: 'pay_in_4', approvedAmountCents: 14_997, termMonths: 2, paymentFrequency: 'biweekly', apr: '0.00', aprExact: 0 });
    expect(offer.payments.map((p) => p.amountCents)).toEqual([3_749, 3_749, 3_749, 3_750]);
    expect(offer.tila).toEqual({ amountFinancedCents: 14_997, financeChargeCents: 0, totalOfPaymentsCents: 14_997, apr: '0.00' });
  });

  it('pay_in_6 at 0%: APR exactly 0.00', () => {
    const offer = buildOffer({ plan: 'pay_in_6', amountCents: 100_000, annualRateBps: 0, decisionDate: '2026-01-31' });
    expect(offer.termMonths).toBe(6);
    expect(offer.tila.financeChargeCents).toBe(0);
    expect(offer.apr).toBe('0.00');
  });

  it.each([
    ['2026-01-15'],
    ['2026-01-31'], // Feb 28 counts as a whole month (month-end rule)
    ['2024-01-31'], // leap year
    ['2024-02-29'],
  ])('reference.md 1.4: 1,200.00 at 15%% over 12 months -> 12 x 108.31, FC 99.72, APR 15.00 (decided %s)', (decisionDate) => {
    const offer = buildOffer({ plan: 'monthly', amountCents: 120_000, annualRateBps: 1_500, termMonths: 12, decisionDate });
    expect(offer.payments.every((p) => p.amountCents === 10_831)).toBe(true);
    expect(offer.tila).toEqual({ amountFinancedCents: 120_000, financeChargeCents: 9_972, totalOfPaymentsCents: 129_972, apr: '15.00' });
    expect(offer.apr).toBe('15.00');
  });

  it('reference.md 1.4: 5,000.00 at 9.99% over 24 months -> FC 536.87, TOP 5,536.87, APR 9.99', () => {
    const offer = buildOffer({ plan: 'monthly', amountCents: 500_000, annualRateBps: 999, termMonths: 24, decisionDate: '2026-03-31' });
    expect(offer.tila).toEqual({ amountFinancedCents: 500_000, financeChargeCents: 53_687, totalOfPaymentsCents: 553_687, apr: '9.99' });
    expect(offer.payments[23]?.amountCents).toBe(23_077);
  });

  it('reference.md 1.4: 800.00 at 15% over 12 months -> FC 66.48, TOP 866.48, APR 15.00', () => {
    const offer = buildOffer({ plan: 'monthly', amountCents: 80_000, annualRateBps: 1_500, termMonths: 12, decisionDate: '2026-05-20' });
    expect(offer.tila).toEqual({ amountFinancedCents: 80_000, financeChargeCents: 6_648, totalOfPaymentsCents: 86_648, apr: '15.00' });
  });

  it('monthly without a term picks N by amount', () => {
    expect(buildOffer({ plan: 'monthly', amountCents: 25_000, annualRateBps: 1_599, decisionDate: '2026-01-15' }).termMonths).toBe(3);
    expect(buildOffer({ plan: 'monthly', amountCents: 1_200_000, annualRateBps: 1_599, decisionDate: '2026-01-15' }).termMonths).toBe(36);
  });

  it('refuses an amount the plan does not take, with the allowed range', () => {
    expect(() => buildOffer({ plan: 'pay_in_4', amountCents: 200_001, decisionDate: '2026-01-15' })).toThrow(/25\.00 to 2000\.00/);
    expect(() => buildOffer({ plan: 'monthly', amountCents: 24_999, decisionDate: '2026-01-15' })).toThrow(RangeError);
    expect(() => buildOffer({ plan: 'pay_in_4', amountCents: 10_000, annualRateBps: 500, decisionDate: '2026-01-15' })).toThrow(RangeError);
  });

  it('assertOfferInvariants catches a tampered offer', () => {
    const offer = buildOffer({ plan: 'pay_in_6', amountCents: 100_000, annualRateBps: 1_000, decisionDate: '2026-01-15' });
    expect(() => assertOfferInvariants({ ...offer, tila: { ...offer.tila, financeChargeCents: offer.tila.financeChargeCents + 1 } })).toThrow(/finance charge/);
    expect(() => assertOfferInvariants({ ...offer, approvedAmountCents: 99_999 })).toThrow(/approved amount/);
    expect(() => assertOfferInvariants({ ...offer, payments: offer.payments.slice(1) })).toThrow(/sum of payments/);
  });
});

describe('presentOffer', () => {
  it('wire shape: snake_case, money as two-decimal strings', () => {
    const wire = presentOffer(buildOffer({ plan: 'pay_in_4', amountCents: 10_001, decisionDate: '2026-01-15' }));
    expect(wire).toEqual({
      approved_amount: '100.01',
      apr: '0.00',
      term_months: 2,
      payment_schedule: [
        { num: 1, due_date: '2026-01-29', amount: '25.00' },
        { num: 2, due_date: '2026-02-12', amount: '25.00' },
        { num: 3, due_date: '2026-02-26', amount: '25.00' },
        { num: 4, due_date: '2026-03-12', amount: '25.01' },
      ],
      tila_disclosure: { amount_financed: '100.01', finance_charge: '0.00', total_of_payments: '100.01', apr: '0.00', payment_frequency: 'biweekly' },
    });
    expect(JSON.parse(JSON.stringify(wire))).toEqual(wire);
  });

  it('an interest-bearing offer', () => {
    const wire = presentOffer(buildOffer({ plan: 'monthly', amountCents: 80_000, annualRateBps: 1_500, termMonths: 12, decisionDate: '2026-05-20' }));
    expect(wire.tila_disclosure).toEqual({ amount_financed: '800.00', finance_charge: '66.48', total_of_payments: '866.48', apr: '15.00', payment_frequency: 'monthly' });
    expect(wire.payment_schedule[0]).toEqual({ num: 1, due_date: '2026-06-20', amount: '72.21' });
    expect(wire.payment_schedule[11]).toEqual({ num: 12, due_date: '2027-05-20', amount: '72.17' });
  });
});

describe('properties over random plans, amounts, rates and dates', () => {
  const anyDate = fc.oneof(
    fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T23:59:59Z'), noInvalidDate: true }),
    // Month ends and leap days, where calendars go wrong.
    fc.record({ year: fc.integer({ min: 2000, max: 2099 }), month: fc.integer({ min: 1, max: 12 }) }).map(
      ({ year, month }) => `${year}-${String(month).padStart(2, '0')}-${daysInMonth(year, month)}`,
    ),
  );
  const anyOffer = fc
    .record({
      plan: fc.constantFrom<Plan>(...PLANS),
      fraction: fc.double({ min: 0, max: 1, noNaN: true }),
      rate: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: MAX_ANNUAL_RATE_BPS })),
      term: fc.option(fc.constantFrom(...MONTHLY_TERMS), { nil: undefined }),
      decisionDate: anyDate,
    })
    .map(({ plan, fraction, rate, term, decisionDate }) => {
      const { minCents, maxCents } = PLAN_RULES[plan];
      return {
        plan,
        amountCents: minCents + Math.floor(fraction * (maxCents - minCents)),
        annualRateBps: plan === 'pay_in_4' ? 0 : rate,
        termMonths: plan === 'monthly' ? term : undefined,
        decisionDate,
      };
    });

  it('the TILA invariants hold and the wire figures add up', () => {
    fc.assert(
      fc.property(anyOffer, (input) => {
        const offer = buildOffer(input);
        const sum = offer.payments.reduce((s, p) => s + p.amountCents, 0);
        expect(sum).toBe(offer.tila.totalOfPaymentsCents);
        expect(offer.tila.totalOfPaymentsCents - offer.tila.amountFinancedCents).toBe(offer.tila.financeChargeCents);
        expect(offer.tila.amountFinancedCents).toBe(offer.approvedAmountCents);
        expect(offer.approvedAmountCents).toBe(input.amountCents);
        expect(offer.payments).toHaveLength(offer.plan === 'pay_in_4' ? 4 : offer.termMonths);
        expect(offer.termMonths).toBe(offer.plan === 'pay_in_4' ? 2 : offer.plan === 'pay_in_6' ? 6 : offer.termMonths);
        if (offer.tila.financeChargeCents === 0) expect(offer.apr).toBe('0.00');
        if (input.annualRateBps === 0) expect(offer.tila.financeChargeCents).toBe(0);
        // Due dates strictly increase and start after the decision date.
        const dates = [offer.decisionDate, ...offer.payments.map((p) => p.dueDate)];
        dates.slice(1).forEach((d, n) => expect(d > (dates[n] as string)).toBe(true));
        // Wire money is the same cents, as two-decimal strings.
        const wire = presentOffer(offer);
        const cents = (s: string): number => Math.round(Number(s) * 100);
        expect(wire.payment_schedule.every((p) => /^\d+\.\d{2}$/.test(p.amount))).toBe(true);
        expect(wire.payment_schedule.reduce((s, p) => s + cents(p.amount), 0)).toBe(cents(wire.tila_disclosure.total_of_payments));
        expect(cents(wire.tila_disclosure.total_of_payments) - cents(wire.tila_disclosure.amount_financed)).toBe(cents(wire.tila_disclosure.finance_charge));
      }),
      { numRuns: 500 },
    );
  });

  it('an independent APR recomputation from the returned schedule agrees within 0.125 point (1026.22(a)(2))', () => {
    fc.assert(
      fc.property(anyOffer, (input) => {
        const offer = buildOffer(input);
        const independent = independentApr(offer);
        expect(Math.abs(Number(offer.apr) - independent)).toBeLessThanOrEqual(0.125);
        // Far tighter in fact: both solve the same equation, the disclosure only rounds.
        expect(Math.abs(offer.aprExact - independent)).toBeLessThan(0.0001);
        // And the disclosed APR tracks the contract rate the schedule was amortized at.
        expect(Math.abs(Number(offer.apr) - input.annualRateBps / 100)).toBeLessThanOrEqual(0.125);
      }),
      { numRuns: 500 },
    );
  });
});
