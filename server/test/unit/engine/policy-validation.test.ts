/**
 * Policy validation before a version is accepted: the bundled policy passes, and each class of bad
 * document is caught with its own rule and a path (static checks, the structured tables, ZEN
 * loading, and the evaluation battery's output contract and ordering checks). Also the structured
 * view's round trip and the identity rewrite.
 */
import { describe, expect, it } from 'vitest';
import {
  bundledPolicyDocument,
  compilePolicy,
  DEFAULT_BNPL_POLICY_VERSION,
  readPolicyTables,
  validateBnplPolicyDocument,
  withPolicyIdentity,
  writePolicyTables,
  type PolicyDocumentProblem,
} from '../../../src/modules/engine/index.js';

type Node = { id: string; type: string; name?: string; content: { rules?: Array<Record<string, string>>; expressions?: Array<{ id: string; key: string; value: string }> } & Record<string, unknown> };
type Doc = { nodes: Node[]; edges: Array<{ id: string; sourceId: string; targetId: string; type: string }> };

const fresh = (): Doc => structuredClone(bundledPolicyDocument(DEFAULT_BNPL_POLICY_VERSION)) as Doc;
const node = (doc: Doc, id: string) => doc.nodes.find((n) => n.id === id)!;
const rulesOf = (problems: PolicyDocumentProblem[]) => [...new Set(problems.map((p) => p.rule))].sort();

async function problemsAfter(edit: (doc: Doc) => void): Promise<PolicyDocumentProblem[]> {
  const doc = fresh();
  edit(doc);
  return validateBnplPolicyDocument(doc);
}

describe('policy validation', () => {
  it('accepts the bundled policy', async () => {
    expect(await validateBnplPolicyDocument(fresh())).toEqual([]);
  });

  it('rejects what is not a JDM graph', async () => {
    expect(rulesOf(await validateBnplPolicyDocument('nope'))).toEqual(['jdm_graph']);
    expect(await validateBnplPolicyDocument({ nodes: [] })).toEqual([{ path: '/edges', rule: 'jdm_graph', message: expect.any(String) }]);
  });

  it('rejects code and sub-decisions (node kinds), naming each node', async () => {
    const problems = await problemsAfter((d) => {
      d.nodes.push({ id: 'js', type: 'functionNode', content: {} }, { id: 'sub', type: 'decisionNode', content: {} });
    });
    const n = fresh().nodes.length;
    expect(problems.filter((p) => p.rule === 'node_kind_allowed').map((p) => p.path)).toEqual([`/nodes/${n}/type`, `/nodes/${n + 1}/type`]);
  });

  it('needs literal policy constants, every schema error listed', async () => {
    expect(rulesOf(await problemsAfter((d) => void (d.nodes = d.nodes.filter((n) => n.id !== 'policyConstants'))))).toContain('policy_constants');
    const notLiteral = await problemsAfter((d) => void (node(d, 'policyConstants').content.expressions![4]!.value = 'request.amountCents'));
    expect(notLiteral.some((p) => p.rule === 'policy_constants' || p.rule === 'constant_literal')).toBe(true);
    const twoMissing = await problemsAfter((d) => {
      const c = node(d, 'policyConstants').content;
      c.expressions = c.expressions!.filter((e) => !['policy.planMinimumCents.monthly', 'policy.defaultPlan.payIn6UpToCents'].includes(e.key));
    });
    expect(twoMissing.filter((p) => p.rule === 'policy_constants').map((p) => p.message)).toEqual([
      expect.stringContaining('/planMinimumCents/monthly'),
      expect.stringContaining('/defaultPlan/payIn6UpToCents'),
    ]);
  });

  it('orders tier and default-plan thresholds', async () => {
    const problems = await problemsAfter((d) => {
      const c = node(d, 'policyConstants').content.expressions!;
      c.find((e) => e.key === 'policy.kycTiers.enhancedFromCents')!.value = '600000';
      c.find((e) => e.key === 'policy.defaultPlan.payIn4UpToCents')!.value = '300000';
    });
    expect(rulesOf(problems)).toEqual(['default_plan_ordered', 'tier_thresholds_ordered']);
  });

  it('checks the graph: unique ids, edges between nodes, one input and one output', async () => {
    const problems = await problemsAfter((d) => {
      d.nodes.push({ ...node(d, 'offer'), name: 'copy' });
      d.edges.push({ id: 'e-x', sourceId: 'offer', targetId: 'nowhere', type: 'edge' });
      d.nodes.push({ id: 'out2', type: 'outputNode', content: {} });
    });
    expect(rulesOf(problems)).toEqual(['edge_target_exists', 'graph_io', 'node_id_unique']);
    expect(problems.find((p) => p.rule === 'edge_target_exists')!.path).toBe(`/edges/${fresh().edges.length}/targetId`);
  });

  it('keeps the adverse-action catalogue: an unknown code anywhere is refused', async () => {
    const problems = await problemsAfter((d) => void (node(d, 'knockouts').content.rules![1]!['ko-out-code'] = '"AA-31"'));
    expect(problems).toEqual([{ path: '/nodes/2/content/rules/1/ko-out-code', rule: 'adverse_action_code_known', message: expect.stringContaining('AA-31') }]);
  });

  it('checks the structured tables: cut-offs, bands, limits, rate range and a fee-free pay_in_4', async () => {
    const problems = await problemsAfter((d) => {
      const grades = node(d, 'riskGrade').content.rules!;
      grades[1]!['rg-in-score'] = '>= 730'; // above A's 720
      grades[1]!['rg-out-band'] = '"decline"'; // B declines while C approves
      grades[2]!['rg-out-limit'] = '2000000'; // C above B's 1,000,000
      grades[3]!['rg-in-score'] = '>= 200'; // below the score range
      const pricing = node(d, 'pricing').content.rules!;
      pricing[0]!['pr-out-monthly'] = '3600';
      pricing[1]!['pr-out-p4'] = '100';
    });
    expect(rulesOf(problems)).toEqual(['bands_ordered', 'cutoff_range', 'cutoffs_ordered', 'limits_ordered', 'pay_in_4_free', 'rate_range']);
    expect(problems.find((p) => p.rule === 'rate_range')).toEqual({ path: '/nodes/4/content/rules/0', rule: 'rate_range', message: 'grade A monthly rate 36.00% is above 35.99%' });
  });

  it('runs the battery on graphs without a structured view: out-of-range rates come from the outputs', async () => {
    const problems = await problemsAfter((d) => {
      const pricing = node(d, 'pricing');
      pricing.id = 'pricing2'; // no longer the structured `pricing` table: only evaluation can tell
      for (const e of d.edges) {
        if (e.sourceId === 'pricing') e.sourceId = 'pricing2';
        if (e.targetId === 'pricing') e.targetId = 'pricing2';
      }
      pricing.content.rules![2]!['pr-out-p6'] = '4000';
    });
    expect(problems).toEqual([{ path: 'output.ratesBps.pay_in_6', rule: 'rate_range', message: expect.stringMatching(/pay_in_6 rate 4000 bps is outside 0-3599 \(score \d+, .* on .*\)/) }]);
  });

  it('checks every output field and nothing more', async () => {
    const missing = await problemsAfter((d) => {
      const r = node(d, 'result').content;
      r.expressions = r.expressions!.filter((e) => e.key !== 'ratesBps');
    });
    expect(missing.map((p) => [p.path, p.rule])).toContainEqual(['output.ratesBps', 'output_schema']);
    const extra = await problemsAfter((d) => void node(d, 'result').content.expressions!.push({ id: 'rs-x', key: 'reasonText', value: '"We do not like you"' }));
    expect(extra.map((p) => [p.path, p.rule])).toEqual([['output.reasonText', 'output_contract']]);
  });

  it('catches invariants only evaluation shows: offers above the request, approvals without a rate', async () => {
    const above = await problemsAfter((d) => void (node(d, 'offer').content.expressions!.find((e) => e.key === 'offer.amountCents')!.value = 'gradeLimitCents'));
    expect(rulesOf(above)).toContain('offer_within_request');
    const unpriced = await problemsAfter((d) => void (node(d, 'pricing').content.rules![0]!['pr-out-monthly'] = 'null'));
    expect(unpriced).toEqual([{ path: 'output.outcome', rule: 'approval_complete', message: expect.stringContaining('on monthly') }]);
  });

  it('reports a graph that fails to evaluate', async () => {
    const problems = await problemsAfter((d) => void (node(d, 'offer').content.expressions!.find((e) => e.key === 'offer.amountCents')!.value = 'min([request.amountCents, gradeLimitCents]'));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.some((p) => ['zen_compiles', 'evaluates', 'output_schema'].includes(p.rule))).toBe(true);
  });

  it('flags grades that get better as the score falls, from the outputs', async () => {
    const problems = await problemsAfter((d) => {
      const grades = node(d, 'riskGrade').content.rules!;
      // 800 and above fall through to grade B's row: 850 gets B, 720 gets A. Not a `>= N` cell, so
      // only the evaluation battery can see it.
      grades[0]!['rg-in-score'] = '>= 720 and < 800';
    });
    expect(rulesOf(problems)).toEqual(expect.arrayContaining(['grades_ordered']));
  });
});

describe('structured view', () => {
  it('round-trips the bundled policy unchanged', () => {
    const doc = fresh();
    const read = readPolicyTables(doc);
    expect(read.reason).toBeNull();
    expect(writePolicyTables(doc, read.tables!)).toEqual(doc);
  });

  it('writes edits into the decision tables and constants, and the result evaluates', async () => {
    const doc = fresh();
    const tables = readPolicyTables(doc).tables!;
    tables.grades[0]!.minScore = 740;
    tables.pricing[0]!.ratesBps.monthly = 1199;
    tables.kycTiers.enhancedFromCents = 60_000;
    const edited = writePolicyTables(doc, tables) as Doc;
    expect(node(edited, 'riskGrade').content.rules![0]!['rg-in-score']).toBe('>= 740');
    expect(node(edited, 'pricing').content.rules![0]!['pr-out-monthly']).toBe('1199');
    expect(readPolicyTables(edited).tables).toEqual(tables);
    expect(await validateBnplPolicyDocument(edited)).toEqual([]);
    const policy = compilePolicy(edited);
    expect(policy.constants.kycTiers.enhancedFromCents).toBe(60_000);
  });

  it('has no structured view for a reshaped graph, and says why', () => {
    const doc = fresh();
    node(doc, 'riskGrade').content.rules![0]!['rg-in-score'] = '[720..850]';
    expect(readPolicyTables(doc)).toEqual({ tables: null, reason: expect.stringContaining('is not ">= N"') });
    expect(() => writePolicyTables(doc, readPolicyTables(fresh()).tables!)).toThrow();
  });

  it('sets the identity a stored version carries', () => {
    const named = withPolicyIdentity(fresh(), { version: 'bnpl-policy-sandbox-v7', tenant: 't-1', environment: 'sandbox' });
    expect(compilePolicy(named).constants).toMatchObject({ version: 'bnpl-policy-sandbox-v7', tenant: 't-1', environment: 'sandbox' });
  });
});
