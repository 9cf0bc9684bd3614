/**
 * Annual percentage rate by the actuarial method of Regulation Z, Appendix J (12 CFR 1026).
 *
 * How it works. Time is measured in unit-periods ((b)(4)): the common period between advance and
 * payments that occurs most often (a month, two weeks, ...), w of them in a year. Every payment sits
 * t whole unit-periods plus a fraction f of one after the start of the term ((b)(5)): for monthly
 * units whole months are counted back from the later date and the leftover days, counted forward from
 * the earlier date, are divided by 30 ((b)(3)(iv), (b)(5)(ii)); week and day units just divide the day
 * count. Whole unit-periods compound, (1 + i)^t, but a fractional unit-period earns simple interest,
 * (1 + f·i) ((b)(6)); using (1 + i)^f instead misses several published examples. The general
 * equation (b)(8) equates the present values of the advances and of the payments at the unit-period
 * rate i:
 *
 *     Σ_k A_k / ((1 + e_k·i)(1 + i)^q_k)  =  Σ_j P_j / ((1 + f_j·i)(1 + i)^t_j),     APR = 100·w·i
 *
 * It has no closed form, so, as (b)(9) says, it is solved by iteration: we bracket the root, then
 * refine it with Newton steps that fall back to bisection whenever a step would leave the bracket,
 * until the rate is known to about 1e-12 of a point, far inside the 0.01 point we promise. A zero
 * finance charge (payments total = advances total) has the exact root i = 0; it is answered before
 * any search, so it discloses exactly "0.00".
 *
 * Two layers: `solveAppendixJ` takes amounts already placed in (t, f) unit-periods; `computeApr`
 * places a real schedule (calendar dates) first, choosing the unit-period and counting the periods.
 * Dates are plain calendar dates (UTC); the month arithmetic here is also the one schedules use.
 */
import { dayNumber, fromDayNumber, type CalendarDate } from '../../lib/calendar.js';
import type { Cents } from '../../lib/money.js';

// ---------------------------------------------------------------------------------------------
// Layer 1: the general equation, (b)(8) and (b)(9)
// ---------------------------------------------------------------------------------------------

/** An advance or a payment placed in time: t whole unit-periods plus a fraction f (0 <= f < 1). */
export interface CashFlow {
  /** Integer cents. */
  amount: Cents;
  t: number;
  f: number;
}

export interface AppendixJInput {
  advances: readonly CashFlow[];
  payments: readonly CashFlow[];
  /** Unit-periods per year (12 monthly, 26 biweekly, 365/255 for a 255-day single payment, ...). */
  w: number;
}

/** Exact APR in percent (not rounded) of the general equation. Throws RangeError on bad input. */
export function solveAppendixJ(input: AppendixJInput): number {
  const { advances, payments, w } = input;
  if (!Number.isFinite(w) || w <= 0) throw new RangeError(`unit-periods per year must be positive: ${w}`);
  if (advances.length === 0) throw new RangeError('at least one advance is required');
  if (payments.length === 0) throw new RangeError('at least one payment is required');
  for (const flow of [...advances, ...payments]) checkCashFlow(flow);
  const advanced = advances.reduce((sum, a) => sum + a.amount, 0);
  const paid = payments.reduce((sum, p) => sum + p.amount, 0);
  if (advanced <= 0) throw new RangeError('the advances must total more than zero');
  // Integer cents, so this comparison is exact: no finance charge means the root is exactly 0.
  if (paid === advanced) return 0;
  return 100 * w * solveUnitPeriodRate(advances, payments, paid - advanced);
}

function checkCashFlow(flow: CashFlow): void {
  if (!Number.isSafeInteger(flow.amount) || flow.amount < 0) {
    throw new RangeError(`amount must be a non-negative integer number of cents: ${flow.amount}`);
  }
  if (!Number.isSafeInteger(flow.t) || flow.t < 0) throw new RangeError(`t must be a whole number >= 0: ${flow.t}`);
  if (!Number.isFinite(flow.f) || flow.f < 0 || flow.f >= 1) throw new RangeError(`f must be in [0, 1): ${flow.f}`);
}

/** Present value of the payments minus that of the advances at rate i, with its derivative. */
function netPresentValue(advances: readonly CashFlow[], payments: readonly CashFlow[], i: number): { value: number; slope: number } {
  let value = 0;
  let slope = 0;
  const add = (flow: CashFlow, sign: 1 | -1): void => {
    const simple = 1 + flow.f * i;
    const pv = flow.amount / (simple * Math.pow(1 + i, flow.t));
    value += sign * pv;
    slope -= sign * pv * (flow.f / simple + flow.t / (1 + i));
  };
  for (const p of payments) add(p, 1);
  for (const a of advances) add(a, -1);
  return { value, slope };
}

const MAX_RATE = 1e6; // per unit-period; far beyond any lawful rate, only a guard against looping
const MAX_ITERATIONS = 300;

function solveUnitPeriodRate(advances: readonly CashFlow[], payments: readonly CashFlow[], financeCharge: number): number {
  const g = (i: number): number => netPresentValue(advances, payments, i).value;
  // Bracket [lo, hi] with g(lo) > 0 > g(hi). At i = 0, g is the finance charge itself.
  let lo: number;
  let hi: number;
  if (financeCharge > 0) {
    lo = 0;
    hi = 0.01;
    for (let v = g(hi); v >= 0; v = g(hi)) {
      if (v === 0) return hi;
      lo = hi;
      hi *= 4;
      if (hi > MAX_RATE) throw new RangeError('no APR: the payments never discount to the amount financed');
    }
  } else {
    // Payments below the amount financed: a negative rate, somewhere in (-1, 0).
    hi = 0;
    lo = -0.5;
    for (let v = g(lo); v <= 0; v = g(lo)) {
      if (v === 0) return lo;
      hi = lo;
      lo = -1 + (1 + lo) / 4;
      if (1 + lo < 1e-12) throw new RangeError('no APR: the payments can never repay the amount financed');
    }
  }

  let x = (lo + hi) / 2;
  for (let n = 0; n < MAX_ITERATIONS; n++) {
    const { value, slope } = netPresentValue(advances, payments, x);
    if (value === 0) return x;
    if (value > 0) lo = x;
    else hi = x;
    const newton = x - value / slope;
    // A Newton step is taken only while it stays inside the bracket; otherwise we bisect.
    const next = Number.isFinite(newton) && newton > lo && newton < hi ? newton : (lo + hi) / 2;
    if (Math.abs(next - x) <= 1e-15 * Math.max(1, Math.abs(x)) || hi - lo <= 1e-15 * Math.max(1, Math.abs(x))) {
      return next;
    }
    x = next;
  }
  return x;
}

/** The two-decimal disclosure of an APR in percent: 12.2249 -> "12.22"; exactly 0 -> "0.00". */
export function formatApr(exactPercent: number): string {
  if (!Number.isFinite(exactPercent)) throw new RangeError(`not a finite APR: ${exactPercent}`);
  const hundredths = Math.round(Math.abs(exactPercent) * 100);
  const sign = exactPercent < 0 && hundredths > 0 ? '-' : '';
  const whole = Math.floor(hundredths / 100);
  const fraction = hundredths % 100;
  return `${sign}${whole}.${fraction < 10 ? '0' : ''}${fraction}`;
}

// ---------------------------------------------------------------------------------------------
// Calendar dates (proleptic Gregorian, no time zone): pure integer arithmetic
// ---------------------------------------------------------------------------------------------

export type { CalendarDate };

/** A calendar date as "YYYY-MM-DD", or a Date read in UTC. */
export type DateInput = string | Date;

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

export function toCalendarDate(input: DateInput | CalendarDate): CalendarDate {
  if (input instanceof Date) {
    if (Number.isNaN(input.getTime())) throw new RangeError('invalid Date');
    return { year: input.getUTCFullYear(), month: input.getUTCMonth() + 1, day: input.getUTCDate() };
  }
  if (typeof input === 'string') {
    const match = ISO_DATE.exec(input);
    if (!match) throw new RangeError(`not a YYYY-MM-DD date: ${input}`);
    const date = { year: Number(match[1]), month: Number(match[2]), day: Number(match[3]) };
    if (date.month < 1 || date.month > 12 || date.day < 1 || date.day > daysInMonth(date.year, date.month)) {
      throw new RangeError(`not a calendar date: ${input}`);
    }
    return date;
  }
  return { year: input.year, month: input.month, day: input.day };
}

export function formatCalendarDate(date: CalendarDate): string {
  const pad = (n: number, width: number): string => String(n).padStart(width, '0');
  return `${pad(date.year, 4)}-${pad(date.month, 2)}-${pad(date.day, 2)}`;
}

export function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

export function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Whole days from a to b ((b)(5)(i): the number of 24-hour intervals); negative if b is earlier. */
export function daysBetween(a: CalendarDate, b: CalendarDate): number {
  return dayNumber(b) - dayNumber(a);
}

export function addDays(date: CalendarDate, days: number): CalendarDate {
  return fromDayNumber(dayNumber(date) + days);
}

function monthIndex(date: CalendarDate): number {
  return date.year * 12 + (date.month - 1);
}

/** Day `anchorDay` of the month with the given index, clamped to that month's last day. */
function dateInMonth(index: number, anchorDay: number): CalendarDate {
  const year = Math.floor(index / 12);
  const month = index - year * 12 + 1;
  return { year, month, day: Math.min(anchorDay, daysInMonth(year, month)) };
}

/**
 * The date `months` months after `date` on day `anchorDay` (default: the date's own day), clamped to
 * the month's last day: Jan 31 + 1 -> Feb 28/29, Jan 31 + 2 -> Mar 31. Schedules pass the decision date
 * and k = 1..N so every due date derives from the decision date, never from the previous due date.
 */
export function addMonthsClamped(date: CalendarDate, months: number, anchorDay: number = date.day): CalendarDate {
  return dateInMonth(monthIndex(date) + months, anchorDay);
}

function isMonthEnd(date: CalendarDate): boolean {
  return date.day === daysInMonth(date.year, date.month);
}

/** Whether `date` is what a series due on day `anchorDay` of each month falls on in its month. */
function fitsAnchor(date: CalendarDate, anchorDay: number): boolean {
  return Math.min(anchorDay, daysInMonth(date.year, date.month)) === date.day;
}

/**
 * Whole months from a to b when both are the same nominal day of their months, allowing for the
 * month-end rule of (b)(3)(iv): Jan 31 -> Feb 28 -> Mar 31 are whole months apart, as are Jan 30 ->
 * Feb 28 -> Mar 30. Null when b is not a whole number (>= 1) of months after a.
 */
function wholeMonthsApart(a: CalendarDate, b: CalendarDate): number | null {
  const months = monthIndex(b) - monthIndex(a);
  if (months < 1) return null;
  // Anchor days consistent with each date: its own day, or any later day when it is a month end.
  const aHigh = isMonthEnd(a) ? 31 : a.day;
  const bHigh = isMonthEnd(b) ? 31 : b.day;
  return Math.max(a.day, b.day) <= Math.min(aHigh, bHigh) ? months : null;
}

/**
 * The nominal day of month of a series of due dates: the day most of them fit (clamping to month
 * end allowed). On a tie, which only happens around month ends, the consummation day wins if it
 * fits (a series started on Mar 31 and due Apr 30, Jun 30 runs month end to month end), else the
 * smallest day (the dates as written).
 */
function seriesAnchorDay(dates: readonly CalendarDate[], preferredDay: number): number {
  let best: number[] = [];
  let bestCount = -1;
  for (let day = 1; day <= 31; day++) {
    const count = dates.filter((d) => fitsAnchor(d, day)).length;
    if (count > bestCount) {
      best = [day];
      bestCount = count;
    } else if (count === bestCount) {
      best.push(day);
    }
  }
  return best.includes(preferredDay) ? preferredDay : (best[0] ?? preferredDay);
}

/**
 * (b)(5)(ii): whole months counted back from the later date `to` (on the series' anchor day) while
 * staying on or after `from`, and the days left over, counted forward from `from`.
 */
function monthsAndDays(from: CalendarDate, to: CalendarDate, anchorDay: number): { months: number; days: number } {
  const anchor = fitsAnchor(to, anchorDay) ? anchorDay : to.day;
  let months = Math.max(0, monthIndex(to) - monthIndex(from));
  let back = dateInMonth(monthIndex(to) - months, anchor);
  while (months > 0 && daysBetween(from, back) < 0) {
    months -= 1;
    back = dateInMonth(monthIndex(to) - months, anchor);
  }
  return { months, days: daysBetween(from, back) };
}

// ---------------------------------------------------------------------------------------------
// Layer 2: unit-periods from dates, (b)(3)-(b)(5)
// ---------------------------------------------------------------------------------------------

export type UnitPeriod =
  /** A day, or (extension, by analogy with (b)(5)(iv)) a common period of n days that is no standard interval. */
  | { kind: 'day'; days: number }
  | { kind: 'week'; weeks: number }
  | { kind: 'semimonth' }
  /** 1 to 11 months. */
  | { kind: 'month'; months: number }
  | { kind: 'year' }
  /** Single advance, single payment, term under a year ((b)(5)(vi)-(vii)): months when whole, else days. */
  | { kind: 'term'; months: number | null; days: number };

/** w: the number of unit-periods in a year ((b)(5)). */
export function unitPeriodsPerYear(unit: UnitPeriod): number {
  switch (unit.kind) {
    case 'day':
      return 365 / unit.days;
    case 'week':
      return 52 / unit.weeks;
    case 'semimonth':
      return 24;
    case 'month':
      return 12 / unit.months;
    case 'year':
      return 1;
    case 'term':
      return unit.months !== null ? 12 / unit.months : 365 / unit.days;
  }
}

interface PeriodClass {
  key: string;
  /** Length used to compare periods (months count as 30 days, as in (b)(5)(iii)). */
  length: number;
  /** The unit-period this period would be; null when longer than a year ((b)(4)(i)). */
  unit: UnitPeriod | null;
}

/** Classify the period between two consecutive dates as a month multiple, week multiple, semimonth or days. */
function classifyPeriod(a: CalendarDate, b: CalendarDate): PeriodClass {
  const months = wholeMonthsApart(a, b);
  if (months !== null) {
    const unit: UnitPeriod | null = months < 12 ? { kind: 'month', months } : months === 12 ? { kind: 'year' } : null;
    return { key: `M${months}`, length: months === 12 ? 365 : 30 * months, unit };
  }
  const days = daysBetween(a, b);
  if (days % 7 === 0) {
    const weeks = days / 7;
    return { key: `W${weeks}`, length: days, unit: weeks <= 52 ? { kind: 'week', weeks } : null };
  }
  if (isSemimonth(a, b)) return { key: 'SM', length: 15, unit: { kind: 'semimonth' } };
  return { key: `D${days}`, length: days, unit: days <= 365 ? { kind: 'day', days } : null };
}

/**
 * Half a month between two due dates of a twice-monthly series: the 1st and 16th, 15th and last day,
 * 14th and 29th (Feb 28 standing in), and so on.
 */
function isSemimonth(a: CalendarDate, b: CalendarDate): boolean {
  const months = monthIndex(b) - monthIndex(a);
  if (months === 0) {
    const gap = b.day - a.day;
    return gap === 15 || (isMonthEnd(b) && gap >= 13 && gap <= 16);
  }
  if (months === 1) {
    const gap = a.day - b.day;
    return gap === 15 || (isMonthEnd(a) && gap >= 13 && gap <= 16);
  }
  return false;
}

interface StandardInterval {
  length: number;
  unit: UnitPeriod;
}

/** Standard intervals ((b)(3)(iii)) for rounding an average period, shortest first (stable on equal lengths). */
const STANDARD_INTERVALS: readonly StandardInterval[] = ((): StandardInterval[] => {
  const list: StandardInterval[] = [
    { length: 1, unit: { kind: 'day', days: 1 } },
    { length: 15, unit: { kind: 'semimonth' } },
    { length: 365, unit: { kind: 'year' } },
  ];
  for (let n = 1; n <= 52; n++) list.push({ length: 7 * n, unit: { kind: 'week', weeks: n } });
  for (let n = 1; n <= 11; n++) list.push({ length: 30 * n, unit: { kind: 'month', months: n } });
  return list.sort((x, y) => x.length - y.length);
})();

/**
 * (b)(4): the unit-period of a single advance at `start` repaid on `dueDates` (sorted). Single payment:
 * the term, at most a year. Otherwise the common period (occurring more than once, at most a year)
 * that occurs most often, the shorter on a tie; with no common period, the average period rounded to
 * the nearest standard interval, the shorter on an exact tie.
 */
export function determineUnitPeriod(start: CalendarDate, dueDates: readonly CalendarDate[]): UnitPeriod {
  const distinct = dueDates.filter((d, n) => n === 0 || daysBetween(dueDates[n - 1] as CalendarDate, d) !== 0);
  const last = distinct[distinct.length - 1];
  if (last === undefined) throw new RangeError('at least one payment is required');
  if (distinct.length === 1) {
    const days = daysBetween(start, last);
    if (days <= 0) throw new RangeError('a single payment must fall after the advance');
    const { months, days: leftover } = monthsAndDays(start, last, seriesAnchorDay([last], start.day));
    if (months >= 12) return { kind: 'year' };
    return { kind: 'term', months: months >= 1 && leftover === 0 ? months : null, days };
  }

  const points = daysBetween(start, distinct[0] as CalendarDate) === 0 ? distinct : [start, ...distinct];
  const periods: PeriodClass[] = [];
  for (let n = 1; n < points.length; n++) periods.push(classifyPeriod(points[n - 1] as CalendarDate, points[n] as CalendarDate));

  const tally = new Map<string, { period: PeriodClass; count: number }>();
  for (const period of periods) {
    const entry = tally.get(period.key);
    if (entry) entry.count += 1;
    else tally.set(period.key, { period, count: 1 });
  }
  const common = [...tally.values()]
    .filter((e) => e.count > 1 && e.period.unit !== null)
    .sort((x, y) => y.count - x.count || x.period.length - y.period.length || (x.period.key < y.period.key ? -1 : 1));
  const winner = common[0];
  if (winner?.period.unit) return winner.period.unit;

  const average = daysBetween(start, last) / periods.length;
  let nearest = STANDARD_INTERVALS[0] as StandardInterval;
  for (const candidate of STANDARD_INTERVALS) {
    // Strictly closer only: on an exact tie the shorter interval, seen first, stays.
    if (Math.abs(candidate.length - average) < Math.abs(nearest.length - average)) nearest = candidate;
  }
  return nearest.unit;
}

/** Whole and fractional unit-periods from `start` to each due date ((b)(5)), in the order given. */
export function countUnitPeriods(unit: UnitPeriod, start: CalendarDate, dueDates: readonly CalendarDate[]): { t: number; f: number }[] {
  const split = (length: number, per: number): { t: number; f: number } => ({ t: Math.floor(length / per), f: (length % per) / per });
  switch (unit.kind) {
    case 'term':
      return dueDates.map(() => ({ t: 1, f: 0 }));
    case 'day':
    case 'week': {
      const per = unit.kind === 'day' ? unit.days : 7 * unit.weeks;
      return dueDates.map((d) => split(daysBetween(start, d), per));
    }
    case 'semimonth': {
      // Each half of the month has its own nominal day (1st and 16th, 15th and month end, ...).
      const firstHalf = seriesAnchorDay(dueDates.filter((d) => d.day <= 15), start.day);
      const secondHalf = seriesAnchorDay(dueDates.filter((d) => d.day > 15), start.day);
      return dueDates.map((d) => {
        const { months, days } = monthsAndDays(start, d, d.day <= 15 ? firstHalf : secondHalf);
        return split(30 * months + days, 15);
      });
    }
    case 'month': {
      const anchor = seriesAnchorDay(dueDates, start.day);
      return dueDates.map((d) => {
        const { months, days } = monthsAndDays(start, d, anchor);
        return split(30 * months + days, 30 * unit.months);
      });
    }
    case 'year': {
      const anchor = seriesAnchorDay(dueDates, start.day);
      return dueDates.map((d) => {
        const { months, days } = monthsAndDays(start, d, anchor);
        const t = Math.floor(months / 12);
        // (b)(5)(v): leftover whole months / 12, or, when not whole months, leftover days / 365.
        if (days === 0) return { t, f: (months % 12) / 12 };
        const yearsBack = dateInMonth(monthIndex(d) - 12 * t, fitsAnchor(d, anchor) ? anchor : d.day);
        return split(365 * t + daysBetween(start, yearsBack), 365);
      });
    }
  }
}

export interface AprPaymentInput {
  dueDate: DateInput;
  amountCents: Cents;
}

export interface ComputeAprInput {
  /** Consummation: the single advance of the amount financed, and the start of the term. */
  advanceDate: DateInput;
  amountFinancedCents: Cents;
  payments: readonly AprPaymentInput[];
  /** Forces the unit-period instead of deriving it by (b)(4), to reproduce a published computation. */
  unitPeriod?: UnitPeriod;
}

export interface AprResult {
  /** The root of the general equation, in percent, unrounded. */
  exact: number;
  /** Two decimals, as disclosed: "12.22"; a zero finance charge gives exactly "0.00". */
  disclosed: string;
  unitPeriod: UnitPeriod;
  /** Unit-periods per year. */
  w: number;
  /** Each payment as placed in the equation, sorted by due date. */
  payments: { dueDate: string; amountCents: Cents; t: number; f: number }[];
}

/** APR of a single-advance closed-end schedule on real calendar dates. Throws RangeError on bad input. */
export function computeApr(input: ComputeAprInput): AprResult {
  const start = toCalendarDate(input.advanceDate);
  if (!Number.isSafeInteger(input.amountFinancedCents) || input.amountFinancedCents <= 0) {
    throw new RangeError(`amount financed must be a positive integer number of cents: ${input.amountFinancedCents}`);
  }
  if (input.payments.length === 0) throw new RangeError('at least one payment is required');
  const payments = input.payments
    .map((p) => ({ date: toCalendarDate(p.dueDate), amountCents: p.amountCents }))
    .sort((x, y) => daysBetween(y.date, x.date));
  for (const p of payments) {
    if (daysBetween(start, p.date) < 0) throw new RangeError(`payment due ${formatCalendarDate(p.date)} before the advance`);
  }
  const dates = payments.map((p) => p.date);
  const unitPeriod = input.unitPeriod ?? determineUnitPeriod(start, dates);
  const w = unitPeriodsPerYear(unitPeriod);
  const placed = countUnitPeriods(unitPeriod, start, dates).map((tf, n) => ({
    dueDate: formatCalendarDate(dates[n] as CalendarDate),
    amountCents: (payments[n] as (typeof payments)[number]).amountCents,
    ...tf,
  }));
  const exact = solveAppendixJ({
    advances: [{ amount: input.amountFinancedCents, t: 0, f: 0 }],
    payments: placed.map((p) => ({ amount: p.amountCents, t: p.t, f: p.f })),
    w,
  });
  return { exact, disclosed: formatApr(exact), unitPeriod, w, payments: placed };
}
