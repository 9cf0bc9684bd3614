/**
 * Regulation Z Appendix J (12 CFR 1026): every (c) example (shared/reference.md 1.3), the extra vectors
 * of reference.md 1.4, and the zero-finance-charge rule. Each example is checked twice where the
 * regulation's transcription gives dates: through `solveAppendixJ` with the published t and f, and
 * through `computeApr` from the calendar dates, which must find the same unit-period, t and f itself.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  addDays,
  addMonthsClamped,
  computeApr,
  formatApr,
  formatCalendarDate,
  solveAppendixJ,
  toCalendarDate,
  type AprPaymentInput,
  type CashFlow,
  type UnitPeriod,
} from '../../../src/modules/offers/apr.js';

/** `count` flows of `amount` at t = firstT, firstT + 1, ... with the same fraction f. */
function flows(amount: number, count: number, firstT: number, f: number): CashFlow[] {
  return Array.from({ length: count }, (_, n) => ({ amount, t: firstT + n, f }));
}

/** `count` payments of `amount` every `months` months from `first` (same day, clamped to month end). */
function everyMonths(first: string, count: number, amount: number, months = 1): AprPaymentInput[] {
  const start = toCalendarDate(first);
  return Array.from({ length: count }, (_, n) => ({
    dueDate: formatCalendarDate(addMonthsClamped(start, n * months)),
    amountCents: amount,
  }));
}

/** `count` payments of `amount` every `days` days from `first`. */
function everyDays(first: string, count: number, amount: number, days: number): AprPaymentInput[] {
  const start = toCalendarDate(first);
  return Array.from({ length: count }, (_, n) => ({ dueDate: formatCalendarDate(addDays(start, n * days)), amountCents: amount }));
}

const one = (dueDate: string, amountCents: number): AprPaymentInput => ({ dueDate, amountCents });

interface Example {
  name: string;
  amountFinanced: number;
  solver: { payments: CashFlow[]; w: number };
  dates?: { advance: string; payments: AprPaymentInput[]; unit: UnitPeriod; first: { t: number; f: number } };
  published: string;
  exact: number;
}

const examples: Example[] = [
  {
    name: '(c)(1)(i) monthly, regular first period',
    amountFinanced: 500_000,
    solver: { payments: flows(23_000, 24, 1, 0), w: 12 },
    dates: { advance: '1978-01-10', payments: everyMonths('1978-02-10', 24, 23_000), unit: { kind: 'month', months: 1 }, first: { t: 1, f: 0 } },
    published: '9.69',
    exact: 9.6857,
  },
  {
    name: '(c)(1)(ii) monthly, long first period',
    amountFinanced: 600_000,
    solver: { payments: flows(20_000, 36, 1, 19 / 30), w: 12 },
    dates: { advance: '1978-02-10', payments: everyMonths('1978-04-01', 36, 20_000), unit: { kind: 'month', months: 1 }, first: { t: 1, f: 19 / 30 } },
    published: '11.82',
    exact: 11.8165,
  },
  {
    name: '(c)(1)(iii) semimonthly, short first period',
    amountFinanced: 500_000,
    solver: { payments: flows(21_917, 24, 0, 6 / 15), w: 24 },
    dates: {
      advance: '1978-02-23',
      // The 1st and the 16th of each month from 1978-03-01.
      payments: Array.from({ length: 24 }, (_, n) => ({
        dueDate: formatCalendarDate(addMonthsClamped(toCalendarDate(n % 2 === 0 ? '1978-03-01' : '1978-03-16'), Math.floor(n / 2))),
        amountCents: 21_917,
      })),
      unit: { kind: 'semimonth' },
      first: { t: 0, f: 6 / 15 },
    },
    published: '10.34',
    exact: 10.3379,
  },
  {
    name: '(c)(1)(iv) quarterly, long first period',
    amountFinanced: 1_000_000,
    solver: { payments: flows(38_500, 40, 1, 39 / 90), w: 4 },
    dates: { advance: '1978-05-23', payments: everyMonths('1978-10-01', 40, 38_500, 3), unit: { kind: 'month', months: 3 }, first: { t: 1, f: 39 / 90 } },
    published: '8.97',
    exact: 8.9708,
  },
  {
    name: '(c)(1)(v) weekly, long first period',
    amountFinanced: 50_000,
    solver: { payments: flows(1_760, 30, 4, 4 / 7), w: 52 },
    dates: { advance: '1978-03-20', payments: everyDays('1978-04-21', 30, 1_760, 7), unit: { kind: 'week', weeks: 1 }, first: { t: 4, f: 4 / 7 } },
    published: '14.96',
    exact: 14.9622,
  },
  {
    name: '(c)(2)(i) monthly, irregular first payment',
    amountFinanced: 500_000,
    solver: { payments: [{ amount: 25_000, t: 1, f: 0 }, ...flows(23_000, 23, 2, 0)], w: 12 },
    dates: {
      advance: '1978-01-10',
      payments: [one('1978-02-10', 25_000), ...everyMonths('1978-03-10', 23, 23_000)],
      unit: { kind: 'month', months: 1 },
      first: { t: 1, f: 0 },
    },
    published: '10.08',
    exact: 10.0829,
  },
  {
    name: '(c)(2)(ii) four-weekly, long first period and irregular first payment',
    amountFinanced: 40_000,
    solver: { payments: [{ amount: 3_950, t: 1, f: 5 / 28 }, ...flows(3_831, 11, 2, 5 / 28)], w: 13 },
    dates: {
      advance: '1978-03-18',
      payments: [one('1978-04-20', 3_950), ...everyDays('1978-05-18', 11, 3_831, 28)],
      unit: { kind: 'week', weeks: 4 },
      first: { t: 1, f: 5 / 28 },
    },
    published: '28.50',
    exact: 28.4979,
  },
  {
    name: '(c)(3)(i) monthly, irregular final payment',
    amountFinanced: 500_000,
    solver: { payments: [...flows(23_000, 23, 1, 0), { amount: 28_000, t: 24, f: 0 }], w: 12 },
    dates: {
      advance: '1978-01-10',
      payments: [...everyMonths('1978-02-10', 23, 23_000), one('1980-01-10', 28_000)],
      unit: { kind: 'month', months: 1 },
      first: { t: 1, f: 0 },
    },
    published: '10.50',
    exact: 10.5005,
  },
  {
    name: '(c)(3)(ii) biweekly, 8-day odd first period and irregular final payment',
    amountFinanced: 20_000,
    solver: { payments: [...flows(950, 19, 0, 8 / 14), { amount: 3_000, t: 19, f: 8 / 14 }], w: 26 },
    dates: {
      advance: '1978-04-03',
      payments: [...everyDays('1978-04-11', 19, 950, 14), one('1979-01-02', 3_000)],
      unit: { kind: 'week', weeks: 2 },
      first: { t: 0, f: 8 / 14 },
    },
    published: '12.22',
    exact: 12.2249,
  },
  {
    name: '(c)(4)(i) monthly, irregular first and final payments',
    amountFinanced: 500_000,
    solver: { payments: [{ amount: 25_000, t: 1, f: 0 }, ...flows(23_000, 22, 2, 0), { amount: 28_000, t: 24, f: 0 }], w: 12 },
    dates: {
      advance: '1978-01-10',
      payments: [one('1978-02-10', 25_000), ...everyMonths('1978-03-10', 22, 23_000), one('1980-01-10', 28_000)],
      unit: { kind: 'month', months: 1 },
      first: { t: 1, f: 0 },
    },
    published: '10.90',
    exact: 10.8955,
  },
  {
    name: '(c)(4)(ii) two-monthly, short first period, irregular first and final payments',
    amountFinanced: 800_000,
    solver: { payments: [{ amount: 44_936, t: 0, f: 52 / 60 }, ...flows(46_500, 18, 1, 52 / 60), { amount: 20_000, t: 19, f: 52 / 60 }], w: 6 },
    dates: {
      advance: '1978-01-10',
      payments: [one('1978-03-01', 44_936), ...everyMonths('1978-05-01', 18, 46_500, 2), one('1981-05-01', 20_000)],
      unit: { kind: 'month', months: 2 },
      first: { t: 0, f: 52 / 60 },
    },
    published: '7.30',
    exact: 7.3018,
  },
  {
    name: '(c)(5)(i) single advance, single payment, term in days',
    amountFinanced: 100_000,
    solver: { payments: [{ amount: 108_000, t: 1, f: 0 }], w: 365 / 255 },
    dates: { advance: '1978-01-03', payments: [one('1978-09-15', 108_000)], unit: { kind: 'term', months: null, days: 255 }, first: { t: 1, f: 0 } },
    published: '11.45',
    exact: 11.451,
  },
  {
    // The regulation gives no dates for (c)(5)(ii)-(iv); ours are any dates with the stated term.
    name: '(c)(5)(ii) single advance, single payment, 6 months',
    amountFinanced: 100_000,
    solver: { payments: [{ amount: 104_400, t: 1, f: 0 }], w: 2 },
    dates: { advance: '2024-01-15', payments: [one('2024-07-15', 104_400)], unit: { kind: 'term', months: 6, days: 182 }, first: { t: 1, f: 0 } },
    published: '8.80',
    exact: 8.8,
  },
  {
    name: '(c)(5)(iii) single advance, single payment, 1 year 6 months',
    amountFinanced: 100_000,
    solver: { payments: [{ amount: 113_519, t: 1, f: 6 / 12 }], w: 1 },
    dates: { advance: '2024-01-15', payments: [one('2025-07-15', 113_519)], unit: { kind: 'year' }, first: { t: 1, f: 6 / 12 } },
    published: '8.76',
    exact: 8.757,
  },
  {
    name: '(c)(5)(iv) single advance, single payment, 2 years',
    amountFinanced: 100_000,
    solver: { payments: [{ amount: 124_000, t: 2, f: 0 }], w: 1 },
    dates: { advance: '2024-01-15', payments: [one('2026-01-15', 124_000)], unit: { kind: 'year' }, first: { t: 2, f: 0 } },
    published: '11.36',
    exact: 11.3553,
  },
  {
    name: '(c)(6)(i) skipped payments, four-weekly',
    amountFinanced: 213_500,
    solver: {
      payments: [...flows(10_000, 9, 0, 26 / 28), ...flows(10_000, 6, 10, 12 / 28), ...flows(10_000, 6, 16, 26 / 28), ...flows(10_000, 3, 23, 12 / 28)],
      w: 13,
    },
    published: '12.00',
    exact: 11.9951,
  },
  {
    name: '(c)(6)(ii) skipped and single payments, monthly',
    amountFinanced: 735_000,
    solver: {
      payments: [
        ...flows(100_000, 3, 6, 12 / 30),
        { amount: 200_000, t: 12, f: 12 / 30 },
        ...flows(75_000, 3, 18, 12 / 30),
        { amount: 100_000, t: 22, f: 29 / 30 },
      ],
      w: 12,
    },
    published: '10.22',
    exact: 10.2154,
  },
];

describe('Appendix J (c) examples through solveAppendixJ (published t and f)', () => {
  it.each(examples.map((e) => [e.name, e] as const))('%s', (_name, e) => {
    const exact = solveAppendixJ({ advances: [{ amount: e.amountFinanced, t: 0, f: 0 }], payments: e.solver.payments, w: e.solver.w });
    expect(formatApr(exact)).toBe(e.published);
    expect(Math.abs(exact - e.exact)).toBeLessThan(0.0005);
  });
});

describe('Appendix J (c) examples through computeApr (calendar dates)', () => {
  const dated = examples.filter((e) => e.dates !== undefined);
  it.each(dated.map((e) => [e.name, e] as const))('%s', (_name, e) => {
    const dates = e.dates!;
    const result = computeApr({ advanceDate: dates.advance, amountFinancedCents: e.amountFinanced, payments: dates.payments });
    expect(result.unitPeriod).toEqual(dates.unit);
    expect(result.w).toBeCloseTo(e.solver.w, 12);
    expect(result.payments[0]?.t).toBe(dates.first.t);
    expect(result.payments[0]?.f).toBeCloseTo(dates.first.f, 12);
    // Every payment lands where the regulation's own (t, f) put it.
    result.payments.forEach((p, n) => {
      expect(p.t).toBe(e.solver.payments[n]?.t);
      expect(p.f).toBeCloseTo(e.solver.payments[n]?.f ?? NaN, 12);
    });
    expect(result.disclosed).toBe(e.published);
    expect(Math.abs(result.exact - e.exact)).toBeLessThan(0.0005);
  });

  it('(c)(1)(v) accepts Date objects, read in UTC', () => {
    const payments = everyDays('1978-04-21', 30, 1_760, 7).map((p) => ({ ...p, dueDate: new Date(`${String(p.dueDate)}T23:30:00Z`) }));
    const result = computeApr({ advanceDate: new Date('1978-03-20T00:00:00Z'), amountFinancedCents: 50_000, payments });
    expect(result.disclosed).toBe('14.96');
  });

  it('(c)(3)(ii) treating the 8-day first period as a full one would give 11.76, not 12.22', () => {
    const wrong = solveAppendixJ({ advances: [{ amount: 20_000, t: 0, f: 0 }], payments: [...flows(950, 19, 1, 0), { amount: 3_000, t: 20, f: 0 }], w: 26 });
    expect(formatApr(wrong)).toBe('11.76');
  });

  it('payments given out of order are placed in date order', () => {
    const payments = everyMonths('1978-02-10', 24, 23_000).reverse();
    expect(computeApr({ advanceDate: '1978-01-10', amountFinancedCents: 500_000, payments }).disclosed).toBe('9.69');
  });
});

describe('reference.md 1.4 vectors', () => {
  const solve = (amountFinanced: number, payments: CashFlow[], w: number): number =>
    solveAppendixJ({ advances: [{ amount: amountFinanced, t: 0, f: 0 }], payments, w });

  it('(c)(1)(iv) with the advance on 1978-06-23 (t=1, f=8/90) and on 1978-07-23 (t=0, f=69/90)', () => {
    expect(formatApr(solve(1_000_000, flows(38_500, 40, 1, 8 / 90), 4))).toBe('9.15');
    expect(formatApr(solve(1_000_000, flows(38_500, 40, 0, 69 / 90), 4))).toBe('9.32');
    const june = computeApr({ advanceDate: '1978-06-23', amountFinancedCents: 1_000_000, payments: everyMonths('1978-10-01', 40, 38_500, 3) });
    expect(june.payments[0]).toMatchObject({ t: 1 });
    expect(june.payments[0]?.f).toBeCloseTo(8 / 90, 12);
    expect(june.disclosed).toBe('9.15');
    const july = computeApr({ advanceDate: '1978-07-23', amountFinancedCents: 1_000_000, payments: everyMonths('1978-10-01', 40, 38_500, 3) });
    expect(july.payments[0]).toMatchObject({ t: 0 });
    expect(july.payments[0]?.f).toBeCloseTo(69 / 90, 12);
    expect(july.disclosed).toBe('9.32');
  });

  it('daily: 1,000 on 2023-10-26, 5 x 220 daily from 2023-11-30 -> 94.15', () => {
    expect(formatApr(solve(100_000, flows(22_000, 5, 35, 0), 365))).toBe('94.15');
    const result = computeApr({ advanceDate: '2023-10-26', amountFinancedCents: 100_000, payments: everyDays('2023-11-30', 5, 22_000, 1) });
    expect(result.unitPeriod).toEqual({ kind: 'day', days: 1 });
    expect(result.disclosed).toBe('94.15');
  });

  it.each([
    ['2023-10-28', '176.52', 4, 5 / 7],
    ['2023-11-23', '412.40', 1, 0],
    ['2023-11-24', '434.30', 0, 6 / 7],
  ] as const)('weekly: 1,000 on %s, 5 x 250 weekly from 2023-11-30 -> %s', (advance, published, t, f) => {
    expect(formatApr(solve(100_000, flows(25_000, 5, t, f), 52))).toBe(published);
    const result = computeApr({ advanceDate: advance, amountFinancedCents: 100_000, payments: everyDays('2023-11-30', 5, 25_000, 7) });
    expect(result.unitPeriod).toEqual({ kind: 'week', weeks: 1 });
    expect(result.payments[0]?.t).toBe(t);
    expect(result.payments[0]?.f).toBeCloseTo(f, 12);
    expect(result.disclosed).toBe(published);
  });

  it('yearly: 1,000 on 2023-10-26, 5 x 500 yearly from 2023-11-30 -> 78.34 ((b)(5)(v): 35 leftover days / 365)', () => {
    expect(formatApr(solve(100_000, flows(50_000, 5, 0, 35 / 365), 1))).toBe('78.34');
    const result = computeApr({ advanceDate: '2023-10-26', amountFinancedCents: 100_000, payments: everyMonths('2023-11-30', 5, 50_000, 12) });
    expect(result.unitPeriod).toEqual({ kind: 'year' });
    expect(result.payments[0]?.f).toBeCloseTo(35 / 365, 12);
    expect(result.disclosed).toBe('78.34');
  });

  it('(b)(5)(vi): 500 on 2024-06-01 -> 550 on 2024-07-01 is one month, w = 12 -> 120.00', () => {
    const result = computeApr({ advanceDate: '2024-06-01', amountFinancedCents: 50_000, payments: [one('2024-07-01', 55_000)] });
    expect(result.unitPeriod).toEqual({ kind: 'term', months: 1, days: 30 });
    expect(result.w).toBe(12);
    expect(result.disclosed).toBe('120.00');
  });

  it('(b)(5)(vii): 500 on 2024-06-01 -> 550 on 2024-06-16 is 15 days, w = 365/15 -> 243.33', () => {
    const result = computeApr({ advanceDate: '2024-06-01', amountFinancedCents: 50_000, payments: [one('2024-06-16', 55_000)] });
    expect(result.unitPeriod).toEqual({ kind: 'term', months: null, days: 15 });
    expect(result.disclosed).toBe('243.33');
  });

  it('no common period: 1,000 on 2024-01-01, 550 on 2024-01-29 and 2024-03-05, 4-week unit-period -> 78.10', () => {
    const payments = [one('2024-01-29', 55_000), one('2024-03-05', 55_000)];
    expect(formatApr(solve(100_000, [{ amount: 55_000, t: 1, f: 0 }, { amount: 55_000, t: 2, f: 8 / 28 }], 13))).toBe('78.10');
    // With the 4-week unit-period of the source, computeApr reproduces its placement and value.
    const fourWeekly = computeApr({ advanceDate: '2024-01-01', amountFinancedCents: 100_000, payments, unitPeriod: { kind: 'week', weeks: 4 } });
    expect(fourWeekly.payments.map((p) => [p.t, p.f])).toEqual([[1, 0], [2, 8 / 28]]);
    expect(fourWeekly.disclosed).toBe('78.10');
    // Read literally, (b)(4)(i)(B) rounds the 32-day average period (28 and 36 days) to a month,
    // not to 4 weeks; the 0.70-point gap is documented in docs/apr.md.
    const literal = computeApr({ advanceDate: '2024-01-01', amountFinancedCents: 100_000, payments });
    expect(literal.unitPeriod).toEqual({ kind: 'month', months: 1 });
    expect(literal.disclosed).toBe('77.40');
  });

  it.each([
    [[1, 2, 3], '363.80'],
    [[1, 2, 4], '311.98'],
    [[1, 2, 9], '182.59'],
  ] as const)('daily unit-period: 300 on 2024-01-01, 3 x 102 on days %j -> %s', (days, published) => {
    expect(formatApr(solve(30_000, days.map((t) => ({ amount: 10_200, t, f: 0 })), 365))).toBe(published);
    const start = toCalendarDate('2024-01-01');
    const payments = days.map((d) => one(formatCalendarDate(addDays(start, d)), 10_200));
    const result = computeApr({ advanceDate: '2024-01-01', amountFinancedCents: 30_000, payments });
    expect(result.unitPeriod).toEqual({ kind: 'day', days: 1 });
    expect(result.disclosed).toBe(published);
  });

  it.each([
    [[7, 14, 21], '51.83'],
    [[7, 14, 22], '50.62'],
  ] as const)('weekly unit-period: 300 on 2024-01-01, 3 x 102 on days %j -> %s', (days, published) => {
    const start = toCalendarDate('2024-01-01');
    const payments = days.map((d) => one(formatCalendarDate(addDays(start, d)), 10_200));
    const result = computeApr({ advanceDate: '2024-01-01', amountFinancedCents: 30_000, payments });
    expect(result.unitPeriod).toEqual({ kind: 'week', weeks: 1 });
    expect(result.disclosed).toBe(published);
    expect(formatApr(solve(30_000, result.payments.map((p) => ({ amount: p.amountCents, t: p.t, f: p.f })), 52))).toBe(published);
  });

  it('149.97 financed, 3 x 51.99 biweekly: FC 6.00, TOP 155.97, APR 51.67', () => {
    expect(formatApr(solve(14_997, flows(5_199, 3, 1, 0), 26))).toBe('51.67');
    const result = computeApr({ advanceDate: '2026-01-15', amountFinancedCents: 14_997, payments: everyDays('2026-01-29', 3, 5_199, 14) });
    expect(result.unitPeriod).toEqual({ kind: 'week', weeks: 2 });
    expect(result.disclosed).toBe('51.67');
  });

  it('1,000.00 with 12 x 88.85 monthly -> 12.00', () => {
    expect(formatApr(solve(100_000, flows(8_885, 12, 1, 0), 12))).toBe('12.00');
    expect(computeApr({ advanceDate: '2026-01-15', amountFinancedCents: 100_000, payments: everyMonths('2026-02-15', 12, 8_885) }).disclosed).toBe('12.00');
    // A series due on the 28th, consummated on the 31st, has an odd 28-day first period (t=0, f=28/30).
    const on28th = computeApr({ advanceDate: '2026-01-31', amountFinancedCents: 100_000, payments: everyMonths('2026-02-28', 12, 8_885) });
    expect(on28th.payments[0]).toMatchObject({ t: 0 });
    expect(on28th.payments[0]?.f).toBeCloseTo(28 / 30, 12);
  });

  it.each([
    ['1,200.00 at 15%, 12 x 108.31', '15.00', 120_000, [...Array(12).fill(10_831)]],
    ['5,000.00 at 9.99%, 23 x 230.70 + 230.77', '9.99', 500_000, [...Array(23).fill(23_070), 23_077]],
    ['800.00 at 15%, 11 x 72.21 + 72.17', '15.00', 80_000, [...Array(11).fill(7_221), 7_217]],
  ] as const)('amortized %s -> APR %s', (_name, published, financed, amounts) => {
    const payments = (amounts as readonly number[]).map((amount, n) => ({ amount, t: n + 1, f: 0 }));
    expect(formatApr(solve(financed, payments, 12))).toBe(published);
  });
});

describe('zero finance charge', () => {
  it('150.00 financed, 3 x 50.00 biweekly -> exactly 0.00', () => {
    const result = computeApr({ advanceDate: '2026-01-15', amountFinancedCents: 15_000, payments: everyDays('2026-01-29', 3, 5_000, 14) });
    expect(result.exact).toBe(0);
    expect(result.disclosed).toBe('0.00');
    expect(solveAppendixJ({ advances: [{ amount: 15_000, t: 0, f: 0 }], payments: flows(5_000, 3, 1, 0), w: 26 })).toBe(0);
  });

  it('any schedule whose payments total the amount financed gives exactly 0', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ amount: fc.integer({ min: 0, max: 1_000_000 }), t: fc.integer({ min: 0, max: 60 }), f: fc.double({ min: 0, max: 0.999, noNaN: true }) }), {
          minLength: 1,
          maxLength: 40,
        }),
        fc.integer({ min: 1, max: 400 }),
        (payments, w) => {
          const total = payments.reduce((s, p) => s + p.amount, 0);
          fc.pre(total > 0);
          expect(solveAppendixJ({ advances: [{ amount: total, t: 0, f: 0 }], payments, w })).toBe(0);
        },
      ),
    );
  });

  it('a one-cent finance charge gives a small positive APR, not zero', () => {
    const exact = solveAppendixJ({ advances: [{ amount: 15_000, t: 0, f: 0 }], payments: [...flows(5_000, 2, 1, 0), { amount: 5_001, t: 3, f: 0 }], w: 26 });
    expect(exact).toBeGreaterThan(0);
    expect(exact).toBeLessThan(0.1);
  });
});

describe('solver robustness', () => {
  it('a negative finance charge gives a negative rate, never NaN', () => {
    const exact = solveAppendixJ({ advances: [{ amount: 100_000, t: 0, f: 0 }], payments: flows(8_000, 12, 1, 0), w: 12 });
    expect(Number.isFinite(exact)).toBe(true);
    expect(exact).toBeLessThan(0);
    // At the root both sides of the equation agree.
    const i = exact / 1200;
    const pv = Array.from({ length: 12 }, (_, n) => 8_000 / Math.pow(1 + i, n + 1)).reduce((a, b) => a + b, 0);
    expect(pv).toBeCloseTo(100_000, 6);
  });

  it('handles several advances (the general equation, not only the amount financed)', () => {
    // 1,000 now and 1,000 after 6 months, repaid by 12 x 180 monthly: check the root satisfies (b)(8).
    const advances = [{ amount: 100_000, t: 0, f: 0 }, { amount: 100_000, t: 6, f: 0 }];
    const payments = flows(18_000, 12, 1, 0);
    const exact = solveAppendixJ({ advances, payments, w: 12 });
    const i = exact / 1200;
    const side = (fs: CashFlow[]): number => fs.reduce((s, x) => s + x.amount / ((1 + x.f * i) * Math.pow(1 + i, x.t)), 0);
    expect(side(payments)).toBeCloseTo(side(advances), 6);
  });

  it('finds very high rates (payday-style) without giving up', () => {
    const exact = solveAppendixJ({ advances: [{ amount: 10_000, t: 0, f: 0 }], payments: [{ amount: 11_500, t: 1, f: 0 }], w: 365 / 14 });
    expect(formatApr(exact)).toBe('391.07');
  });

  it('the root satisfies the equation to far better than 0.01 point for random schedules', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1_000, max: 5_000_000 }),
        fc.array(fc.record({ t: fc.integer({ min: 0, max: 48 }), f: fc.double({ min: 0, max: 0.99, noNaN: true }) }), { minLength: 1, maxLength: 36 }),
        fc.integer({ min: 0, max: 6_000 }),
        fc.constantFrom(1, 2, 4, 12, 13, 24, 26, 52, 365),
        (financed, times, markupBps, w) => {
          const total = Math.round((financed * (10_000 + markupBps)) / 10_000);
          const each = Math.floor(total / times.length);
          const payments = times.map((tf, n) => ({ ...tf, amount: n === times.length - 1 ? total - each * (times.length - 1) : each }));
          // Payments at the advance's instant, or a vanishing fraction of a period after it, are
          // hardly discounted at any rate: when they alone repay the amount financed, no finite
          // rate solves the equation (the solver's RangeError, tested below), and when they come
          // close, the rate is unbounded. The schedule must leave the rest to later payments.
          const immediate = payments.filter((p) => p.t === 0 && p.f < 0.01).reduce((s, p) => s + p.amount, 0);
          fc.pre(immediate < financed);
          const exact = solveAppendixJ({ advances: [{ amount: financed, t: 0, f: 0 }], payments, w });
          expect(Number.isFinite(exact)).toBe(true);
          const residual = (apr: number): number => {
            const i = apr / (100 * w);
            return payments.reduce((s, p) => s + p.amount / ((1 + p.f * i) * Math.pow(1 + i, p.t)), 0) - financed;
          };
          // The disclosed value is bracketed: a root lies within +-0.0001 point of the exact value.
          if (total !== financed) expect(Math.sign(residual(exact - 1e-4))).not.toBe(Math.sign(residual(exact + 1e-4)));
        },
      ),
    );
  });

  it('a finance charge earned in no time at all has no finite APR: RangeError, not NaN or Infinity', () => {
    expect(() => solveAppendixJ({ advances: [{ amount: 1_000, t: 0, f: 0 }], payments: [{ amount: 1_005, t: 0, f: 5e-324 }], w: 1 })).toThrow(RangeError);
    // Payments at the advance's instant repay it whole; the charge, paid a period later, can never
    // be discounted away (fast-check's counterexample to the property above, before its
    // precondition said so).
    const repaidAtOnce = [{ amount: 499, t: 0, f: 0 }, { amount: 499, t: 1, f: 0 }, { amount: 501, t: 0, f: 0 }];
    expect(() => solveAppendixJ({ advances: [{ amount: 1_000, t: 0, f: 0 }], payments: repaidAtOnce, w: 1 })).toThrow(RangeError);
  });

  it('rejects malformed input with RangeError instead of returning NaN', () => {
    const advances = [{ amount: 10_000, t: 0, f: 0 }];
    expect(() => solveAppendixJ({ advances, payments: [], w: 12 })).toThrow(RangeError);
    expect(() => solveAppendixJ({ advances, payments: [{ amount: 10_100, t: 1, f: 1 }], w: 12 })).toThrow(RangeError);
    expect(() => solveAppendixJ({ advances, payments: [{ amount: 101.5, t: 1, f: 0 }], w: 12 })).toThrow(RangeError);
    expect(() => solveAppendixJ({ advances, payments: [{ amount: 10_100, t: 1, f: 0 }], w: 0 })).toThrow(RangeError);
    expect(() => solveAppendixJ({ advances, payments: [{ amount: 10_100, t: 0, f: 0 }], w: 12 })).toThrow(RangeError);
    expect(() => computeApr({ advanceDate: '2026-02-30', amountFinancedCents: 10_000, payments: [one('2026-03-30', 10_100)] })).toThrow(RangeError);
    expect(() => computeApr({ advanceDate: '2026-03-01', amountFinancedCents: 10_000, payments: [one('2026-02-01', 10_100)] })).toThrow(RangeError);
    expect(() => computeApr({ advanceDate: '2026-03-01', amountFinancedCents: 10_000, payments: [] })).toThrow(RangeError);
  });
});

describe('calendar rules', () => {
  const monthly = (advance: string, first: string, count: number) =>
    computeApr({ advanceDate: advance, amountFinancedCents: 100_000, payments: everyMonths(first, count, 8_885) });

  it.each([
    ['2026-01-31', '2026-02-28'],
    ['2024-01-31', '2024-02-29'],
    ['2023-01-30', '2023-02-28'],
    ['2023-01-29', '2023-02-28'],
    ['2026-03-31', '2026-04-30'],
    ['2024-02-29', '2024-03-29'],
    ['2023-02-28', '2023-03-28'],
  ])('month-end rule: a monthly series from %s (first due %s) counts whole months', (advance, _first) => {
    // The schedule keeps the advance day, clamped: every due date derives from the advance date.
    const start = toCalendarDate(advance);
    const payments = Array.from({ length: 12 }, (_, n) => ({ dueDate: formatCalendarDate(addMonthsClamped(start, n + 1)), amountCents: 8_885 }));
    expect(payments[0]?.dueDate).toBe(_first);
    const result = computeApr({ advanceDate: advance, amountFinancedCents: 100_000, payments });
    expect(result.unitPeriod).toEqual({ kind: 'month', months: 1 });
    expect(result.payments.map((p) => [p.t, p.f])).toEqual(Array.from({ length: 12 }, (_, n) => [n + 1, 0]));
    expect(result.disclosed).toBe('12.00');
  });

  it('a series due on the last day of each month runs last day to last day', () => {
    const payments = ['2026-04-30', '2026-05-31', '2026-06-30', '2026-07-31'].map((d) => one(d, 26_000));
    const result = computeApr({ advanceDate: '2026-03-31', amountFinancedCents: 100_000, payments });
    expect(result.payments.map((p) => [p.t, p.f])).toEqual([[1, 0], [2, 0], [3, 0], [4, 0]]);
  });

  it('an odd first period in a monthly series is counted in days / 30', () => {
    const result = monthly('2026-01-05', '2026-02-20', 12);
    expect(result.payments[0]).toMatchObject({ t: 1 });
    expect(result.payments[0]?.f).toBeCloseTo(15 / 30, 12);
    expect(result.payments[11]).toMatchObject({ t: 12 });
  });

  it('semimonthly series on the 15th and month end: (b)(5)(iii) counts 30 x whole months + days, / 15', () => {
    const dates = ['2026-01-15', '2026-01-31', '2026-02-15', '2026-02-28', '2026-03-15', '2026-03-31', '2026-04-15', '2026-04-30'];
    const fromMonthEnd = computeApr({ advanceDate: '2025-12-31', amountFinancedCents: 100_000, payments: dates.map((d) => one(d, 13_000)) });
    expect(fromMonthEnd.unitPeriod).toEqual({ kind: 'semimonth' });
    expect(fromMonthEnd.w).toBe(24);
    expect(fromMonthEnd.payments.map((p) => [p.t, p.f])).toEqual(dates.map((_, n) => [n + 1, 0]));
    // Read literally, Jan 1 -> Jan 15 is 14 days (t=0, f=14/15) but Jan 1 -> Jan 31 is 30 days, 2 whole semimonths.
    const fromFirst = computeApr({ advanceDate: '2026-01-01', amountFinancedCents: 100_000, payments: dates.map((d) => one(d, 13_000)) });
    expect(fromFirst.payments.slice(0, 4).map((p) => [p.t, Math.round(p.f * 15)])).toEqual([[0, 14], [2, 0], [2, 14], [4, 0]]);
  });

  it('semimonthly series on the 14th and 29th, Feb 28 standing in for the 29th', () => {
    const dates = ['2026-01-14', '2026-01-29', '2026-02-14', '2026-02-28', '2026-03-14', '2026-03-29'];
    const result = computeApr({ advanceDate: '2025-12-29', amountFinancedCents: 100_000, payments: dates.map((d) => one(d, 17_000)) });
    expect(result.unitPeriod).toEqual({ kind: 'semimonth' });
    // The 29th-series dates are whole semimonths (Feb 28 counts as the 29th); the 14th ones carry Dec 29 -> Jan 14's extra day.
    expect(result.payments.map((p) => [p.t, Math.round(p.f * 15)])).toEqual([[1, 1], [2, 0], [3, 1], [4, 0], [5, 1], [6, 0]]);
  });

  it('a biweekly schedule stays biweekly when a period ends on a month end', () => {
    const result = computeApr({ advanceDate: '2026-02-03', amountFinancedCents: 10_000, payments: everyDays('2026-02-17', 4, 2_600, 14) });
    expect(result.payments.map((p) => p.dueDate)).toEqual(['2026-02-17', '2026-03-03', '2026-03-17', '2026-03-31']);
    expect(result.unitPeriod).toEqual({ kind: 'week', weeks: 2 });
    expect(result.payments.map((p) => [p.t, p.f])).toEqual([[1, 0], [2, 0], [3, 0], [4, 0]]);
  });

  it('property: any dated schedule with a positive finance charge gives a finite APR and a consistent placement', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 36_500 }),
        fc.uniqueArray(fc.integer({ min: 1, max: 2_000 }), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1_000, max: 3_000_000 }),
        fc.integer({ min: 1, max: 5_000 }),
        (startOffset, offsets, financed, markupBps) => {
          const start = addDays(toCalendarDate('2000-01-01'), startOffset);
          const total = financed + Math.max(1, Math.round((financed * markupBps) / 10_000));
          const each = Math.floor(total / offsets.length);
          const payments = offsets.map((d, n) => one(formatCalendarDate(addDays(start, d)), n === 0 ? total - each * (offsets.length - 1) : each));
          const result = computeApr({ advanceDate: formatCalendarDate(start), amountFinancedCents: financed, payments });
          expect(Number.isFinite(result.exact)).toBe(true);
          expect(result.exact).toBeGreaterThan(0);
          expect(result.disclosed).toMatch(/^\d+\.\d{2}$/);
          // Later payments never sit earlier in the equation.
          result.payments.slice(1).forEach((p, n) => {
            const prev = result.payments[n] as (typeof result.payments)[number];
            expect(p.t + p.f).toBeGreaterThanOrEqual(prev.t + prev.f - 1e-12);
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('disclosure rounding', () => {
    expect(formatApr(12.2249)).toBe('12.22');
    expect(formatApr(9.6857)).toBe('9.69');
    expect(formatApr(0)).toBe('0.00');
    expect(formatApr(0.004)).toBe('0.00');
    expect(formatApr(120.00000000000001)).toBe('120.00');
    expect(formatApr(-1.234)).toBe('-1.23');
  });
});
