/** Pricing by grade read from the policy graph's own pricing table (override pricing, ADR 0012). */
import { describe, expect, it } from 'vitest';
import {
  autoLoanBuyRateBps, autoLoanCollateralRules, compileAutoLoanPolicy, compilePolicy, defaultAutoLoanDocuments, defaultBnplDocuments, lowestPricedAutoLoanGrade, lowestPricedGrade, PolicyDocumentError, ratesForGrade,
} from '../../../src/modules/engine/index.js';
import autoLoanPolicyV1 from '../../../src/modules/engine/policies/auto-loan-policy-v1.json' with { type: 'json' };
import bnplPolicyV1 from '../../../src/modules/engine/policies/bnpl-policy-v1.json' with { type: 'json' };

describe('grade pricing', () => {
  const policy = defaultBnplDocuments().policy;

  it('gives each grade the rates of the default policy, and no rates for E', async () => {
    expect(await ratesForGrade(policy, 'A')).toEqual({ pay_in_4: 0, pay_in_6: 0, monthly: 999 });
    expect(await ratesForGrade(policy, 'C')).toEqual({ pay_in_4: 0, pay_in_6: 999, monthly: 2799 });
    expect(await ratesForGrade(policy, 'D')).toEqual({ pay_in_4: 0, pay_in_6: 1499, monthly: 3299 });
    expect(await ratesForGrade(policy, 'E')).toEqual({ pay_in_4: null, pay_in_6: null, monthly: null });
  });

  it('the lowest priced grade of a plan is the worst grade the policy still lends it at', async () => {
    expect(await lowestPricedGrade(policy, 'monthly')).toEqual({ grade: 'D', rates: { pay_in_4: 0, pay_in_6: 1499, monthly: 3299 } });
  });

  it('follows an edited pricing table (nothing is copied out of the document)', async () => {
    const doc = structuredClone(bnplPolicyV1) as { nodes: Array<{ id: string; content: { rules: Array<Record<string, string>> } }> };
    const pricing = doc.nodes.find((n) => n.id === 'pricing')!;
    const d = pricing.content.rules.find((r) => r['pr-in-grade'] === '"D"')!;
    d['pr-out-monthly'] = '3599';
    d['pr-out-p6'] = 'null';
    const edited = compilePolicy(doc);
    expect(await ratesForGrade(edited, 'D')).toEqual({ pay_in_4: 0, pay_in_6: null, monthly: 3599 });
    // D no longer lends pay_in_6: the lowest grade that does is C.
    expect((await lowestPricedGrade(edited, 'pay_in_6'))?.grade).toBe('C');
  });

  it('refuses a policy without a pricing table', async () => {
    const doc = structuredClone(bnplPolicyV1) as { nodes: Array<{ id: string; content: { outputs?: Array<{ field: string }> } }> };
    for (const o of doc.nodes.find((n) => n.id === 'pricing')!.content.outputs!) o.field = o.field.replace('ratesBps.', 'prices.');
    // The graph itself no longer produces ratesBps, so compile the document only for its shape.
    const broken = { ...defaultBnplDocuments().policy, document: doc } as unknown as typeof policy;
    await expect(ratesForGrade(broken, 'A')).rejects.toThrow(PolicyDocumentError);
  });
});

describe('auto-loan grade pricing', () => {
  const policy = defaultAutoLoanDocuments().policy;

  it('gives the buy rate of grade x term, with the used-vehicle adder, and none for E', async () => {
    expect(await autoLoanBuyRateBps(policy, 'A', 60, 'new')).toBe(599);
    expect(await autoLoanBuyRateBps(policy, 'A', 60, 'used')).toBe(699);
    expect(await autoLoanBuyRateBps(policy, 'B', 24, 'new')).toBe(799);
    expect(await autoLoanBuyRateBps(policy, 'C', 84, 'used')).toBe(1549);
    expect(await autoLoanBuyRateBps(policy, 'E', 60, 'new')).toBeNull();
    expect(await lowestPricedAutoLoanGrade(policy, 72, 'used')).toEqual({ grade: 'D', buyRateBps: 1849 });
  });

  it('prices as the whole policy graph does for the same grade, term and condition', async () => {
    // The full graph's buy rate for an approval: grade A (score 760), 48 months, used.
    const ranked = await policy.evaluate({
      asOf: '2026-04-10T00:00:00Z',
      score: 760,
      confidence: 0.9,
      request: { amountFinancedCents: 1_300_000, termMonths: 48, condition: 'used' },
      credit: { hasFile: true, bankruptcy: false },
      features: { ltvPct: 80, mileage: 10_000, vehicleAgeYears: 2, incomeVerifiable: true } as never,
    });
    expect(ranked.riskGrade).toBe('A');
    expect(await autoLoanBuyRateBps(policy, 'A', 48, 'used')).toBe(ranked.buyRateBps);
  });

  it('follows an edited pricing table and adder', async () => {
    const doc = structuredClone(autoLoanPolicyV1) as { nodes: Array<{ id: string; content: { rules?: Array<Record<string, string>>; expressions?: Array<{ key: string; value: string }> } }> };
    const pricing = doc.nodes.find((n) => n.id === 'pricing')!;
    pricing.content.rules!.find((r) => r._id === 'pr-d-60')!['pr-out-rate'] = 'null';
    const constants = doc.nodes.find((n) => n.id === 'policyConstants')!;
    constants.content.expressions!.find((e) => e.key === 'policy.usedVehicleAdderBps')!.value = '150';
    const edited = compileAutoLoanPolicy(doc);
    expect(await autoLoanBuyRateBps(edited, 'A', 60, 'used')).toBe(749);
    expect(await autoLoanBuyRateBps(edited, 'D', 60, 'used')).toBeNull();
    expect(await lowestPricedAutoLoanGrade(edited, 60, 'new')).toEqual({ grade: 'C', buyRateBps: 1249 });
  });
});

describe('auto-loan collateral rules for a term', () => {
  const policy = defaultAutoLoanDocuments().policy;
  it('refuses terms too long for the vehicle age, as the policy graph does', async () => {
    const vehicle = { ltvPct: 86.67, mileage: 60_000 };
    expect(await autoLoanCollateralRules(policy, { ...vehicle, termMonths: 60, vehicleAgeYears: 9 })).toEqual([]);
    expect(await autoLoanCollateralRules(policy, { ...vehicle, termMonths: 72, vehicleAgeYears: 9 })).toEqual(['term_too_long_for_vehicle_age']);
    expect(await autoLoanCollateralRules(policy, { ...vehicle, termMonths: 72, vehicleAgeYears: 6 })).toEqual([]);
    expect(await autoLoanCollateralRules(policy, { ...vehicle, termMonths: 84, vehicleAgeYears: 6 })).toEqual(['term_too_long_for_vehicle_age']);
    expect(await autoLoanCollateralRules(policy, { ...vehicle, termMonths: 84, vehicleAgeYears: 2 })).toEqual([]);
    // The LTV rule needs the scored grade's maximum: never applied here (an override only lowers the LTV).
    expect(await autoLoanCollateralRules(policy, { ltvPct: 400, mileage: 10, termMonths: 48, vehicleAgeYears: 1 })).toEqual([]);
    expect(await autoLoanCollateralRules(policy, { ltvPct: 80, mileage: 200_000, termMonths: 48, vehicleAgeYears: 1 })).toEqual(['mileage_above_maximum']);
  });
});
