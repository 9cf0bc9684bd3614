/**
 * `decision.offer`: built from fixture decisions (no service), it is the approval's fields with none
 * optional, `null` on every other shape, an Error naming the field when an approval lacks one, and
 * never a wire field (`JSON.stringify` and `toJSON()` give back exactly what was received). The
 * narrowing itself is checked by the compiler: `npm run typecheck` covers this file.
 */
import { describe, expect, it } from 'vitest';
import { AutoLoanDecision, Decision, type AutoLoanDecisionData, type AutoLoanOffer, type DecisionData, type Offer } from '../src/index.js';
import { declinedDecision, pendingDecision } from './support/fake-server.js';

const ID = '7f3e2a10-5b6c-4d8e-9f01-23456789abcd';

/** A pay-in-4 approval as the service sends it. */
const approved: DecisionData = {
  decision_id: ID,
  application_id: ID,
  status: 'complete',
  kyc_tier: 'soft',
  kyc_status: 'skipped',
  outcome: 'approved',
  approved_amount: '149.97',
  currency: 'USD',
  apr: '0.00',
  term_months: 2,
  payment_schedule: [
    { num: 1, due_date: '2026-03-15', amount: '37.50' },
    { num: 2, due_date: '2026-03-29', amount: '37.49' },
    { num: 3, due_date: '2026-04-12', amount: '37.49' },
    { num: 4, due_date: '2026-04-26', amount: '37.49' },
  ],
  tila_disclosure: { amount_financed: '149.97', finance_charge: '0.00', total_of_payments: '149.97', apr: '0.00', payment_frequency: 'biweekly' },
  decline_reasons: [],
  consumer_complete_url: null,
  polling_url: `/v1/decisions/bnpl/${ID}`,
  expires_at: '2026-04-14T15:00:00.000Z',
};

/** A direct auto-loan approval (docs/auto-loan.md, example 1). */
const autoApproved: AutoLoanDecisionData = {
  ...approved,
  approved_amount: '13000.00',
  apr: '6.99',
  term_months: 60,
  payment_schedule: [{ num: 1, due_date: '2026-04-15', amount: '257.35' }],
  tila_disclosure: { amount_financed: '13000.00', finance_charge: '2441.29', total_of_payments: '15441.29', apr: '6.99', payment_frequency: 'monthly' },
  polling_url: `/v1/decisions/auto-loan/${ID}`,
  buy_rate: '6.99',
  contract_rate: '6.99',
  dealer_reserve: '0.00',
  ltv: '86.67',
};

const referred: DecisionData = { ...declinedDecision(ID), outcome: 'referred', kyc_tier: 'enhanced', kyc_status: 'pending', polling_url: `/v1/decisions/bnpl/${ID}` } as DecisionData;
const OFFER_KEYS = ['approved_amount', 'currency', 'apr', 'term_months', 'payment_schedule', 'tila_disclosure', 'expires_at'] as const;
const AUTO_LOAN_KEYS = ['buy_rate', 'contract_rate', 'dealer_reserve', 'ltv'] as const;

function without(data: object, key: string): DecisionData {
  const copy: Record<string, unknown> = { ...data };
  delete copy[key];
  return copy as unknown as DecisionData;
}

// Compile-time: every field of an offer is required (a `?` added to Offer or AutoLoanOffer fails here).
type AllRequired<T> = T extends Required<T> ? true : false;
const offerIsComplete: AllRequired<Offer> & AllRequired<AutoLoanOffer> = true;

describe('Decision.offer', () => {
  it('narrows: inside `if (d.offer)` every offer field is its plain type, no `!`', () => {
    const d = new Decision(approved);
    // What the getters cannot do: isApproved says nothing to the compiler about the fields.
    // @ts-expect-error apr is still `string | undefined` after `if (d.isApproved)`
    const unnarrowed: string = d.isApproved ? d.apr : '';
    expect(unnarrowed).toBe('0.00');
    if (!d.offer) throw new Error('expected an offer');
    const apr: string = d.offer.apr;
    const amount: string = d.offer.approved_amount;
    const currency: string = d.offer.currency;
    const months: number = d.offer.term_months;
    const payments: number = d.offer.payment_schedule.length;
    const financeCharge: string = d.offer.tila_disclosure.finance_charge;
    const expires: string = d.offer.expires_at;
    expect([apr, amount, currency, months, payments, financeCharge, expires]).toEqual(['0.00', '149.97', 'USD', 2, 4, '0.00', '2026-04-14T15:00:00.000Z']);
    expect(offerIsComplete).toBe(true);
  });

  it("is exactly the approval's offer fields, nothing else", () => {
    const offer = new Decision(approved).offer;
    expect(offer).toEqual(Object.fromEntries(OFFER_KEYS.map((k) => [k, approved[k]])));
    expect(Object.keys(offer!).sort()).toEqual([...OFFER_KEYS].sort());
  });

  it('is null on a decline, a referral and a pending decision', () => {
    const declined = new Decision(declinedDecision(ID) as DecisionData);
    const ref = new Decision(referred);
    const pending = new Decision(pendingDecision(ID) as DecisionData);
    expect([declined.isDeclined, ref.isReferred, pending.isPending]).toEqual([true, true, true]);
    expect([declined.offer, ref.offer, pending.offer]).toEqual([null, null, null]);
    // A pending decision carries expires_at, but that is the pending state's, not an offer.
    expect(pending.expires_at).toBeDefined();
  });

  it('throws naming the field when an approval lacks one (a service defect), never a partial offer', () => {
    for (const key of OFFER_KEYS) {
      const d = new Decision(without(approved, key), { status: 200, headers: {}, requestId: 'req_abc123', idempotentReplayed: false, idempotencyKey: undefined, retries: 0 });
      expect(d.isApproved).toBe(true);
      expect(() => d.offer).toThrow(new Error(`Approved decision ${ID} has no ${key}: the service sent an incomplete offer (request req_abc123)`));
    }
    expect(() => new Decision({ ...approved, apr: null } as unknown as DecisionData).offer).toThrow(/has no apr/);
  });

  it('is not a wire field: JSON.stringify, toJSON() and the own keys are exactly what was received', () => {
    const d = new Decision(approved);
    expect(d.offer?.apr).toBe('0.00');
    expect(JSON.stringify(d)).toBe(JSON.stringify(approved));
    expect(d.toJSON()).toEqual(approved);
    expect(Object.keys(d)).toEqual(Object.keys(approved));
    expect(Object.keys(d)).not.toContain('offer');
    expect(Object.getOwnPropertyDescriptor(d, 'offer')).toBeUndefined();
  });

  it('a wire field named `offer` does not shadow the getter', () => {
    const d = new Decision({ ...approved, offer: 'from the wire' } as DecisionData);
    expect(d.offer?.apr).toBe('0.00');
  });
});

describe('AutoLoanDecision.offer', () => {
  it('narrows to an AutoLoanOffer: the rates, the reserve and the LTV are plain strings', () => {
    const d = new AutoLoanDecision(autoApproved);
    if (!d.offer) throw new Error('expected an offer');
    const rates: string[] = [d.offer.buy_rate, d.offer.contract_rate, d.offer.dealer_reserve, d.offer.ltv];
    const apr: string = d.offer.apr;
    expect([...rates, apr]).toEqual(['6.99', '6.99', '0.00', '86.67', '6.99']);
    expect(d.offer).toEqual(Object.fromEntries([...OFFER_KEYS, ...AUTO_LOAN_KEYS].map((k) => [k, autoApproved[k]])));
    const bnpl = new Decision(approved);
    // @ts-expect-error a BNPL offer has no buy rate
    expect(bnpl.offer?.buy_rate).toBeUndefined();
  });

  it('is null unless approved, and throws naming a missing rate field', () => {
    expect(new AutoLoanDecision(declinedDecision(ID) as DecisionData).offer).toBeNull();
    expect(new AutoLoanDecision(pendingDecision(ID) as DecisionData).offer).toBeNull();
    expect(new AutoLoanDecision(referred).offer).toBeNull();
    for (const key of [...OFFER_KEYS, ...AUTO_LOAN_KEYS]) {
      expect(() => new AutoLoanDecision(without(autoApproved, key)).offer).toThrow(`Approved decision ${ID} has no ${key}: the service sent an incomplete offer`);
    }
  });

  it('is not a wire field', () => {
    const d = new AutoLoanDecision(autoApproved);
    expect(d.offer?.ltv).toBe('86.67');
    expect(JSON.stringify(d)).toBe(JSON.stringify(autoApproved));
    expect(d.toJSON()).toEqual(autoApproved);
    expect(Object.keys(d)).not.toContain('offer');
  });
});
