/**
 * Money is integer cents inside the service and a two-decimal string outside it.
 *
 * Requests may send an amount as a string ("149.97") or a JSON number (149.97). A JSON number has
 * already been through binary floating point by the time JSON.parse hands it to us, so we turn it
 * back into its shortest decimal text (what `String(n)` prints) and parse that text; no arithmetic
 * is ever done on the float. Amounts with more than two decimals, signs, exponents or grouping are
 * refused rather than rounded: a lender must never be approved for a different amount than it sent.
 */

/** Integer number of cents. A plain number is exact up to 2^53 cents, far above any loan we make. */
export type Cents = number;

const MONEY_TEXT = /^(0|[1-9]\d{0,12})(\.\d{1,2})?$/;

/** What MONEY_TEXT accepts, in words, for 400 messages (a message must be true of every value it refuses). */
export const MONEY_FORMAT_RULE = 'a non-negative decimal amount with at most two decimals, at most 13 digits before the point and no leading zeros';

/** Parse a request amount into cents, or null when it is not a non-negative amount with at most two decimals. */
export function parseMoney(value: unknown): Cents | null {
  let text: string;
  if (typeof value === 'string') {
    text = value;
  } else if (typeof value === 'number' && Number.isFinite(value)) {
    text = String(value);
  } else {
    return null;
  }
  const match = MONEY_TEXT.exec(text);
  if (!match) return null;
  const whole = Number(match[1]);
  const fraction = match[2] ? Number(match[2].slice(1).padEnd(2, '0')) : 0;
  const cents = whole * 100 + fraction;
  return Number.isSafeInteger(cents) ? cents : null;
}

/** Format cents as the wire's two-decimal string: 14997 -> "149.97", -5 -> "-0.05". */
export function formatMoney(cents: Cents): string {
  if (!Number.isSafeInteger(cents)) throw new RangeError(`not an integer number of cents: ${cents}`);
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  const whole = Math.floor(abs / 100);
  const fraction = abs % 100;
  return `${sign}${whole}.${fraction < 10 ? '0' : ''}${fraction}`;
}

/** Cents as a JSON number of dollars, for the few fields the spec types as numbers (webhook data). */
export function centsToNumber(cents: Cents): number {
  return Number(formatMoney(cents));
}

/** A rate in basis points as the API writes percentages: 699 -> "6.99" (exact: integers only). */
export function formatRateBps(bps: number): string {
  return `${Math.floor(bps / 100)}.${String(bps % 100).padStart(2, '0')}`;
}
