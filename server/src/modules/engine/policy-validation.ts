/**
 * Validation of a BNPL policy document before it is accepted as a version: every problem at once,
 * each with a path (a JSON pointer into the document, or `output.<field>` for what the graph
 * returned) and the rule it breaks, so an upload form can list them all.
 *
 * How it works, in order (a later stage runs only when the earlier ones pass):
 * 1. Static: a JDM graph of allowed node kinds with a literal `policyConstants` node
 *    (inspectPolicyDocument); unique node ids, edges between existing nodes, one input and one
 *    output node; every adverse-action code written anywhere in it is in the registry (a policy
 *    picks codes; their wording is the registry's and cannot be changed by a policy).
 * 2. The structured tables, when the document has them (policy-tables.ts): cut-offs inside
 *    300-850 and strictly descending, bands never better for a lower grade, limits never higher for
 *    a lower grade, every rate 0-35.99% and pay_in_4 at 0.
 * 3. ZEN loads it (`createDecision` + `validate`).
 * 4. A battery of evaluations: every cut-off and its neighbours, 300 and 850, each KYC tier
 *    threshold and plan minimum and the amounts around them, on every plan, and the knock-out
 *    files (no file, bankruptcy). Each output must satisfy the engine's contract
 *    (policyOutputProblems: fields, types, ranges, invariants); across scores, grade, band and
 *    limit must never get better as the score falls.
 * Pure apart from ZEN; about 600 evaluations, tens of milliseconds.
 */
import { isAdverseActionCode } from './adverse-action-reasons.js';
import { BNPL_PLANS, deriveBnplFeatures, type BnplPlan } from './features.js';
import {
  compilePolicy,
  inspectPolicyDocument,
  MAX_RATE_BPS,
  policyOutputProblems,
  RISK_GRADES,
  type CompiledPolicy,
  type PolicyConstants,
  type PolicyDocumentProblem,
  type PolicyInput,
} from './policy.js';
import { GRADE_NODE_ID, PRICING_NODE_ID, readPolicyTables, type PolicyTables } from './policy-tables.js';
import { formatMoney, formatRateBps } from '../../lib/money.js';
import { emptyCreditFile, type CreditFile } from '../credit-data/credit-data.types.js';

export type { PolicyDocumentProblem } from './policy.js';

/** At most this many problems are listed; a badly broken document would otherwise list thousands. */
const MAX_PROBLEMS = 50;
const BAND_RANK = { approve: 0, refer: 1, decline: 2 } as const;

export async function validateBnplPolicyDocument(document: unknown): Promise<PolicyDocumentProblem[]> {
  const problems: PolicyDocumentProblem[] = [];
  const add = (path: string, rule: string, message: string) => {
    if (problems.length < MAX_PROBLEMS && !problems.some((p) => p.path === path && p.rule === rule)) problems.push({ path, rule, message });
  };
  const inspected = inspectPolicyDocument(document);
  // Static problems are distinct already (two missing constants share a path and a rule).
  problems.push(...inspected.problems.slice(0, MAX_PROBLEMS));
  if (!inspected.constants) return problems;
  checkGraph(document as { nodes: unknown[]; edges: unknown[] }, add);
  scanReasonCodes(document, '', add);
  const read = readPolicyTables(document);
  if (read.tables) checkTables(document as { nodes: Array<{ id?: unknown }> }, read.tables, add);
  if (problems.length > 0) return problems;

  let policy: CompiledPolicy;
  try {
    policy = compilePolicy(document);
  } catch (error) {
    add('/', 'zen_compiles', error instanceof Error ? error.message : String(error));
    return problems;
  }
  await runBattery(policy, read.tables, add);
  return problems;
}

export type Add = (path: string, rule: string, message: string) => void;

/** Unique node ids, edges between existing nodes, one input and one output node (every product's graph). */
export function checkGraph(doc: { nodes: unknown[]; edges: unknown[] }, add: Add): void {
  const ids = new Set<string>();
  let inputs = 0;
  let outputs = 0;
  doc.nodes.forEach((raw, i) => {
    const node = raw as { id?: unknown; type?: unknown };
    if (typeof node?.id !== 'string' || node.id === '') add(`/nodes/${i}/id`, 'node_id', 'every node needs an id');
    else if (ids.has(node.id)) add(`/nodes/${i}/id`, 'node_id_unique', `node id ${node.id} is used twice`);
    else ids.add(node.id);
    if (node?.type === 'inputNode') inputs++;
    if (node?.type === 'outputNode') outputs++;
  });
  if (inputs !== 1) add('/nodes', 'graph_io', `the graph needs exactly one inputNode (found ${inputs})`);
  if (outputs !== 1) add('/nodes', 'graph_io', `the graph needs exactly one outputNode (found ${outputs})`);
  doc.edges.forEach((raw, i) => {
    const edge = raw as { sourceId?: unknown; targetId?: unknown };
    for (const end of ['sourceId', 'targetId'] as const) {
      if (typeof edge?.[end] !== 'string' || !ids.has(edge[end])) add(`/edges/${i}/${end}`, 'edge_target_exists', `edge ${i + 1} ${end} ${String(edge?.[end])} is not a node of the graph`);
    }
  });
}

/** Every "AA-nn" written in the document must be a registry code (the catalogue is not the policy's to change). */
export function scanReasonCodes(value: unknown, path: string, add: Add): void {
  if (typeof value === 'string') {
    for (const match of value.matchAll(/\bAA-\d+\b/g)) {
      if (!isAdverseActionCode(match[0])) add(path || '/', 'adverse_action_code_known', `${match[0]} is not an adverse-action code of the registry (AA-01 to AA-25)`);
    }
    return;
  }
  if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) scanReasonCodes(inner, `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`, add);
  }
}

function checkTables(doc: { nodes: Array<{ id?: unknown }> }, tables: PolicyTables, add: Add): void {
  const gradeNode = doc.nodes.findIndex((n) => n?.id === GRADE_NODE_ID);
  const pricingNode = doc.nodes.findIndex((n) => n?.id === PRICING_NODE_ID);
  const gradePath = (i: number) => `/nodes/${gradeNode}/content/rules/${i}`;
  let previous: (typeof tables.grades)[number] | null = null;
  tables.grades.forEach((row, i) => {
    if (row.minScore !== null && (row.minScore < 300 || row.minScore > 850)) {
      add(gradePath(i), 'cutoff_range', `grade ${row.grade} cut-off ${row.minScore} is outside the 300-850 score range`);
    }
    if (row.minScore === null && i !== tables.grades.length - 1) add(gradePath(i), 'cutoffs_ordered', `grade ${row.grade} has no cut-off but is not the last row, so the grades after it are never reached`);
    if (previous) {
      if (previous.minScore !== null && row.minScore !== null && row.minScore >= previous.minScore) {
        add(gradePath(i), 'cutoffs_ordered', `grade ${row.grade} cut-off ${row.minScore} is not below grade ${previous.grade}'s ${previous.minScore}`);
      }
      if (RISK_GRADES.indexOf(row.grade) <= RISK_GRADES.indexOf(previous.grade)) add(gradePath(i), 'grades_ordered', `grade ${row.grade} comes after grade ${previous.grade}; grades run A to E from the highest score down`);
      if (BAND_RANK[row.band] < BAND_RANK[previous.band]) add(gradePath(i), 'bands_ordered', `grade ${row.grade} is in band ${row.band}, better than grade ${previous.grade}'s ${previous.band}`);
      if (row.limitCents > previous.limitCents) add(gradePath(i), 'limits_ordered', `grade ${row.grade} limit is above grade ${previous.grade}'s`);
    }
    previous = row;
  });
  const last = tables.grades[tables.grades.length - 1];
  if (!last || last.minScore !== null) add(`/nodes/${gradeNode}/content/rules`, 'cutoffs_ordered', 'the last grade must take every remaining score (an empty score cell)');
  tables.pricing.forEach((row, i) => {
    for (const plan of BNPL_PLANS) {
      const rate = row.ratesBps[plan];
      const path = `/nodes/${pricingNode}/content/rules/${i}`;
      if (rate !== null && rate > MAX_RATE_BPS) add(path, 'rate_range', `grade ${row.grade} ${plan} rate ${formatRateBps(rate)}% is above 35.99%`);
      if (plan === 'pay_in_4' && rate !== null && rate !== 0) add(path, 'pay_in_4_free', `grade ${row.grade} pay_in_4 must be priced at 0.00% (it is the fee-free plan)`);
    }
  });
  const { planMinimumCents: min } = tables;
  if (min.pay_in_4 < 2500 || min.pay_in_6 < 2500 || min.monthly < 2500) {
    add(`/nodes`, 'plan_minimums', 'plan minimums must be at least 25.00 (the smallest amount the API takes)');
  }
}

async function runBattery(policy: CompiledPolicy, tables: PolicyTables | null, add: Add): Promise<void> {
  const c = policy.constants;
  const scores = batteryScores(tables);
  const amounts = batteryAmounts(c);
  const goodFile = sampleFile(true, false);
  for (const plan of BNPL_PLANS) {
    for (const amountCents of amounts) {
      let better: { score: number; grade: number; band: number; limit: number } | null = null;
      for (const score of scores) {
        const input = policyInput(score, amountCents, plan, goodFile);
        const out = await evaluate(policy, input, add);
        if (!out) continue;
        const now = { score, grade: RISK_GRADES.indexOf(out.riskGrade), band: BAND_RANK[out.band], limit: out.gradeLimitCents };
        // Scores run from high to low: nothing may get better as the score falls.
        if (better) {
          const where = `score ${score} (after ${better.score}), ${money(amountCents)} on ${plan}`;
          if (now.grade < better.grade) add('output.riskGrade', 'grades_ordered', `a lower score gets a better grade: ${where}`);
          if (now.band < better.band) add('output.band', 'bands_ordered', `a lower score gets a better band: ${where}`);
          if (now.limit > better.limit) add('output.gradeLimitCents', 'limits_ordered', `a lower score gets a higher limit: ${where}`);
        }
        better = now;
      }
    }
  }
  // Knock-out files: whatever the policy does with them, the output must hold.
  for (const file of [sampleFile(false, false), sampleFile(true, true)]) {
    for (const plan of BNPL_PLANS) {
      for (const score of [850, 700, 300]) await evaluate(policy, policyInput(score, 50_000, plan, file), add);
    }
  }
}

async function evaluate(policy: CompiledPolicy, input: PolicyInput, add: Add) {
  const where = `score ${input.score}, ${money(input.request.amountCents)} on ${input.request.plan}${input.credit.hasFile ? (input.credit.bankruptcy ? ', bankruptcy on file' : '') : ', no credit file'}`;
  let raw: unknown;
  try {
    raw = await policy.evaluateUnchecked(input);
  } catch (error) {
    add('/', 'evaluates', `the graph fails at ${where}: ${error instanceof Error ? error.message : String(error)}`);
    return null;
  }
  const problems = policyOutputProblems(raw, policy.constants, input);
  for (const p of problems) add(`output.${p.field}`.replace(/^output\.output$/, 'output'), p.rule, `${p.message} (${where})`);
  return problems.length === 0 ? (raw as { riskGrade: (typeof RISK_GRADES)[number]; band: keyof typeof BAND_RANK; gradeLimitCents: number }) : null;
}

/** 850 down to 300 through every cut-off and its neighbours (the default's cut-offs too). */
function batteryScores(tables: PolicyTables | null): number[] {
  const set = new Set([850, 849, 300, 301, 720, 719, 660, 659, 600, 599, 560, 559]);
  for (const row of tables?.grades ?? []) {
    if (row.minScore === null) continue;
    for (const s of [row.minScore - 1, row.minScore, row.minScore + 1]) if (s >= 300 && s <= 850) set.add(s);
  }
  return [...set].sort((a, b) => b - a);
}

/** Plan minimums, KYC tier thresholds, default-plan thresholds and the amounts either side of them. */
function batteryAmounts(c: PolicyConstants): number[] {
  const marks = [
    2_500, 10_000, 25_000, 100_000, 250_000, 3_000_000,
    c.kycTiers.enhancedFromCents, c.kycTiers.hardFromCents,
    c.planMinimumCents.pay_in_4, c.planMinimumCents.pay_in_6, c.planMinimumCents.monthly,
    c.defaultPlan.payIn4UpToCents, c.defaultPlan.payIn6UpToCents,
  ];
  const set = new Set<number>();
  for (const m of marks) for (const a of [m - 1, m]) if (a >= 2_500 && a <= 3_000_000) set.add(a);
  return [...set].sort((a, b) => a - b);
}

function policyInput(score: number, amountCents: number, plan: BnplPlan, file: CreditFile): PolicyInput {
  const features = deriveBnplFeatures({ file, requestedAmountCents: amountCents, plan, history: { returning: false, priorApprovals: 0, priorDeclines: 0 } });
  return {
    asOf: '2026-01-15T12:00:00.000Z',
    score,
    confidence: file.hasFile ? 0.9 : 0.01,
    request: { amountCents, plan },
    credit: { hasFile: features.hasCreditFile, bankruptcy: features.bankruptcy },
    features,
  };
}

function sampleFile(hasFile: boolean, bankruptcy: boolean): CreditFile {
  if (!hasFile) return emptyCreditFile('validation-no-file', 'policy-validation');
  return {
    fileId: 'validation-file',
    source: 'policy-validation',
    hasFile: true,
    tradelines: 8,
    oldestTradelineMonths: 72,
    revolvingUtilizationPct: 25,
    delinquencies30dLast24m: 0,
    delinquencies90dLast24m: 0,
    collectionsOrJudgments: 0,
    bankruptcy,
    foreclosureOrRepossession: false,
    inquiriesLast6m: 1,
    monthlyObligationsCents: 80_000,
    estimatedMonthlyIncomeCents: 500_000,
  };
}

function money(cents: number): string {
  return formatMoney(cents);
}

// One formatter for rates, in lib/money.ts; re-exported for this module's existing importers.
export { formatRateBps };
