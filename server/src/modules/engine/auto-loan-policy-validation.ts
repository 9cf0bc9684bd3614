/**
 * Validation of an auto-loan policy document before it is accepted as a version: every problem at
 * once, each with a path (a JSON pointer, or `output.<field>` for what the graph returned) and the
 * rule it breaks, like the BNPL validation (policy-validation.ts) on the auto-loan contract.
 *
 * How it works, in order (a later stage runs only when the earlier ones pass):
 * 1. Static: the shared graph checks (allowed node kinds, a literal `policyConstants` node, unique
 *    node ids, edges between nodes, one input and one output, registry reason codes); the constants
 *    against the auto-loan schema (auto-loan-policy.ts), every error listed; then their order: KYC
 *    tiers ordered, amount-financed range non-empty and positive, the markup cap above 60 months
 *    not above the cap up to 60 months, reserve share 0-100.
 * 2. The structured tables, when the document has them (auto-loan-policy-tables.ts): cut-offs
 *    inside 300-850 and descending, bands, limits and maximum LTVs never better for a lower grade,
 *    every buy rate (plus the used-vehicle adder) within 0-35.99%, an approving grade priced on
 *    every term.
 * 3. ZEN loads it (compileAutoLoanPolicy).
 * 4. Sample evaluations over scores (every cut-off and its neighbours), LTVs, terms, new and used
 *    vehicles of several ages and mileages, and the knock-out files; every output must satisfy the
 *    engine's contract (autoLoanPolicyOutputProblems), and across scores grade, band, limit and
 *    maximum LTV must never get better as the score falls. Pure apart from ZEN.
 */
import { Value } from '@sinclair/typebox/value';
import { AUTO_LOAN_GRADE_NODE_ID, AUTO_LOAN_PRICING_NODE_ID, AUTO_LOAN_TERM_BUCKETS, readAutoLoanPolicyTables, type AutoLoanPolicyTables } from './auto-loan-policy-tables.js';
import { deriveAutoLoanFeatures, type AutoLoanTerms, type VehicleCondition } from './auto-loan-features.js';
import {
  AutoLoanPolicyConstantsSchema,
  autoLoanPolicyOutputProblems,
  compileAutoLoanPolicy,
  type AutoLoanPolicyConstants,
  type AutoLoanPolicyInput,
  type CompiledAutoLoanPolicy,
} from './auto-loan-policy.js';
import { inspectPolicyConstantValues, MAX_RATE_BPS, RISK_GRADES, type PolicyDocumentProblem } from './policy.js';
import { checkGraph, formatRateBps, scanReasonCodes, type Add } from './policy-validation.js';
import { formatMoney } from '../../lib/money.js';
import { emptyCreditFile, type CreditFile } from '../credit-data/credit-data.types.js';

const MAX_PROBLEMS = 50;
const BAND_RANK = { approve: 0, refer: 1, decline: 2 } as const;

export async function validateAutoLoanPolicyDocument(document: unknown): Promise<PolicyDocumentProblem[]> {
  const problems: PolicyDocumentProblem[] = [];
  const add: Add = (path, rule, message) => {
    if (problems.length < MAX_PROBLEMS && !problems.some((p) => p.path === path && p.rule === rule && p.message === message)) problems.push({ path, rule, message });
  };
  const inspected = inspectPolicyConstantValues(document);
  problems.push(...inspected.problems.slice(0, MAX_PROBLEMS));
  if (inspected.constantsPath === null) return problems;
  const constants = checkConstants(inspected.values, inspected.constantsPath, add);
  checkGraph(document as { nodes: unknown[]; edges: unknown[] }, add);
  scanReasonCodes(document, '', add);
  const read = readAutoLoanPolicyTables(document);
  if (read.tables) checkTables(document as { nodes: Array<{ id?: unknown }> }, read.tables, add);
  if (problems.length > 0 || !constants) return problems;

  let policy: CompiledAutoLoanPolicy;
  try {
    policy = compileAutoLoanPolicy(document);
  } catch (error) {
    add('/', 'zen_compiles', error instanceof Error ? error.message : String(error));
    return problems;
  }
  await runSamples(policy, read.tables, add);
  return problems;
}

function checkConstants(values: unknown, path: string, add: Add): AutoLoanPolicyConstants | null {
  if (!Value.Check(AutoLoanPolicyConstantsSchema, values)) {
    const seen = new Set<string>();
    for (const e of Value.Errors(AutoLoanPolicyConstantsSchema, values)) {
      // TypeBox reports a missing value twice (required, then its type): once per constant is enough.
      if (seen.has(e.path)) continue;
      seen.add(e.path);
      add(path, 'policy_constants', `policy constants at ${e.path || '/'}: ${e.message}`);
    }
    return null;
  }
  const c = values;
  let ok = true;
  const fail = (rule: string, message: string) => {
    ok = false;
    add(path, rule, message);
  };
  if (c.kycTiers.enhancedFromCents > c.kycTiers.hardFromCents) fail('tier_thresholds_ordered', `KYC enhanced threshold ${formatMoney(c.kycTiers.enhancedFromCents)} is above the hard one ${formatMoney(c.kycTiers.hardFromCents)}`);
  if (c.amountFinanced.minCents <= 0) fail('amount_range', 'the amount-financed minimum must be above 0.00');
  if (c.amountFinanced.minCents > c.amountFinanced.maxCents) fail('amount_range_ordered', `the amount-financed minimum ${formatMoney(c.amountFinanced.minCents)} is above the maximum ${formatMoney(c.amountFinanced.maxCents)}`);
  if (c.markupCapBps.above60Months > c.markupCapBps.upTo60Months) {
    fail('markup_caps_ordered', `the markup cap above 60 months (${formatRateBps(c.markupCapBps.above60Months)}%) is above the cap up to 60 months (${formatRateBps(c.markupCapBps.upTo60Months)}%)`);
  }
  return ok ? c : null;
}

function checkTables(doc: { nodes: Array<{ id?: unknown }> }, tables: AutoLoanPolicyTables, add: Add): void {
  const gradeNode = doc.nodes.findIndex((n) => n?.id === AUTO_LOAN_GRADE_NODE_ID);
  const pricingNode = doc.nodes.findIndex((n) => n?.id === AUTO_LOAN_PRICING_NODE_ID);
  const gradePath = (i: number) => `/nodes/${gradeNode}/content/rules/${i}`;
  let previous: AutoLoanPolicyTables['grades'][number] | null = null;
  tables.grades.forEach((row, i) => {
    if (row.minScore !== null && (row.minScore < 300 || row.minScore > 850)) add(gradePath(i), 'cutoff_range', `grade ${row.grade} cut-off ${row.minScore} is outside the 300-850 score range`);
    if (row.minScore === null && i !== tables.grades.length - 1) add(gradePath(i), 'cutoffs_ordered', `grade ${row.grade} has no cut-off but is not the last row, so the grades after it are never reached`);
    if (row.maxLtvPct !== null && (row.maxLtvPct < 1 || row.maxLtvPct > 200)) add(gradePath(i), 'ltv_range', `grade ${row.grade} maximum LTV ${row.maxLtvPct}% is outside 1-200%`);
    if (previous) {
      if (previous.minScore !== null && row.minScore !== null && row.minScore >= previous.minScore) add(gradePath(i), 'cutoffs_ordered', `grade ${row.grade} cut-off ${row.minScore} is not below grade ${previous.grade}'s ${previous.minScore}`);
      if (RISK_GRADES.indexOf(row.grade) <= RISK_GRADES.indexOf(previous.grade)) add(gradePath(i), 'grades_ordered', `grade ${row.grade} comes after grade ${previous.grade}; grades run A to E from the highest score down`);
      if (BAND_RANK[row.band] < BAND_RANK[previous.band]) add(gradePath(i), 'bands_ordered', `grade ${row.grade} is in band ${row.band}, better than grade ${previous.grade}'s ${previous.band}`);
      if (row.limitCents > previous.limitCents) add(gradePath(i), 'limits_ordered', `grade ${row.grade} limit ${formatMoney(row.limitCents)} is above grade ${previous.grade}'s ${formatMoney(previous.limitCents)}`);
      if (row.maxLtvPct !== null && (previous.maxLtvPct === null || row.maxLtvPct > previous.maxLtvPct)) add(gradePath(i), 'ltv_ordered', `grade ${row.grade} maximum LTV ${row.maxLtvPct}% is above grade ${previous.grade}'s ${previous.maxLtvPct ?? 'none'}`);
    }
    previous = row;
  });
  const last = tables.grades[tables.grades.length - 1];
  if (!last || last.minScore !== null) add(`/nodes/${gradeNode}/content/rules`, 'cutoffs_ordered', 'the last grade must take every remaining score (an empty score cell)');
  // An approving grade must be priced on every term: the graph would otherwise approve without a rate.
  for (const row of tables.grades) {
    if (row.band !== 'approve') continue;
    const priced = tables.buyRates.find((r) => r.grade === row.grade);
    const missing = AUTO_LOAN_TERM_BUCKETS.filter((b) => !priced || priced.ratesBps[b] === null);
    if (missing.length > 0) add(`/nodes/${pricingNode}/content/rules`, 'rate_missing', `grade ${row.grade} is in band approve but has no buy rate for ${missing.join(', ')}`);
  }
  tables.buyRates.forEach((row, i) => {
    for (const bucket of AUTO_LOAN_TERM_BUCKETS) {
      const rate = row.ratesBps[bucket];
      if (rate === null) continue;
      const path = `/nodes/${pricingNode}/content/rules/${i}`;
      if (rate > MAX_RATE_BPS) add(path, 'rate_range', `grade ${row.grade} ${bucket} buy rate ${formatRateBps(rate)}% is above 35.99%`);
      else if (rate + tables.usedVehicleAdderBps > MAX_RATE_BPS) {
        add(path, 'rate_range', `grade ${row.grade} ${bucket} buy rate ${formatRateBps(rate)}% plus the used-vehicle adder ${formatRateBps(tables.usedVehicleAdderBps)}% is above 35.99%`);
      }
    }
  });
}

const TERMS = [36, 48, 60, 72, 84];
const LTVS = [80, 110.5, 125, 150];
const VEHICLES: ReadonlyArray<{ condition: VehicleCondition; vehicleAgeYears: number; mileage: number }> = [
  { condition: 'new', vehicleAgeYears: 0, mileage: 15 },
  { condition: 'used', vehicleAgeYears: 3, mileage: 42_000 },
  { condition: 'used', vehicleAgeYears: 6, mileage: 95_000 },
  { condition: 'used', vehicleAgeYears: 10, mileage: 160_000 },
];

async function runSamples(policy: CompiledAutoLoanPolicy, tables: AutoLoanPolicyTables | null, add: Add): Promise<void> {
  const c = policy.constants;
  const scores = sampleScores(tables);
  const amounts = [...new Set([c.amountFinanced.minCents, c.amountFinanced.maxCents])];
  const goodFile = sampleFile(true, false);
  for (const amountCents of amounts) {
    for (const termMonths of TERMS) {
      for (const vehicle of VEHICLES) {
        for (const ltvPct of LTVS) {
          let better: { score: number; grade: number; band: number; limit: number; ltv: number } | null = null;
          for (const score of scores) {
            const loan: AutoLoanTerms = { amountFinancedCents: amountCents, termMonths, ltvPct, ...vehicle };
            const out = await evaluate(policy, input(score, loan, goodFile), add);
            if (!out) continue;
            const now = { score, grade: RISK_GRADES.indexOf(out.riskGrade), band: BAND_RANK[out.band], limit: out.gradeLimitCents, ltv: out.maxLtvPct ?? -1 };
            if (better) {
              const where = `score ${score} (after ${better.score}), ${describe(loan)}`;
              if (now.grade < better.grade) add('output.riskGrade', 'grades_ordered', `a lower score gets a better grade: ${where}`);
              if (now.band < better.band) add('output.band', 'bands_ordered', `a lower score gets a better band: ${where}`);
              if (now.limit > better.limit) add('output.gradeLimitCents', 'limits_ordered', `a lower score gets a higher limit: ${where}`);
              if (now.ltv > better.ltv) add('output.maxLtvPct', 'ltv_ordered', `a lower score gets a higher maximum LTV: ${where}`);
            }
            better = now;
          }
        }
      }
    }
  }
  // Knock-out files: whatever the policy does with them, the output must hold.
  for (const file of [sampleFile(false, false), sampleFile(true, true)]) {
    for (const score of [850, 700, 300]) {
      await evaluate(policy, input(score, { amountFinancedCents: c.amountFinanced.minCents, termMonths: 60, ltvPct: 90, condition: 'used', vehicleAgeYears: 3, mileage: 40_000 }, file), add);
    }
  }
}

type Output = { riskGrade: (typeof RISK_GRADES)[number]; band: keyof typeof BAND_RANK; gradeLimitCents: number; maxLtvPct: number | null };

async function evaluate(policy: CompiledAutoLoanPolicy, policyInput: AutoLoanPolicyInput, add: Add): Promise<Output | null> {
  const f = policyInput.features;
  const where = `score ${policyInput.score}, ${describe(f)}${policyInput.credit.hasFile ? (policyInput.credit.bankruptcy ? ', bankruptcy on file' : '') : ', no credit file'}`;
  let raw: unknown;
  try {
    raw = await policy.evaluateUnchecked(policyInput);
  } catch (error) {
    add('/', 'evaluates', `the graph fails at ${where}: ${error instanceof Error ? error.message : String(error)}`);
    return null;
  }
  const problems = autoLoanPolicyOutputProblems(raw, policy.constants);
  for (const p of problems) add(`output.${p.field}`.replace(/^output\.output$/, 'output'), p.rule, `${p.message} (${where})`);
  return problems.length === 0 ? ({ maxLtvPct: null, ...(raw as object) } as Output) : null;
}

function describe(loan: Pick<AutoLoanTerms, 'amountFinancedCents' | 'termMonths' | 'ltvPct' | 'condition' | 'vehicleAgeYears' | 'mileage'>): string {
  return `${formatMoney(loan.amountFinancedCents)} over ${loan.termMonths} months at LTV ${loan.ltvPct}%, ${loan.condition} vehicle ${loan.vehicleAgeYears} years ${loan.mileage} miles`;
}

/** 850 down to 300 through every cut-off and its neighbours (the default's cut-offs too). */
function sampleScores(tables: AutoLoanPolicyTables | null): number[] {
  const set = new Set([850, 300, 720, 719, 660, 659, 620, 619, 580, 579]);
  for (const row of tables?.grades ?? []) {
    if (row.minScore === null) continue;
    for (const s of [row.minScore - 1, row.minScore]) if (s >= 300 && s <= 850) set.add(s);
  }
  return [...set].sort((a, b) => b - a);
}

function input(score: number, loan: AutoLoanTerms, file: CreditFile): AutoLoanPolicyInput {
  const features = deriveAutoLoanFeatures({ file, loan, history: { returning: false, priorApprovals: 0, priorDeclines: 0 } });
  return {
    asOf: '2026-01-15T12:00:00.000Z',
    score,
    confidence: file.hasFile ? 0.9 : 0.01,
    request: { amountFinancedCents: loan.amountFinancedCents, termMonths: loan.termMonths, condition: loan.condition },
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
