/**
 * Auto-loan policy validation and its structured view: the bundled policy passes; an edited one
 * round-trips through the tables; a broken one lists every problem with its rule; a graph whose
 * output breaks the contract is caught by the sample evaluations.
 */
import { describe, expect, it } from 'vitest';
import {
  bundledAutoLoanPolicyDocument,
  compileAutoLoanPolicy,
  DEFAULT_AUTO_LOAN_POLICY_VERSION,
  readAutoLoanPolicyTables,
  validateAutoLoanPolicyDocument,
  writeAutoLoanPolicyTables,
  type AutoLoanPolicyTables,
} from '../../../src/modules/engine/index.js';

const bundled = () => structuredClone(bundledAutoLoanPolicyDocument(DEFAULT_AUTO_LOAN_POLICY_VERSION)) as { nodes: Array<{ id: string; content: Record<string, unknown> }> };
const tables = () => readAutoLoanPolicyTables(bundled()).tables!;
const edited = (edit: (t: AutoLoanPolicyTables) => void) => {
  const t = tables();
  edit(t);
  return writeAutoLoanPolicyTables(bundled(), t);
};

describe('auto-loan policy structured view', () => {
  it('reads the bundled policy numbers', () => {
    const t = tables();
    expect(t.grades.map((g) => [g.grade, g.minScore, g.band, g.limitCents, g.maxLtvPct])).toEqual([
      ['A', 720, 'approve', 10_000_000, 130],
      ['B', 660, 'approve', 7_500_000, 120],
      ['C', 620, 'approve', 4_000_000, 110],
      ['D', 580, 'refer', 2_500_000, 100],
      ['E', null, 'decline', 0, null],
    ]);
    expect(t.buyRates.find((r) => r.grade === 'A')!.ratesBps).toEqual({ up_to_48: 549, months_60: 599, months_72: 649, months_84: 699 });
    expect(t.buyRates.map((r) => r.grade)).toEqual(['A', 'B', 'C', 'D']);
    expect(t).toMatchObject({ usedVehicleAdderBps: 100, markupCapBps: { upTo60Months: 125, above60Months: 100 }, dealerReserveSharePct: 75, kycTiers: { enhancedFromCents: 1_500_000, hardFromCents: 4_000_000 }, amountFinanced: { minCents: 500_000, maxCents: 10_000_000 } });
  });

  it('writes edits back into the graph, which then decides with them', async () => {
    const doc = edited((t) => {
      t.buyRates[0]!.ratesBps.months_60 = 475;
      t.buyRates[3]!.ratesBps.months_84 = null; // grade D refers: it need not be priced on every term
      t.usedVehicleAdderBps = 150;
      t.dealerReserveSharePct = 60;
    });
    const again = readAutoLoanPolicyTables(doc).tables!;
    expect(again.buyRates[0]!.ratesBps.months_60).toBe(475);
    expect(again.buyRates[3]!.ratesBps.months_84).toBeNull();
    expect(again.dealerReserveSharePct).toBe(60);
    expect(await validateAutoLoanPolicyDocument(doc)).toEqual([]);
    const policy = compileAutoLoanPolicy(doc);
    const features = { incomeVerifiable: true, ltvPct: 90, mileage: 30_000, vehicleAgeYears: 3 };
    const out = await policy.evaluate({ asOf: '2026-01-15T00:00:00Z', score: 760, confidence: 0.9, request: { amountFinancedCents: 2_000_000, termMonths: 60, condition: 'used' }, credit: { hasFile: true, bankruptcy: false }, features: features as never });
    expect(out).toMatchObject({ outcome: 'approve', riskGrade: 'A', buyRateBps: 625 });
  });

  it('has no structured view for a reshaped graph, and says why', () => {
    const doc = bundled();
    doc.nodes.find((n) => n.id === 'pricing')!.content['inputs'] = [{ id: 'x', field: 'score' }];
    const read = readAutoLoanPolicyTables(doc);
    expect(read.tables).toBeNull();
    expect(read.reason).toMatch(/pricing must have the input columns riskGrade, request.termMonths/);
  });
});

describe('validateAutoLoanPolicyDocument', () => {
  it('accepts the bundled policy', async () => {
    expect(await validateAutoLoanPolicyDocument(bundled())).toEqual([]);
  });

  it('lists every problem of a bad version', async () => {
    const doc = edited((t) => {
      t.grades[1]!.minScore = 730; // not below A's 720
      t.grades[2]!.limitCents = 9_000_000; // above B's
      t.grades[3]!.maxLtvPct = 140; // above C's
      t.buyRates[2]!.ratesBps.months_72 = 3650; // above 35.99%
      t.buyRates[1]!.ratesBps.months_84 = null; // B approves but is not priced at 84 months
      t.kycTiers = { enhancedFromCents: 5_000_000, hardFromCents: 4_000_000 };
      t.amountFinanced = { minCents: 9_000_000, maxCents: 8_000_000 };
      t.markupCapBps = { upTo60Months: 100, above60Months: 150 };
    });
    const problems = await validateAutoLoanPolicyDocument(doc);
    const rules = problems.map((p) => p.rule);
    for (const rule of ['cutoffs_ordered', 'limits_ordered', 'ltv_ordered', 'rate_range', 'rate_missing', 'tier_thresholds_ordered', 'amount_range_ordered', 'markup_caps_ordered']) expect(rules).toContain(rule);
    expect(problems.find((p) => p.rule === 'rate_range')!.message).toMatch(/grade C months_72 buy rate 36.50% is above 35.99%/);
    expect(problems.find((p) => p.rule === 'markup_caps_ordered')!.message).toMatch(/above 60 months \(1.50%\) is above the cap up to 60 months \(1.00%\)/);
  });

  it('lists every constant out of its schema (reserve share above 100, negative adder)', async () => {
    const doc = bundled();
    const expressions = doc.nodes.find((n) => n.id === 'policyConstants')!.content['expressions'] as Array<{ key: string; value: string }>;
    expressions.find((e) => e.key === 'policy.dealerReserveSharePct')!.value = '120';
    expressions.find((e) => e.key === 'policy.usedVehicleAdderBps')!.value = '-5';
    const problems = await validateAutoLoanPolicyDocument(doc);
    expect(problems.map((p) => p.message).join('\n')).toMatch(/dealerReserveSharePct/);
    expect(problems.map((p) => p.message).join('\n')).toMatch(/usedVehicleAdderBps/);
  });

  it('catches an output that breaks the contract in the sample evaluations', async () => {
    const doc = bundled();
    const offer = doc.nodes.find((n) => n.id === 'offer')!.content['expressions'] as Array<{ key: string; value: string }>;
    // Used vehicles get a 40-point adder in the expression, past the 35.99% ceiling.
    offer.find((e) => e.key === 'offer.buyRateBps')!.value = 'baseRateBps == null ? null : baseRateBps + (request.condition == "used" ? 4000 : 0)';
    const problems = await validateAutoLoanPolicyDocument(doc);
    expect(problems.some((p) => p.path === 'output.buyRateBps' && p.rule === 'rate_range' && /used vehicle/.test(p.message))).toBe(true);
  });

  it('catches a grade table that gives a lower score a higher LTV through the graph', async () => {
    const doc = bundled();
    const rules = doc.nodes.find((n) => n.id === 'riskGrade')!.content['rules'] as Array<Record<string, string>>;
    rules[3]!['rg-in-score'] = '>= 200'; // breaks cutoff_range statically
    const problems = await validateAutoLoanPolicyDocument(doc);
    expect(problems.map((p) => p.rule)).toContain('cutoff_range');
  });
});
