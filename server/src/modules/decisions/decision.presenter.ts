/**
 * The one place a stored decision becomes wire JSON. Each shape carries exactly the fields
 * interface.md lists for it (docs/decisions.md has the table); snake_case as the spec spells it,
 * money as two-decimal strings, timestamps ISO 8601 UTC.
 */
import type { DecisionsTable } from '../../db/schema.js';
import { isoTimestamp, jsonString } from '../../lib/json-text.js';
import { formatMoney } from '../../lib/money.js';

export const ESTIMATED_COMPLETION_SECONDS = { enhanced: 120, hard: 600 } as const;

/** The path segment of each product under /v1/decisions. */
export const PRODUCT_PATHS = { bnpl: 'bnpl', auto_loan: 'auto-loan' } as const satisfies Record<DecisionsTable['product'], string>;

/**
 * Every column the presenter reads, and no other: a poll selects only these (plus its scope), so
 * reading a column not listed here is a type error rather than an `undefined` on the wire.
 */
export const PRESENTED_COLUMNS = [
  'id', 'application_id', 'product', 'status', 'kyc_tier', 'kyc_status', 'outcome', 'currency', 'approved_amount_cents', 'apr', 'term_months',
  'schedule_json', 'tila_json', 'reasons_json', 'expires_at', 'buy_rate', 'contract_rate', 'dealer_reserve_cents', 'ltv',
] as const satisfies readonly (keyof DecisionsTable)[];

export type PresentedRow = Pick<DecisionsTable, (typeof PRESENTED_COLUMNS)[number]>;

/**
 * The format of the answers stored with final decisions (migration 0029, ADR 0051). Bump it with
 * any change to what `presentDecisionJson` writes for a final decision: polls then ignore the
 * answers stored before and render from the columns. The presenter's format test pins the bytes
 * of this format and fails until it is bumped.
 */
export const ANSWER_FORMAT = 1;

/**
 * The stored-answer columns of a row about to be written: the answer a poll gives, for a final
 * decision; none for a pending one (its answer carries the hosted page's URL, a bearer secret kept
 * only sealed). The statement that writes the row's new state writes these with it. `rendered`:
 * the row's `presentDecisionJson(row, null)` when the caller has it already (a create's answer).
 */
export function storedAnswerOf(row: PresentedRow, rendered?: string): { answer_json: string | null; answer_format: number | null } {
  if (row.status === 'needs_consumer_action') return { answer_json: null, answer_format: null };
  return { answer_json: rendered ?? presentDecisionJson(row, null), answer_format: ANSWER_FORMAT };
}

export function pollingUrlOf(row: Pick<DecisionsTable, 'id' | 'product'>): string {
  return `/v1/decisions/${PRODUCT_PATHS[row.product]}/${row.id}`;
}

export function presentDecision(row: PresentedRow, consumerCompleteUrl: string | null): Record<string, unknown> {
  const reasons = JSON.parse(row.reasons_json) as Array<{ code: string; reason: string }>;
  // Each shape written out, not `{ ...base, ... }`: docs/performance.md, "objects built by spreading".
  if (row.status === 'needs_consumer_action') {
    return {
      decision_id: row.id,
      application_id: row.application_id,
      status: row.status,
      kyc_tier: row.kyc_tier,
      kyc_status: row.kyc_status,
      outcome: null,
      consumer_complete_url: consumerCompleteUrl,
      polling_url: pollingUrlOf(row),
      estimated_completion_seconds: ESTIMATED_COMPLETION_SECONDS[row.kyc_tier === 'hard' ? 'hard' : 'enhanced'],
      expires_at: new Date(row.expires_at).toISOString(),
    };
  }
  if (row.outcome === 'declined') return { decision_id: row.id, application_id: row.application_id, status: row.status, outcome: 'declined', decline_reasons: reasons };
  if (row.outcome === 'referred') {
    return { decision_id: row.id, application_id: row.application_id, status: row.status, kyc_tier: row.kyc_tier, kyc_status: row.kyc_status, outcome: 'referred', decline_reasons: reasons, polling_url: pollingUrlOf(row) };
  }
  return {
    decision_id: row.id,
    application_id: row.application_id,
    status: row.status,
    kyc_tier: row.kyc_tier,
    kyc_status: row.kyc_status,
    outcome: 'approved',
    approved_amount: formatMoney(row.approved_amount_cents!),
    currency: row.currency,
    apr: row.apr,
    term_months: row.term_months,
    payment_schedule: JSON.parse(row.schedule_json!) as unknown,
    tila_disclosure: JSON.parse(row.tila_json!) as unknown,
    decline_reasons: [],
    consumer_complete_url: null,
    polling_url: pollingUrlOf(row),
    expires_at: new Date(row.expires_at).toISOString(),
    // Auto loans (decisions.md section 10): the rates, the dealer's reserve and the loan-to-value.
    ...(row.product === 'auto_loan'
      ? { buy_rate: row.buy_rate, contract_rate: row.contract_rate, dealer_reserve: formatMoney(Number(row.dealer_reserve_cents)), ltv: row.ltv }
      : {}),
  };
}

/**
 * The same bytes as `JSON.stringify(presentDecision(row, url))`, built for polls and creates. An
 * approved decision's schedule and TILA block are stored as JSON text written by JSON.stringify,
 * so they are embedded as they are instead of being parsed and serialised again on every poll
 * (a parse-stringify round trip of JSON.stringify output is the identity). Other shapes are small
 * and go through presentDecision. The presenter tests check both give identical text.
 */
export function presentDecisionJson(row: PresentedRow, consumerCompleteUrl: string | null): string {
  if (row.status === 'needs_consumer_action' || row.outcome !== 'approved' || row.schedule_json === null || row.tila_json === null) {
    return JSON.stringify(presentDecision(row, consumerCompleteUrl));
  }
  // jsonString and isoTimestamp: JSON.stringify's and toISOString's bytes, at a fraction of their cost (lib/json-text.ts).
  const q = jsonString;
  let out =
    `{"decision_id":${q(row.id)},"application_id":${q(row.application_id)},"status":${q(row.status)}` +
    `,"kyc_tier":${q(row.kyc_tier)},"kyc_status":${q(row.kyc_status)},"outcome":"approved"` +
    `,"approved_amount":${q(formatMoney(row.approved_amount_cents!))},"currency":${q(row.currency)},"apr":${q(row.apr)},"term_months":${JSON.stringify(row.term_months)}` +
    `,"payment_schedule":${row.schedule_json},"tila_disclosure":${row.tila_json}` +
    `,"decline_reasons":[],"consumer_complete_url":null,"polling_url":${q(pollingUrlOf(row))},"expires_at":"${isoTimestamp(row.expires_at)}"`;
  if (row.product === 'auto_loan') {
    if (row.buy_rate === undefined || row.contract_rate === undefined || row.ltv === undefined) return JSON.stringify(presentDecision(row, consumerCompleteUrl));
    out += `,"buy_rate":${q(row.buy_rate)},"contract_rate":${q(row.contract_rate)},"dealer_reserve":${q(formatMoney(Number(row.dealer_reserve_cents)))},"ltv":${q(row.ltv)}`;
  }
  return out + '}';
}
