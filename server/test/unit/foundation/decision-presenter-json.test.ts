/**
 * The poll path's hand-built JSON (presentDecisionJson) must be byte for byte what
 * JSON.stringify(presentDecision(...)) gives, for every shape a decision can have. And the bytes of
 * final decisions are pinned to ANSWER_FORMAT: answers stored in a format are served as they are
 * (ADR 0051), so a change to them must come with a new format.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DecisionsTable } from '../../../src/db/schema.js';
import { ANSWER_FORMAT, presentDecision, presentDecisionJson, storedAnswerOf } from '../../../src/modules/decisions/decision.presenter.js';

const schedule = [
  { num: 1, due_date: '2026-12-01', amount: '37.50' },
  { num: 2, due_date: '2026-12-15', amount: '37.50', note: 'quote " and \\ and é and \u2028' },
];
const tila = { apr: '0.00', finance_charge: '0.00', amount_financed: '150.00', total_of_payments: '150.00', nested: { list: [1, 2.5, -0.125, null, true] } };

const base: DecisionsTable = {
  id: '0b0f5d6e-7f55-4b8e-9a9c-3d1b2a4c5e6f',
  application_id: '0b0f5d6e-7f55-4b8e-9a9c-3d1b2a4c5e6f',
  tenant_id: 't',
  environment: 'sandbox',
  consumer_id: 'c',
  product: 'bnpl',
  status: 'complete',
  kyc_tier: 'soft',
  kyc_status: 'skipped',
  outcome: 'approved',
  currency: 'USD',
  requested_amount_cents: 15_000,
  requested_plan: null,
  requested_term_months: null,
  merchant_name: 'M',
  merchant_category: 'electronics',
  approved_amount_cents: 15_000,
  plan: 'pay_in_4',
  term_months: 2,
  apr: '0.00',
  payment_frequency: 'biweekly',
  schedule_json: JSON.stringify(schedule),
  tila_json: JSON.stringify(tila),
  reasons_json: '[]',
  score: 700,
  risk_grade: 'A',
  engine_version: 'bnpl-policy-2026.11.1',
  verification_token_hash: null,
  verification_token_sealed: null,
  expires_at: Date.UTC(2026, 11, 1),
  created_at: Date.UTC(2026, 10, 24),
  updated_at: Date.UTC(2026, 10, 24),
  completed_at: Date.UTC(2026, 10, 24),
  version: 1,
  channel: null,
  dealer_id: null,
  vin: null,
  auto_loan_json: null,
  buy_rate: null,
  contract_rate: null,
  dealer_reserve_cents: null,
  ltv: null,
};

const shapes: Array<[string, DecisionsTable, string | null]> = [
  ['approved BNPL', base, null],
  // The hand-built text's own quoting and date (lib/json-text.ts) against JSON.stringify's and toISOString's.
  ['approved, strings that need escapes', { ...base, application_id: 'app "7" \\ é \u2028 \ud800 \u0001', currency: 'U\tD', apr: null }, null],
  ['approved, expiring before 1970', { ...base, expires_at: -1_234_567_890_123 }, null],
  ['approved, expiring in year 0042', { ...base, expires_at: Date.parse('0042-03-04T05:06:07.089Z') }, null],
  ['approved, expiring at the last instant of 9999', { ...base, expires_at: 253_402_300_799_999 }, null],
  ['approved, expiring in year 10000', { ...base, expires_at: 253_402_300_800_000 }, null],
  ['approved auto loan', { ...base, product: 'auto_loan', term_months: 60, apr: '6.99', buy_rate: '6.49', contract_rate: '6.99', dealer_reserve_cents: 41_250, ltv: '85.23' }, null],
  ['approved auto loan without the auto-loan columns', { ...base, product: 'auto_loan', buy_rate: undefined, contract_rate: undefined, ltv: undefined }, null],
  ['declined', { ...base, outcome: 'declined', approved_amount_cents: null, schedule_json: null, tila_json: null, reasons_json: JSON.stringify([{ code: 'AA-01', reason: 'Score "too" low' }]) }, null],
  ['referred', { ...base, outcome: 'referred', kyc_status: 'matched', schedule_json: null, tila_json: null, reasons_json: JSON.stringify([{ code: 'AA-25', reason: 'Credit data unavailable' }]) }, null],
  ['pending', { ...base, status: 'needs_consumer_action', outcome: null, kyc_tier: 'enhanced', kyc_status: 'pending', schedule_json: null, tila_json: null }, 'https://example.test/verify/abc'],
];

describe('presentDecisionJson', () => {
  it.each(shapes)('%s: the same bytes as JSON.stringify(presentDecision())', (_name, row, url) => {
    const json = presentDecisionJson(row, url);
    expect(json).toBe(JSON.stringify(presentDecision(row, url)));
    expect(() => JSON.parse(json) as unknown).not.toThrow();
  });
});

/** SHA-256 of the final shapes' bytes in each answer format. A new format adds its line; the old ones stay as a record. */
const FORMAT_DIGESTS: Record<number, string> = {
  1: '983a648de03a77c50b58ee07febe166ec455c6ee3702a3e2c2bbd5b049054ce8',
};

describe('storedAnswerOf (ADR 0051)', () => {
  it('stores the poll answer of a final decision in ANSWER_FORMAT, and nothing for a pending one', () => {
    for (const [name, row, url] of shapes) {
      const stored = storedAnswerOf(row);
      if (row.status === 'needs_consumer_action') expect(stored, name).toEqual({ answer_json: null, answer_format: null });
      else expect(stored, name).toEqual({ answer_json: presentDecisionJson(row, url), answer_format: ANSWER_FORMAT });
    }
  });

  it('the bytes of every final shape are those recorded for ANSWER_FORMAT: a change to them needs a new format (decision.presenter.ts)', () => {
    const finals = shapes.filter(([, row]) => row.status !== 'needs_consumer_action').map(([name, row]) => `${name}\n${presentDecisionJson(row, null)}`);
    const digest = createHash('sha256').update(finals.join('\n')).digest('hex');
    expect({ format: ANSWER_FORMAT, digest }, 'what a poll answers with for a final decision changed: bump ANSWER_FORMAT and record its digest here').toEqual({ format: ANSWER_FORMAT, digest: FORMAT_DIGESTS[ANSWER_FORMAT] });
  });
});
