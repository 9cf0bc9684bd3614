import { describe, expect, it } from 'vitest';
import { deriveBnplFeatures, type BnplPlan } from '../../../src/modules/engine/features.js';
import {
  MAX_RATE_BPS,
  PolicyDocumentError,
  PolicyEvaluationError,
  compilePolicy,
  createPolicyCatalog,
  defaultPlanFor,
  kycTierFor,
  readPolicyConstants,
  type CompiledPolicy,
  type PolicyInput,
} from '../../../src/modules/engine/policy.js';
import { defaultBnplDocuments, defaultBnplPolicyCatalog } from '../../../src/modules/engine/engine-documents.js';
import policyDocument from '../../../src/modules/engine/policies/bnpl-policy-v1.json' with { type: 'json' };

type Jdm = { nodes: Array<{ id: string; type: string; content: Record<string, unknown> }>; edges: unknown[] };

function editedPolicy(edit: (doc: Jdm) => void): unknown {
  const doc = structuredClone(policyDocument) as unknown as Jdm;
  edit(doc);
  return doc;
}

function node(doc: Jdm, id: string) {
  const found = doc.nodes.find((n) => n.id === id);
  if (!found) throw new Error(`no node ${id}`);
  return found;
}

function setConstant(doc: Jdm, key: string, value: string): void {
  const expressions = node(doc, 'policyConstants').content['expressions'] as Array<{ key: string; value: string }>;
  const entry = expressions.find((e) => e.key === key);
  if (!entry) throw new Error(`no constant ${key}`);
  entry.value = value;
}

function tableRule(doc: Jdm, nodeId: string, ruleId: string): Record<string, string> {
  const rules = node(doc, nodeId).content['rules'] as Array<Record<string, string>>;
  const rule = rules.find((r) => r['_id'] === ruleId);
  if (!rule) throw new Error(`no rule ${ruleId}`);
  return rule;
}

function input(score: number, amountCents: number, plan: BnplPlan, credit: { hasFile?: boolean; bankruptcy?: boolean } = {}): PolicyInput {
  const hasFile = credit.hasFile ?? true;
  const bankruptcy = hasFile ? (credit.bankruptcy ?? false) : null;
  const features = deriveBnplFeatures({
    file: null,
    requestedAmountCents: amountCents,
    plan,
    history: { returning: false, priorApprovals: 0, priorDeclines: 0 },
  });
  return {
    asOf: '2026-11-02T10:00:00.000Z',
    score,
    confidence: 1,
    request: { amountCents, plan },
    credit: { hasFile, bankruptcy },
    features: { ...features, hasCreditFile: hasFile, bankruptcy },
  };
}

describe('the default BNPL policy document', () => {
  const policy = defaultBnplDocuments().policy;

  it('is a GoRules JDM graph of standard node kinds only', () => {
    const doc = policyDocument as unknown as Jdm & { contentType: string };
    expect(doc.contentType).toBe('application/vnd.gorules.decision');
    expect(new Set(doc.nodes.map((n) => n.type))).toEqual(new Set(['inputNode', 'expressionNode', 'decisionTableNode', 'outputNode']));
  });

  it('carries its version, scope and plain values in policyConstants', () => {
    expect(policy.version).toBe('bnpl-policy-2026.11.1');
    expect(policy.constants).toEqual({
      version: 'bnpl-policy-2026.11.1',
      product: 'bnpl',
      tenant: '*',
      environment: '*',
      kycTiers: { enhancedFromCents: 50_000, hardFromCents: 500_000 },
      planMinimumCents: { pay_in_4: 2_500, pay_in_6: 10_000, monthly: 25_000 },
      defaultPlan: { payIn4UpToCents: 100_000, payIn6UpToCents: 250_000 },
    });
  });

  it.each([
    [850, 'A', 'approve'],
    [720, 'A', 'approve'],
    [719, 'B', 'approve'],
    [660, 'B', 'approve'],
    [659, 'C', 'approve'],
    [600, 'C', 'approve'],
    [599, 'D', 'refer'],
    [560, 'D', 'refer'],
    [559, 'E', 'decline'],
    [300, 'E', 'decline'],
  ] as const)('score %i is grade %s and %s', async (score, grade, outcome) => {
    const out = await policy.evaluate(input(score, 50_000, 'pay_in_4'));
    expect(out.riskGrade).toBe(grade);
    expect(out.outcome).toBe(outcome);
    expect(out.knockoutCodes).toEqual([]);
    expect(out.policyVersion).toBe('bnpl-policy-2026.11.1');
  });

  it('knocks out a bankruptcy with AA-21 whatever the score', async () => {
    const out = await policy.evaluate(input(850, 50_000, 'pay_in_4', { bankruptcy: true }));
    expect(out).toMatchObject({ outcome: 'decline', outcomeRule: 'knockout', knockoutCodes: ['AA-21'], riskGrade: 'A' });
  });

  it('knocks out a missing credit file with AA-14', async () => {
    const out = await policy.evaluate(input(473, 50_000, 'pay_in_6', { hasFile: false }));
    expect(out).toMatchObject({ outcome: 'decline', outcomeRule: 'knockout', knockoutCodes: ['AA-14'] });
  });

  it.each([
    [800, 'A', 3_000_000],
    [700, 'B', 1_000_000],
    [630, 'C', 250_000],
    [580, 'D', 100_000],
    [400, 'E', 0],
  ] as const)('score %i (grade %s) lends up to %i cents', async (score, _grade, limit) => {
    const out = await policy.evaluate(input(score, 3_000_000, 'monthly'));
    expect(out.gradeLimitCents).toBe(limit);
    expect(out.offerAmountCents).toBe(limit);
    expect(out.counteroffer).toBe(limit < 3_000_000);
  });

  it('counteroffers the grade limit when it is below the request', async () => {
    const out = await policy.evaluate(input(630, 400_000, 'monthly'));
    expect(out).toMatchObject({ outcome: 'approve', offerAmountCents: 250_000, counteroffer: true, fitsPlan: true, rateBps: 2799 });
  });

  it('lends the full request when the limit allows', async () => {
    const out = await policy.evaluate(input(700, 400_000, 'monthly'));
    expect(out).toMatchObject({ outcome: 'approve', offerAmountCents: 400_000, counteroffer: false });
  });

  it.each([
    ['A', 800, { pay_in_4: 0, pay_in_6: 0, monthly: 999 }],
    ['B', 700, { pay_in_4: 0, pay_in_6: 0, monthly: 1799 }],
    ['C', 630, { pay_in_4: 0, pay_in_6: 999, monthly: 2799 }],
    ['D', 580, { pay_in_4: 0, pay_in_6: 1499, monthly: 3299 }],
    ['E', 500, { pay_in_4: null, pay_in_6: null, monthly: null }],
  ] as const)('prices grade %s', async (_grade, score, rates) => {
    const out = await policy.evaluate(input(score, 50_000, 'pay_in_6'));
    expect(out.ratesBps).toEqual(rates);
    expect(out.rateBps).toBe(rates.pay_in_6);
  });

  it('never prices pay_in_4 above 0 or any plan above 35.99%', async () => {
    for (let score = 300; score <= 850; score += 10) {
      for (const plan of ['pay_in_4', 'pay_in_6', 'monthly'] as const) {
        const out = await policy.evaluate(input(score, 50_000, plan));
        if (out.ratesBps.pay_in_4 !== null) expect(out.ratesBps.pay_in_4).toBe(0);
        for (const rate of Object.values(out.ratesBps)) if (rate !== null) expect(rate).toBeLessThanOrEqual(MAX_RATE_BPS);
      }
    }
  });

  it('is compiled once and safe to evaluate concurrently', async () => {
    const scores = Array.from({ length: 200 }, (_, i) => 300 + ((i * 37) % 551));
    const outs = await Promise.all(scores.map((s) => policy.evaluate(input(s, 50_000, 'pay_in_4'))));
    outs.forEach((out, i) => expect(out.riskGrade).toBe(gradeOf(scores[i]!)));
  });
});

function gradeOf(score: number): string {
  return score >= 720 ? 'A' : score >= 660 ? 'B' : score >= 600 ? 'C' : score >= 560 ? 'D' : 'E';
}

describe('plan minimum and a policy whose limit is below it', () => {
  it('refers instead of approving below the plan minimum', async () => {
    const policy = compilePolicy(
      editedPolicy((doc) => {
        setConstant(doc, 'policy.version', '"test-low-limit"');
        tableRule(doc, 'riskGrade', 'rg-c')['rg-out-limit'] = '20000';
      }),
    );
    const monthly = await policy.evaluate(input(630, 60_000, 'monthly'));
    expect(monthly).toMatchObject({ outcome: 'refer', outcomeRule: 'limit_below_plan_minimum', fitsPlan: false, offerAmountCents: 20_000 });
    const payIn4 = await policy.evaluate(input(630, 60_000, 'pay_in_4'));
    expect(payIn4).toMatchObject({ outcome: 'approve', offerAmountCents: 20_000, counteroffer: true });
  });
});

describe('KYC tiers and the default plan', () => {
  const policy = defaultBnplDocuments().policy;

  it('tiers by amount: below 500.00 soft, below 5,000.00 enhanced, else hard', () => {
    expect([2_500, 49_999, 50_000, 499_999, 500_000, 3_000_000].map((a) => kycTierFor(a, policy))).toEqual([
      'soft',
      'soft',
      'enhanced',
      'enhanced',
      'hard',
      'hard',
    ]);
    expect(kycTierFor(50_000, policy.constants)).toBe('enhanced');
  });

  it('takes the thresholds from the policy document', () => {
    const lower = compilePolicy(
      editedPolicy((doc) => {
        setConstant(doc, 'policy.version', '"test-kyc"');
        setConstant(doc, 'policy.kycTiers.enhancedFromCents', '20000');
      }),
    );
    expect(kycTierFor(20_000, lower)).toBe('enhanced');
  });

  it('picks pay_in_4 up to 1,000.00, pay_in_6 up to 2,500.00, monthly above', () => {
    expect([100_000, 100_001, 250_000, 250_001].map((a) => defaultPlanFor(a, policy))).toEqual(['pay_in_4', 'pay_in_6', 'pay_in_6', 'monthly']);
  });
});

describe('policy documents that must be refused', () => {
  it('refuses function nodes: policy is data, not code', () => {
    const doc = editedPolicy((d) => {
      d.nodes.push({ id: 'fn', type: 'functionNode', content: { source: 'export const handler = () => ({})' } });
    });
    expect(() => compilePolicy(doc)).toThrow(/functionNode/);
  });

  it('needs the policyConstants node and literal constants', () => {
    expect(() => compilePolicy(editedPolicy((d) => (d.nodes = d.nodes.filter((n) => n.id !== 'policyConstants'))))).toThrow(PolicyDocumentError);
    expect(() => readPolicyConstants(editedPolicy((d) => setConstant(d, 'policy.kycTiers.hardFromCents', 'request.amountCents')))).toThrow(
      /kycTiers/,
    );
    expect(() => readPolicyConstants(editedPolicy((d) => setConstant(d, 'policy.environment', '"staging"')))).toThrow(/environment/);
  });

  it('fails evaluation loudly when an edit prices pay_in_4 or exceeds 35.99%', async () => {
    const feeBearing = compilePolicy(
      editedPolicy((d) => {
        setConstant(d, 'policy.version', '"test-bad-p4"');
        tableRule(d, 'pricing', 'pr-a')['pr-out-p4'] = '500';
      }),
    );
    await expect(feeBearing.evaluate(input(800, 50_000, 'pay_in_4'))).rejects.toThrow(PolicyEvaluationError);
    const usurious = compilePolicy(
      editedPolicy((d) => {
        setConstant(d, 'policy.version', '"test-bad-monthly"');
        tableRule(d, 'pricing', 'pr-d')['pr-out-monthly'] = '3600';
      }),
    );
    await expect(usurious.evaluate(input(580, 50_000, 'monthly'))).rejects.toThrow(/3600/);
  });

  it('fails evaluation when the graph output loses a field', async () => {
    const broken = compilePolicy(
      editedPolicy((d) => {
        const expressions = node(d, 'result').content['expressions'] as Array<{ key: string }>;
        node(d, 'result').content['expressions'] = expressions.filter((e) => e.key !== 'riskGrade');
      }),
    );
    await expect(broken.evaluate(input(700, 50_000, 'pay_in_4'))).rejects.toThrow(/riskGrade/);
  });
});

describe('policy catalog per tenant and environment', () => {
  function scoped(version: string, tenant: string, environment: string): CompiledPolicy {
    return compilePolicy(
      editedPolicy((d) => {
        setConstant(d, 'policy.version', JSON.stringify(version));
        setConstant(d, 'policy.tenant', JSON.stringify(tenant));
        setConstant(d, 'policy.environment', JSON.stringify(environment));
      }),
    );
  }

  it('resolves the most specific policy', () => {
    const base = defaultBnplDocuments().policy;
    const catalog = createPolicyCatalog([base, scoped('t1-live', 't1', 'live'), scoped('t1-any', 't1', '*'), scoped('sandbox-all', '*', 'sandbox')]);
    expect(catalog.resolve('t1', 'live').version).toBe('t1-live');
    expect(catalog.resolve('t1', 'sandbox').version).toBe('t1-any');
    expect(catalog.resolve('t2', 'sandbox').version).toBe('sandbox-all');
    expect(catalog.resolve('t2', 'live').version).toBe('bnpl-policy-2026.11.1');
  });

  it('refuses two policies for one scope and a lookup with no default', () => {
    expect(() => createPolicyCatalog([scoped('a', 't1', 'live'), scoped('b', 't1', 'live')])).toThrow(/two policies/);
    expect(() => createPolicyCatalog([scoped('a', 't1', 'live')]).resolve('t2', 'live')).toThrow(/no policy/);
  });

  it('ships a default catalog that serves every tenant', () => {
    expect(defaultBnplPolicyCatalog().resolve('any-tenant', 'sandbox').version).toBe('bnpl-policy-2026.11.1');
  });
});
