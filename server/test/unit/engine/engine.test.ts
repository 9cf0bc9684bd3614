import { describe, expect, it } from 'vitest';
import {
  ENGINE_CODE_VERSION,
  EngineInputError,
  decideBnpl,
  engineVersionOf,
  kycTierFor,
  replay,
  type BnplEngineDecision,
} from '../../../src/modules/engine/engine.js';
import { compilePolicy } from '../../../src/modules/engine/policy.js';
import { defaultBnplDocuments } from '../../../src/modules/engine/engine-documents.js';
import policyDocument from '../../../src/modules/engine/policies/bnpl-policy-v1.json' with { type: 'json' };
import { AS_OF, FAIR_FILE, creditFile, engineInput, ok } from './fixtures.js';

const docs = defaultBnplDocuments();

describe('decideBnpl', () => {
  it('approves a prime file in full, with no reasons, naming the exact versions', async () => {
    const d = await decideBnpl(engineInput({ requestedAmountCents: 80_000 }), docs);
    expect(d).toMatchObject({
      outcome: 'approved',
      riskGrade: 'A',
      reasons: [],
      counterofferReasons: [],
      plan: 'pay_in_4',
      approvedAmountCents: 80_000,
      counteroffer: false,
      rateBps: 0,
      recommendedAmountCents: 80_000,
      recommendedRateBps: 0,
      recommendedRatePct: 0,
      creditDataUnavailable: false,
      kycTier: 'enhanced',
      engineVersion: 'engine-1.0.0+bnpl-sc-2026.11.1+bnpl-policy-2026.11.1',
      versions: { engine: ENGINE_CODE_VERSION, scorecard: 'bnpl-sc-2026.11.1', policy: 'bnpl-policy-2026.11.1' },
    });
    expect(d.score).toBeGreaterThanOrEqual(720);
    expect(d.confidence).toBe(1);
    expect(engineVersionOf(docs)).toBe(d.engineVersion);
  });

  it('keeps partial scores with points below maximum, and the features', async () => {
    const d = await decideBnpl(engineInput({ creditData: ok(FAIR_FILE) }), docs);
    const utilization = d.partialScores.find((p) => p.characteristic === 'revolvingUtilization');
    expect(utilization).toMatchObject({ value: 65, attribute: '50% to under 75%', points: 35, maxPoints: 90, pointsBelowBaseline: 55, reasonCode: 'AA-09' });
    expect(d.partialScores).toHaveLength(11);
    expect(d.score).toBe(300 + d.partialScores.reduce((s, p) => s + p.points, 0));
    expect(d.features).toMatchObject({ debtToIncomePct: 33.33, indicativeMonthlyPaymentCents: 25_000, paymentToIncomePct: 5.56, relationshipWithUs: 'new' });
  });

  it('prices the preferred plan, else the default plan for the amount', async () => {
    const preferred = await decideBnpl(engineInput({ requestedAmountCents: 200_000, planPreference: 'monthly' }), docs);
    expect(preferred).toMatchObject({ plan: 'monthly', rateBps: 999, recommendedRatePct: 9.99 });
    const picked = await decideBnpl(engineInput({ requestedAmountCents: 200_000 }), docs);
    expect(picked).toMatchObject({ plan: 'pay_in_6', rateBps: 0 });
    expect(picked.ratesBps).toEqual({ pay_in_4: 0, pay_in_6: 0, monthly: 999 });
  });

  it('counteroffers the grade limit and keeps the reasons for the notice', async () => {
    const d = await decideBnpl(engineInput({ creditData: ok(FAIR_FILE), requestedAmountCents: 400_000, planPreference: 'monthly' }), docs);
    expect(d.riskGrade).toBe('C');
    expect(d).toMatchObject({ outcome: 'approved', approvedAmountCents: 250_000, counteroffer: true, rateBps: 2799, reasons: [] });
    expect(d.recommendedAmountCents).toBe(250_000);
    expect(d.counterofferReasons.map((r) => r.code)).toEqual(['AA-09', 'AA-17', 'AA-22', 'AA-15']);
  });

  it('refers the referral band with the reasons that sent it to review', async () => {
    const file = creditFile({
      revolvingUtilizationPct: 80,
      delinquencies30dLast24m: 2,
      collectionsOrJudgments: 1,
      tradelines: 4,
      oldestTradelineMonths: 30,
      inquiriesLast6m: 3,
      monthlyObligationsCents: 120_000,
      estimatedMonthlyIncomeCents: 400_000,
    });
    const d = await decideBnpl(engineInput({ creditData: ok(file) }), docs);
    expect(d.riskGrade).toBe('D');
    expect(d.outcome).toBe('referred');
    expect(d.approvedAmountCents).toBeNull();
    expect(d.rateBps).toBeNull();
    expect(d.reasons.map((r) => r.code)).toEqual(['AA-09', 'AA-17', 'AA-18', 'AA-22']);
    expect(d.reasons[0]).toEqual({ code: 'AA-09', reason: 'Excessive obligations in relation to income' });
    expect(d.recommendedAmountCents).toBe(50_000);
    expect(d.recommendedRateBps).toBe(0);
  });

  it('declines a bankruptcy with AA-21 first, then the scorecard reasons', async () => {
    const d = await decideBnpl(engineInput({ creditData: ok(creditFile({ bankruptcy: true, delinquencies90dLast24m: 1 })) }), docs);
    expect(d.outcome).toBe('declined');
    expect(d.reasons.map((r) => r.code)).toEqual(['AA-21', 'AA-17']);
    expect(d).toMatchObject({ approvedAmountCents: null, rateBps: null, recommendedAmountCents: 0, recommendedRateBps: 0 });
  });

  it('declines a missing credit file with AA-14, without restating it', async () => {
    const d = await decideBnpl(engineInput({ creditData: ok(creditFile({ hasFile: false })) }), docs);
    expect(d.outcome).toBe('declined');
    expect(d.reasons.map((r) => r.code)).toEqual(['AA-14', 'AA-10']);
    expect(d.features?.hasCreditFile).toBe(false);
    expect(d.confidence).toBeLessThan(0.2);
  });

  it('declines below the referral band with at most four reasons', async () => {
    const file = creditFile({
      revolvingUtilizationPct: 120,
      delinquencies30dLast24m: 4,
      delinquencies90dLast24m: 2,
      collectionsOrJudgments: 3,
      foreclosureOrRepossession: true,
      inquiriesLast6m: 7,
      tradelines: 2,
      oldestTradelineMonths: 8,
      monthlyObligationsCents: 300_000,
      estimatedMonthlyIncomeCents: 400_000,
    });
    const d = await decideBnpl(engineInput({ creditData: ok(file), requestedAmountCents: 200_000 }), docs);
    expect(d.riskGrade).toBe('E');
    expect(d.score).toBe(350);
    // Gaps: AA-09 90, AA-17 75, AA-18 60, then AA-15 and AA-22 tie at 35 (document order decides).
    expect(d.reasons.map((r) => r.code)).toEqual(['AA-09', 'AA-17', 'AA-18', 'AA-15']);
  });

  it('refers with AA-25 and flags score.errored when credit data is unavailable', async () => {
    const d = await decideBnpl(
      engineInput({ creditData: { status: 'unavailable', reason: 'timeout', detail: 'gateway timed out after 1500 ms', latencyMs: 1500 } }),
      docs,
    );
    expect(d).toMatchObject({
      outcome: 'referred',
      creditDataUnavailable: true,
      reasons: [{ code: 'AA-25', reason: 'Credit information temporarily unavailable' }],
      score: null,
      riskGrade: null,
      confidence: 0,
      approvedAmountCents: null,
      features: null,
      partialScores: [],
      policyResult: null,
      engineVersion: 'engine-1.0.0+bnpl-sc-2026.11.1+bnpl-policy-2026.11.1',
    });
  });

  it('scores history with this lender: approvals earn a bonus, being new or declined before costs nothing', async () => {
    const score = async (priorApprovals: number, priorDeclines: number) =>
      (await decideBnpl(engineInput({ creditData: ok(FAIR_FILE), history: { returning: true, priorApprovals, priorDeclines } }), docs)).score ?? 0;
    const [declined, fresh, returning, established] = await Promise.all([score(0, 2), score(0, 0), score(1, 0), score(3, 0)]);
    expect(declined).toBe(fresh);
    expect(fresh).toBeLessThan(returning);
    expect(returning).toBeLessThan(established);
  });

  it('records timings from the clock it is given', async () => {
    let t = 0;
    const d = await decideBnpl(engineInput(), docs, { now: () => (t += 1.5) });
    expect(d.timings).toEqual({ featuresMs: 1.5, scorecardMs: 1.5, policyMs: 1.5, totalMs: 6 });
  });

  it('refuses malformed input', async () => {
    await expect(decideBnpl(engineInput({ requestedAmountCents: 100.5 }), docs)).rejects.toThrow(EngineInputError);
    await expect(decideBnpl(engineInput({ requestedAmountCents: 0 }), docs)).rejects.toThrow(EngineInputError);
    await expect(decideBnpl(engineInput({ asOf: 'yesterday' }), docs)).rejects.toThrow(/asOf/);
    await expect(decideBnpl(engineInput({ history: { returning: false, priorApprovals: -1, priorDeclines: 0 } }), docs)).rejects.toThrow(/history/);
    await expect(decideBnpl(engineInput({ planPreference: 'pay_in_12' as never }), docs)).rejects.toThrow(/plan/);
  });

  it('exports kycTierFor with the policy thresholds', () => {
    expect(kycTierFor(49_999, docs.policy)).toBe('soft');
    expect(kycTierFor(500_000, docs.policy)).toBe('hard');
  });
});

describe('determinism and replay', () => {
  const withoutTimings = ({ timings: _t, ...rest }: BnplEngineDecision) => rest;

  it('gives the same decision for the same input', async () => {
    const input = engineInput({ creditData: ok(FAIR_FILE), requestedAmountCents: 400_000, planPreference: 'monthly' });
    const [a, b] = await Promise.all([decideBnpl(input, docs), decideBnpl(structuredClone(input), docs)]);
    expect(withoutTimings(a)).toEqual(withoutTimings(b));
  });

  it('replays a stored audit record (through JSON) to the same answer', async () => {
    for (const input of [
      engineInput(),
      engineInput({ creditData: ok(FAIR_FILE), requestedAmountCents: 400_000, planPreference: 'monthly' }),
      engineInput({ creditData: ok(creditFile({ bankruptcy: true })) }),
      engineInput({ creditData: { status: 'unavailable', reason: 'error', detail: 'HTTP 502', latencyMs: 40 } }),
    ]) {
      const stored = JSON.parse(JSON.stringify(await decideBnpl(input, docs))) as BnplEngineDecision;
      const result = await replay(stored);
      expect(result.differences).toEqual([]);
      expect(result.matches).toBe(true);
      expect(result.replayed.outcome).toBe(stored.outcome);
    }
  });

  it('reports where a tampered record differs', async () => {
    const stored = JSON.parse(JSON.stringify(await decideBnpl(engineInput(), docs))) as BnplEngineDecision;
    stored.score = 301;
    stored.reasons = [{ code: 'AA-22', reason: 'Number of recent inquiries on credit bureau report' }];
    const result = await replay(stored);
    expect(result.matches).toBe(false);
    expect(result.differences).toEqual(expect.arrayContaining(['$.score', '$.reasons.0']));
  });

  it('runs a what-if replay under other documents and shows the change', async () => {
    const stored = await decideBnpl(engineInput({ creditData: ok(FAIR_FILE), requestedAmountCents: 400_000, planPreference: 'monthly' }), docs);
    const doc = structuredClone(policyDocument) as unknown as { nodes: Array<{ id: string; content: Record<string, unknown> }> };
    const constants = doc.nodes.find((n) => n.id === 'policyConstants')?.content['expressions'] as Array<{ key: string; value: string }>;
    constants.find((e) => e.key === 'policy.version')!.value = '"bnpl-policy-whatif"';
    const grade = doc.nodes.find((n) => n.id === 'riskGrade')?.content['rules'] as Array<Record<string, string>>;
    grade.find((r) => r['_id'] === 'rg-c')!['rg-out-limit'] = '500000';
    const whatIf = await replay(stored, { scorecard: docs.scorecard, policy: compilePolicy(doc) });
    expect(whatIf.matches).toBe(false);
    expect(whatIf.replayed.approvedAmountCents).toBe(400_000);
    expect(whatIf.differences).toEqual(expect.arrayContaining(['$.engineVersion', '$.approvedAmountCents', '$.counteroffer']));
  });

  it('refuses to replay versions it does not have', async () => {
    const stored = await decideBnpl(engineInput(), docs);
    await expect(replay({ ...stored, versions: { ...stored.versions, policy: 'bnpl-policy-1999.1.1' } })).rejects.toThrow(/no bundled policy/);
  });

  it('keeps its own copy of the input', async () => {
    const input = engineInput();
    const d = await decideBnpl(input, docs);
    input.requestedAmountCents = 1;
    if (input.creditData.status === 'ok') input.creditData.file.bankruptcy = true;
    expect(d.input.requestedAmountCents).toBe(50_000);
    expect(d.input.creditData).toEqual(ok(creditFile()));
    expect(d.asOf).toBe(AS_OF);
  });
});
