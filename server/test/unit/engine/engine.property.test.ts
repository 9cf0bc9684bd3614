import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CreditDataResult, CreditFile } from '../../../src/modules/credit-data/credit-data.types.js';
import { ADVERSE_ACTION_REASONS, REFERRAL_ONLY_CODES } from '../../../src/modules/engine/adverse-action-reasons.js';
import { MAX_REASONS, decideBnpl, replay, type BnplEngineInput } from '../../../src/modules/engine/engine.js';
import { defaultBnplDocuments } from '../../../src/modules/engine/engine-documents.js';
import { BNPL_PLANS } from '../../../src/modules/engine/features.js';
import { MAX_RATE_BPS } from '../../../src/modules/engine/policy.js';

const docs = defaultBnplDocuments();
const registry = new Map<string, string>(ADVERSE_ACTION_REASONS.map((r) => [r.code, r.reason]));

const count = (max: number) => fc.integer({ min: 0, max });

const creditFileArb: fc.Arbitrary<CreditFile> = fc.record({
  fileId: fc.string({ maxLength: 12 }),
  source: fc.constant('property-test'),
  hasFile: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  tradelines: count(60),
  oldestTradelineMonths: count(600),
  revolvingUtilizationPct: count(250),
  delinquencies30dLast24m: count(12),
  delinquencies90dLast24m: count(12),
  collectionsOrJudgments: count(10),
  bankruptcy: fc.boolean(),
  foreclosureOrRepossession: fc.boolean(),
  inquiriesLast6m: count(20),
  monthlyObligationsCents: count(2_000_000),
  estimatedMonthlyIncomeCents: fc.oneof(fc.constant(0), count(5_000_000)),
});

const creditDataArb: fc.Arbitrary<CreditDataResult> = fc.oneof(
  { weight: 9, arbitrary: creditFileArb.map((file): CreditDataResult => ({ status: 'ok', file, latencyMs: 5 })) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('timeout', 'error', 'circuit_open', 'magic_value')
      .map((reason): CreditDataResult => ({ status: 'unavailable', reason: reason as 'timeout', detail: 'x', latencyMs: 5 })),
  },
);

const inputArb: fc.Arbitrary<BnplEngineInput> = fc.record({
  requestedAmountCents: fc.oneof(fc.integer({ min: 2_500, max: 3_000_000 }), fc.integer({ min: 1, max: 10_000_000 })),
  planPreference: fc.option(fc.constantFrom(...BNPL_PLANS), { nil: null }),
  history: fc.record({ returning: fc.boolean(), priorApprovals: count(12), priorDeclines: count(12) }),
  creditData: creditDataArb,
  asOf: fc.date({ min: new Date('2026-01-01T00:00:00Z'), max: new Date('2030-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()),
});

describe('engine invariants (fast-check)', () => {
  it('reasons: at most four, registered, unique, knock-outs first; approvals carry none', async () => {
    await fc.assert(
      fc.asyncProperty(inputArb, async (input) => {
        const d = await decideBnpl(input, docs);
        expect(d.reasons.length).toBeLessThanOrEqual(MAX_REASONS);
        expect(d.counterofferReasons.length).toBeLessThanOrEqual(MAX_REASONS);
        for (const r of [...d.reasons, ...d.counterofferReasons]) expect(registry.get(r.code)).toBe(r.reason);
        expect(new Set(d.reasons.map((r) => r.code)).size).toBe(d.reasons.length);
        if (d.outcome === 'approved') expect(d.reasons).toEqual([]);
        else expect(d.reasons.length).toBeGreaterThan(0);
        if (d.outcome === 'declined') for (const r of d.reasons) expect(REFERRAL_ONLY_CODES.has(r.code)).toBe(false);
        const file = input.creditData.status === 'ok' ? input.creditData.file : null;
        if (file && !file.hasFile) expect(d.reasons[0]?.code).toBe('AA-14');
        if (file?.hasFile && file.bankruptcy) expect(d.reasons[0]?.code).toBe('AA-21');
      }),
      { numRuns: 400 },
    );
  });

  it('amounts and rates: never above the request, never below the plan minimum, rates within bounds', async () => {
    await fc.assert(
      fc.asyncProperty(inputArb, async (input) => {
        const d = await decideBnpl(input, docs);
        expect(d.recommendedAmountCents).toBeLessThanOrEqual(input.requestedAmountCents);
        if (d.outcome === 'approved') {
          const approved = d.approvedAmountCents ?? -1;
          expect(approved).toBeLessThanOrEqual(input.requestedAmountCents);
          expect(approved).toBeGreaterThanOrEqual(docs.policy.constants.planMinimumCents[d.plan]);
          expect(d.counteroffer).toBe(approved < input.requestedAmountCents);
          expect(d.rateBps).not.toBeNull();
          if (d.plan === 'pay_in_4') expect(d.rateBps).toBe(0);
        } else {
          expect(d.approvedAmountCents).toBeNull();
          expect(d.rateBps).toBeNull();
        }
        for (const rate of Object.values(d.ratesBps ?? {})) if (rate !== null) expect(rate).toBeLessThanOrEqual(MAX_RATE_BPS);
        if (d.score !== null) {
          expect(Number.isInteger(d.score)).toBe(true);
          expect(d.score).toBeGreaterThanOrEqual(300);
          expect(d.score).toBeLessThanOrEqual(850);
        }
        expect(d.confidence).toBeGreaterThanOrEqual(0);
        expect(d.confidence).toBeLessThanOrEqual(1);
        expect(d.creditDataUnavailable).toBe(input.creditData.status === 'unavailable');
      }),
      { numRuns: 400 },
    );
  });

  it('every stored decision replays to the same answer', async () => {
    await fc.assert(
      fc.asyncProperty(inputArb, async (input) => {
        const stored = JSON.parse(JSON.stringify(await decideBnpl(input, docs)));
        const { matches, differences } = await replay(stored);
        expect(differences).toEqual([]);
        return matches;
      }),
      { numRuns: 150 },
    );
  });
});
