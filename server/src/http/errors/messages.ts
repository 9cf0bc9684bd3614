/**
 * Error messages that teach (issue #12): every 4xx message names the field (its JSON path, or the
 * query parameter / header) and the rule it broke, and where it helps the allowed values or range.
 * These helpers give every route the same sentence shapes, so a lender's engineer learns one style:
 *
 *   transaction.amount 30000.01 is above the allowed range 25.00-30,000.00 USD for BNPL plans.
 *   consumer.address.state must be one of: AL, AK, ... (USPS two-letter codes).
 *   plan_preference pay_in_4 is not offered for 2500.00 USD; pay_in_4 allows 25.00-2,000.00 USD.
 *
 * Never pass a personal value (SSN digits, a date of birth, a name, an address) as `actual`: say
 * what is wrong with it instead ("consumer.dob gives an age under 18"). Amounts, currencies, enum
 * values, ids and counts are fine to echo. The product routes (BNPL now, auto loans next) build
 * their 4xx messages with these, and a test walks the registry and real bad requests to check that
 * no message is generic (server/test/integration/foundation/error-messages.test.ts).
 */
import type { Cents } from '../../lib/money.js';

/** 3000001 -> "30,000.01" (grouped, two decimals; for ranges people read). */
export function formatCentsGrouped(cents: Cents | number): string {
  const negative = cents < 0;
  const abs = Math.abs(Math.trunc(cents));
  const whole = Math.floor(abs / 100).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '-' : ''}${whole}.${String(abs % 100).padStart(2, '0')}`;
}

/** 3000001 -> "30000.01" (the wire form of an amount, as the caller sent it). */
export function formatCentsPlain(cents: Cents | number): string {
  const negative = cents < 0;
  const abs = Math.abs(Math.trunc(cents));
  return `${negative ? '-' : ''}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

/** "25.00-30,000.00 USD" */
export function moneyRangeText(minCents: number, maxCents: number, currency = 'USD'): string {
  return `${formatCentsGrouped(minCents)}-${formatCentsGrouped(maxCents)} ${currency}`;
}

/** `<subject> <rule>; allowed: a, b, c.` Long lists are shown whole: the point is to teach them. */
export function allowedValuesMessage(subject: string, rule: string, allowed: readonly (string | number)[]): string {
  return `${subject} ${rule}; allowed: ${allowed.join(', ')}.`;
}

/**
 * An amount outside a range: `<field> <amount> is below|above the allowed range <min>-<max> USD<context>.`
 * `context` completes the sentence, e.g. " for BNPL plans".
 */
export function moneyOutOfRangeMessage(field: string, amountCents: number, minCents: number, maxCents: number, context = '', currency = 'USD'): string {
  const side = amountCents < minCents ? 'below' : 'above';
  return `${field} ${formatCentsPlain(amountCents)} is ${side} the allowed range ${moneyRangeText(minCents, maxCents, currency)}${context}.`;
}

/** A whole number outside a range: `<field> <value> is outside the allowed range <min>-<max><unit>.` */
export function numberOutOfRangeMessage(field: string, value: number, min: number, max: number, unit = ''): string {
  return `${field} ${value} is outside the allowed range ${min}-${max}${unit ? ` ${unit}` : ''}.`;
}

/** `<field> is required<when>.` e.g. requiredMessage('consumer.ssn_last4', ' for the enhanced tier (amounts from 500.00 USD)') */
/**
 * An edit that named a version the row is not at (portal edits of endpoints and dealers): either
 * someone else saved since it was loaded, or the version is one the row never had. `subject`
 * "This dealer", `what` "its current details", `editor` the name of who made the last edit
 * (migration 0025; null for an edit from before it: users are deactivated, never deleted),
 * `editedAt` when (epoch ms, migration 0027; null for an edit from before it: no time is given).
 */
export function editVersionMessage(subject: string, what: string, version: number, expectedVersion: number, editor: string | null = null, editedAt: number | null = null): string {
  const when = editedAt === null ? '' : ` at ${new Date(editedAt).toISOString()}`;
  return expectedVersion > version
    ? `${subject} is at version ${version}; expected_version ${expectedVersion} is not one it has had: send the version its GET answered.`
    : `${subject} was changed by ${editor ?? 'someone else'}${when} since you loaded it (version ${expectedVersion}; it is now at ${version}); reload to see ${what}, then make your change again.`;
}

export function requiredMessage(field: string, when = ''): string {
  return `${field} is required${when}.`;
}

/**
 * Words that, alone, teach nothing. A 4xx message must carry more than these: the field-naming
 * test fails a message that is one of them or lacks a field name.
 */
export const GENERIC_MESSAGE_PATTERNS: readonly RegExp[] = [
  /^invalid request\.?$/i,
  /^bad request\.?$/i,
  /^validation (failed|error)\.?$/i,
  /^(the )?request is (malformed|invalid)\.?$/i,
  /\bis invalid\.?$/i,
  /\bhas an invalid format\.?$/i,
  /^unprocessable( entity)?\.?$/i,
  /^error\.?$/i,
];

export function isGenericMessage(message: string): boolean {
  return GENERIC_MESSAGE_PATTERNS.some((p) => p.test(message.trim()));
}
