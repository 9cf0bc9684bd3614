/**
 * Pieces of JSON text for the bodies built by hand on the hot paths (a poll's or a create's
 * decision, `presentDecisionJson`), byte for byte what JSON.stringify and Date#toISOString give.
 *
 * Why: a poll's body has a dozen short strings and a timestamp. JSON.stringify of one short string
 * is a call into the runtime (about 150 ns here), toISOString about 500 ns: together about 2 µs
 * of the 35 µs a poll costs the server (docs/performance.md, "thirty-fifth session"). The strings
 * are nearly always plain ASCII that needs no escape, and a date is a few divisions.
 */
import { fromDayNumber } from './calendar.js';

/**
 * `JSON.stringify(value)` for a string. Printable ASCII other than `"` and `\` needs no escape, so
 * such a string is quoted as it is; anything else (control characters, non-ASCII, lone surrogates)
 * goes to JSON.stringify, which escapes it. Null is `null`, as JSON.stringify writes it.
 */
export function jsonString(value: string | null): string {
  if (value === null) return 'null';
  return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`;
}

/**
 * Every character JSON.stringify might escape (and DEL, which it does not: such a string merely takes
 * the slower way). A regular expression beats a charCodeAt loop: 64 against 92 ns for a UUID.
 */
// eslint-disable-next-line no-control-regex -- the control characters are exactly what it looks for
const NEEDS_ESCAPE = /["\\\u0000-\u001f\u007f-\uffff]/;

const TWO_DIGITS = Array.from({ length: 100 }, (_, n) => String(n).padStart(2, '0'));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, '0'));
const DAY_MS = 86_400_000;
/** 0000-01-01T00:00:00.000Z and 10000-01-01T00:00:00.000Z: toISOString writes a four-digit year between them. */
const FOUR_DIGIT_YEARS_FROM = -62_167_219_200_000;
const FOUR_DIGIT_YEARS_UNTIL = 253_402_300_800_000;

/**
 * `new Date(ms).toISOString()` for an integer number of milliseconds since the epoch, without a
 * Date: the proleptic Gregorian calendar date of the day count (lib/calendar.ts), then the time
 * of day. Outside the four-digit years, or for a non-integer, it is toISOString itself (which
 * also throws for an invalid time, as callers expect).
 */
export function isoTimestamp(ms: number): string {
  if (!Number.isInteger(ms) || ms < FOUR_DIGIT_YEARS_FROM || ms >= FOUR_DIGIT_YEARS_UNTIL) return new Date(ms).toISOString();
  const days = Math.floor(ms / DAY_MS);
  let rest = ms - days * DAY_MS;
  const { year, month, day } = fromDayNumber(days);
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  const millis = rest - seconds * 1000;
  return `${year < 1000 ? String(year).padStart(4, '0') : year}-${TWO_DIGITS[month]}-${TWO_DIGITS[day]}T${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${THREE_DIGITS[millis]}Z`;
}
