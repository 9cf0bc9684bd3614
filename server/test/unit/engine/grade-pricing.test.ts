/** Pricing by grade read from the policy graph's own pricing table (override pricing, ADR 0012). */
import { describe, expect, it } from 'vitest';
import { compilePolicy, defaultBnplDocuments, lowestPricedGrade, PolicyDocumentError, ratesForGrade } from '../../../src/modules/engine/index.js';
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
