import { describe, expect, it } from 'vitest';
import { deriveBnplFeatures, BNPL_PLANS, type BnplPlan } from '../../../src/modules/engine/features.js';
import { compilePolicy, PolicyEvaluationError, zenEngine, type PolicyInput } from '../../../src/modules/engine/policy.js';
import { assertZenSafeNumbers, fieldsReadBy } from '../../../src/modules/engine/policy-input.js';
import { defaultAutoLoanDocuments, defaultBnplDocuments } from '../../../src/modules/engine/engine-documents.js';
import policyDocument from '../../../src/modules/engine/policies/bnpl-policy-v1.json' with { type: 'json' };

type Jdm = { nodes: Array<{ id: string; type: string; content: Record<string, unknown> }>; edges: unknown[] };
const FIELDS = ['asOf', 'score', 'confidence', 'request', 'credit', 'features'];

/** The bundled BNPL policy with the result's `outcomeRule` computed by `expression` instead. */
function withOutcomeRule(expression: string): Jdm {
  const doc = structuredClone(policyDocument) as unknown as Jdm;
  const expressions = doc.nodes.find((n) => n.id === 'result')!.content['expressions'] as Array<{ key: string; value: string }>;
  expressions.find((e) => e.key === 'outcomeRule')!.value = expression;
  return doc;
}

/** A deterministic pseudo-random sequence (the differential check must be repeatable). */
function sequence(seed: number): () => number {
  let x = seed;
  return () => ((x = (x * 1103515245 + 12345) % 2147483648) / 2147483648);
}

function randomInput(next: () => number): PolicyInput {
  const plan = BNPL_PLANS[Math.floor(next() * BNPL_PLANS.length)] as BnplPlan;
  const amountCents = 1000 + Math.floor(next() * 600_000);
  const hasFile = next() > 0.1;
  const bankruptcy = hasFile ? next() > 0.9 : null;
  const features = deriveBnplFeatures({ file: null, requestedAmountCents: amountCents, plan, history: { returning: next() > 0.5, priorApprovals: 1, priorDeclines: 0 } });
  return {
    asOf: '2026-11-02T10:00:00.000Z',
    score: 300 + Math.floor(next() * 551),
    confidence: Math.round(next() * 100) / 100,
    request: { amountCents, plan },
    credit: { hasFile, bankruptcy },
    features: { ...features, hasCreditFile: hasFile, bankruptcy },
  };
}

describe('the policy input given to ZEN (engine/policy-input.ts)', () => {
  it('is what the bundled documents name: the BNPL policy reads no feature, the auto-loan policy does', () => {
    expect(fieldsReadBy(defaultBnplDocuments().policy.document, FIELDS)).toEqual(['score', 'request', 'credit']);
    expect(fieldsReadBy(defaultAutoLoanDocuments().policy.document, FIELDS)).toEqual(['score', 'request', 'credit', 'features']);
  });

  it('is everything for a document that can reach fields without naming them, or has other node kinds', () => {
    expect(fieldsReadBy(withOutcomeRule('$root.features.relationshipWithUs'), FIELDS)).toBeNull();
    expect(fieldsReadBy(withOutcomeRule('string(len(keys($nodes)))'), FIELDS)).toBeNull();
    const withFunction = structuredClone(policyDocument) as unknown as Jdm;
    withFunction.nodes.push({ id: 'f', type: 'functionNode', content: { source: 'export const handler = (input) => input;' } });
    expect(fieldsReadBy(withFunction, FIELDS)).toBeNull();
    expect(fieldsReadBy({ nodes: 'not a list' }, FIELDS)).toBeNull();
  });

  it('reaches ZEN whenever a document reads it, by name or through $root', async () => {
    const input = randomInput(sequence(7));
    for (const expression of ['features.relationshipWithUs', '$root.features.relationshipWithUs']) {
      const policy = compilePolicy(withOutcomeRule(expression));
      expect(((await policy.evaluateUnchecked(input)) as { outcomeRule: string }).outcomeRule).toBe(input.features.relationshipWithUs);
      expect((await policy.evaluate(input)).outcomeRule).toBe(input.features.relationshipWithUs);
    }
  });

  it('changes no answer: the bundled BNPL policy decides 300 random inputs as ZEN does with the whole input', async () => {
    const policy = defaultBnplDocuments().policy;
    const reference = zenEngine().createDecision(structuredClone(policy.document) as object);
    const next = sequence(20261126);
    for (let i = 0; i < 300; i++) {
      const input = randomInput(next);
      expect(await policy.evaluateUnchecked(input)).toEqual((await reference.evaluate(input)).result);
    }
  });

  it('never gives ZEN a number it would abort the process on: that evaluation fails, naming the field and not the value', async () => {
    // Without the check, this test's process dies (ZEN 0.54.0 panics converting 1e21).
    const policy = defaultBnplDocuments().policy;
    for (const bad of [1e21, -1e20, Number.POSITIVE_INFINITY, Number.NaN, 5e-324]) {
      const input = randomInput(sequence(3));
      const withBad = { ...input, score: bad };
      const failure = await policy.evaluate(withBad).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(PolicyEvaluationError);
      expect(String((failure as Error).message)).toContain('input.score');
      expect(String((failure as Error).message)).not.toContain(String(bad));
      await expect(policy.evaluateUnchecked(withBad)).rejects.toThrow(RangeError);
    }
    expect(() => assertZenSafeNumbers({ a: [1, { b: 2e15 }] })).toThrow('input.a[1].b');
    expect(assertZenSafeNumbers({ a: [0, -1e15, 1e-12, 0.5], s: 'x', n: null })).toEqual({ a: [0, -1e15, 1e-12, 0.5], s: 'x', n: null });
  });
});
