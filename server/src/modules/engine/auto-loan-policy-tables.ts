/**
 * The structured view of an auto-loan policy: what lenders change (score cut-off, band, amount
 * limit and maximum LTV per risk grade; buy rate by grade and term; the used-vehicle adder; dealer
 * markup caps and reserve share; KYC tier thresholds; the amount-financed range), read out of the
 * JDM document and written back into it, as policy-tables.ts does for BNPL (ADR 0009).
 *
 * How it works: the bundled auto-loan policy's `riskGrade` table (one `score` input, literal grade,
 * band, limit and LTV outputs) and `pricing` table (inputs `riskGrade` and `request.termMonths`,
 * cells `"A"` and one of the four term buckets `<= 48`, `60`, `72`, `84`, literal rate output) have
 * a regular shape. When a document keeps it, `readAutoLoanPolicyTables` returns the numbers and
 * `writeAutoLoanPolicyTables` rebuilds exactly those two tables' rules and the `policyConstants`
 * literals, leaving every other node (knock-outs, collateral, outcome) as it was. A reshaped graph
 * has no structured view (the reason is returned) and is edited as raw JSON. Pure.
 */
import { AutoLoanPolicyConstantsSchema, type AutoLoanPolicyConstants } from './auto-loan-policy.js';
import { inspectPolicyConstantValues, RISK_GRADES, type PolicyOutcome, type RiskGrade } from './policy.js';
import { Value } from '@sinclair/typebox/value';

/** The term buckets of the buy-rate table, as the pricing table's term cells spell them. */
export const AUTO_LOAN_TERM_BUCKETS = ['up_to_48', 'months_60', 'months_72', 'months_84'] as const;
export type AutoLoanTermBucket = (typeof AUTO_LOAN_TERM_BUCKETS)[number];
const TERM_CELL: Record<AutoLoanTermBucket, string> = { up_to_48: '<= 48', months_60: '60', months_72: '72', months_84: '84' };

export interface AutoLoanGradeRow {
  grade: RiskGrade;
  /** The lowest score of the grade (`>= N`); null for the last row, which takes every lower score. */
  minScore: number | null;
  band: PolicyOutcome;
  limitCents: number;
  /** Maximum loan-to-value, whole percent; null: no LTV is acceptable (the grade is not lent to). */
  maxLtvPct: number | null;
}

export interface AutoLoanBuyRateRow {
  grade: RiskGrade;
  /** Buy rate in basis points per term bucket; null: the grade is not priced on that term. */
  ratesBps: Record<AutoLoanTermBucket, number | null>;
}

export interface AutoLoanPolicyTables {
  grades: AutoLoanGradeRow[];
  buyRates: AutoLoanBuyRateRow[];
  usedVehicleAdderBps: number;
  markupCapBps: AutoLoanPolicyConstants['markupCapBps'];
  dealerReserveSharePct: number;
  kycTiers: AutoLoanPolicyConstants['kycTiers'];
  amountFinanced: AutoLoanPolicyConstants['amountFinanced'];
}

export const AUTO_LOAN_GRADE_NODE_ID = 'riskGrade';
export const AUTO_LOAN_PRICING_NODE_ID = 'pricing';
const CONSTANTS_NODE_ID = 'policyConstants';
const BANDS = new Set<PolicyOutcome>(['approve', 'refer', 'decline']);

interface JdmNode {
  id: string;
  type: string;
  content?: {
    inputs?: Array<{ id: string; field?: string }>;
    outputs?: Array<{ id: string; field?: string }>;
    rules?: Array<Record<string, string>>;
    expressions?: Array<{ id: string; key: string; value: string }>;
  };
}

export type ReadAutoLoanTablesResult = { tables: AutoLoanPolicyTables; reason: null } | { tables: null; reason: string };

/** The structured view, or why this document cannot have one. Throws nothing. */
export function readAutoLoanPolicyTables(document: unknown): ReadAutoLoanTablesResult {
  try {
    return { tables: readOrThrow(document), reason: null };
  } catch (error) {
    return { tables: null, reason: error instanceof Error ? error.message : String(error) };
  }
}

function readOrThrow(document: unknown): AutoLoanPolicyTables {
  // Constants whose values break an ordering rule still have a structured view; validation reports the rule.
  const { values, problems } = inspectPolicyConstantValues(document);
  if (problems.length > 0) throw new Error(problems[0]!.message);
  if (!Value.Check(AutoLoanPolicyConstantsSchema, values)) {
    const first = Value.Errors(AutoLoanPolicyConstantsSchema, values).First();
    throw new Error(`policy constants at ${first?.path ?? '/'}: ${first?.message ?? 'missing'}`);
  }
  const constants = values;
  const nodes = (document as { nodes: JdmNode[] }).nodes;
  const gradeNode = tableNode(nodes, AUTO_LOAN_GRADE_NODE_ID);
  const scoreInput = inputColumns(gradeNode, ['score'])['score']!;
  const out = columns(gradeNode, ['riskGrade', 'band', 'gradeLimitCents', 'maxLtvPct']);
  const grades: AutoLoanGradeRow[] = gradeNode.content!.rules!.map((rule, i) => {
    const where = `${AUTO_LOAN_GRADE_NODE_ID} rule ${i + 1}`;
    const cell = (rule[scoreInput] ?? '').trim();
    const match = /^>=\s*(\d+)$/.exec(cell);
    if (cell !== '' && !match) throw new Error(`${where}: score cell "${cell}" is not ">= N"`);
    const band = stringLiteral(rule[out['band']!], `${where} band`);
    if (!BANDS.has(band as PolicyOutcome)) throw new Error(`${where}: band ${band} is not approve, refer or decline`);
    const ltv = (rule[out['maxLtvPct']!] ?? '').trim();
    return {
      grade: gradeLiteral(rule[out['riskGrade']!], where),
      minScore: match ? Number(match[1]) : null,
      band: band as PolicyOutcome,
      limitCents: integerLiteral(rule[out['gradeLimitCents']!], `${where} limit`),
      maxLtvPct: ltv === 'null' ? null : integerLiteral(ltv, `${where} maximum LTV`),
    };
  });
  const pricingNode = tableNode(nodes, AUTO_LOAN_PRICING_NODE_ID);
  const inputs = inputColumns(pricingNode, ['riskGrade', 'request.termMonths']);
  const rateColumn = columns(pricingNode, ['baseRateBps'])['baseRateBps']!;
  const byGrade = new Map<RiskGrade, AutoLoanBuyRateRow>();
  for (const [i, rule] of pricingNode.content!.rules!.entries()) {
    const where = `${AUTO_LOAN_PRICING_NODE_ID} rule ${i + 1}`;
    const gradeCell = (rule[inputs['riskGrade']!] ?? '').trim();
    const termCell = (rule[inputs['request.termMonths']!] ?? '').trim();
    const rate = (rule[rateColumn] ?? '').trim();
    if (gradeCell === '' && termCell === '') {
      if (rate !== 'null') throw new Error(`${where}: the catch-all row must price nothing (null)`);
      continue; // grades and terms without a row of their own are not priced
    }
    const grade = gradeLiteral(gradeCell, where);
    const bucket = AUTO_LOAN_TERM_BUCKETS.find((b) => TERM_CELL[b] === termCell.replace(/\s+/g, ' '));
    if (!bucket) throw new Error(`${where}: term cell "${termCell}" is not one of ${Object.values(TERM_CELL).join(', ')}`);
    const row = byGrade.get(grade) ?? { grade, ratesBps: { up_to_48: null, months_60: null, months_72: null, months_84: null } };
    if (row.ratesBps[bucket] !== null) throw new Error(`${where}: grade ${grade} term ${termCell} is priced twice`);
    row.ratesBps[bucket] = rate === 'null' ? null : integerLiteral(rate, `${where} rate`);
    byGrade.set(grade, row);
  }
  return {
    grades,
    buyRates: [...byGrade.values()].sort((a, b) => RISK_GRADES.indexOf(a.grade) - RISK_GRADES.indexOf(b.grade)),
    usedVehicleAdderBps: constants.usedVehicleAdderBps,
    markupCapBps: { ...constants.markupCapBps },
    dealerReserveSharePct: constants.dealerReserveSharePct,
    kycTiers: { ...constants.kycTiers },
    amountFinanced: { ...constants.amountFinanced },
  };
}

/**
 * A copy of `document` with the two tables and the constants replaced by `tables`. The caller
 * validates the result (auto-loan-policy-validation.ts); this only rewrites. Throws when the
 * document has no structured view.
 */
export function writeAutoLoanPolicyTables(document: unknown, tables: AutoLoanPolicyTables): unknown {
  readOrThrow(document);
  const doc = structuredClone(document) as { nodes: JdmNode[] };
  const gradeNode = tableNode(doc.nodes, AUTO_LOAN_GRADE_NODE_ID);
  const scoreInput = inputColumns(gradeNode, ['score'])['score']!;
  const out = columns(gradeNode, ['riskGrade', 'band', 'gradeLimitCents', 'maxLtvPct']);
  gradeNode.content!.rules = tables.grades.map((row) => ({
    _id: `rg-${row.grade.toLowerCase()}`,
    [scoreInput]: row.minScore === null ? '' : `>= ${row.minScore}`,
    [out['riskGrade']!]: JSON.stringify(row.grade),
    [out['band']!]: JSON.stringify(row.band),
    [out['gradeLimitCents']!]: String(row.limitCents),
    [out['maxLtvPct']!]: row.maxLtvPct === null ? 'null' : String(row.maxLtvPct),
  }));
  const pricingNode = tableNode(doc.nodes, AUTO_LOAN_PRICING_NODE_ID);
  const inputs = inputColumns(pricingNode, ['riskGrade', 'request.termMonths']);
  const rateColumn = columns(pricingNode, ['baseRateBps'])['baseRateBps']!;
  const rules: Array<Record<string, string>> = [];
  for (const row of tables.buyRates) {
    for (const bucket of AUTO_LOAN_TERM_BUCKETS) {
      const rate = row.ratesBps[bucket];
      if (rate === null) continue;
      rules.push({ _id: `pr-${row.grade.toLowerCase()}-${bucket}`, [inputs['riskGrade']!]: JSON.stringify(row.grade), [inputs['request.termMonths']!]: TERM_CELL[bucket], [rateColumn]: String(rate) });
    }
  }
  rules.push({ _id: 'pr-none', [inputs['riskGrade']!]: '', [inputs['request.termMonths']!]: '', [rateColumn]: 'null' });
  pricingNode.content!.rules = rules;
  const node = doc.nodes.find((n) => n?.id === CONSTANTS_NODE_ID)!;
  const expressions = node.content!.expressions!;
  const values: Record<string, string> = {
    'policy.usedVehicleAdderBps': String(tables.usedVehicleAdderBps),
    'policy.markupCapBps.upTo60Months': String(tables.markupCapBps.upTo60Months),
    'policy.markupCapBps.above60Months': String(tables.markupCapBps.above60Months),
    'policy.dealerReserveSharePct': String(tables.dealerReserveSharePct),
    'policy.kycTiers.enhancedFromCents': String(tables.kycTiers.enhancedFromCents),
    'policy.kycTiers.hardFromCents': String(tables.kycTiers.hardFromCents),
    'policy.amountFinanced.minCents': String(tables.amountFinanced.minCents),
    'policy.amountFinanced.maxCents': String(tables.amountFinanced.maxCents),
  };
  for (const [key, value] of Object.entries(values)) {
    const entry = expressions.find((e) => e.key === key);
    if (entry) entry.value = value;
    else expressions.push({ id: `pc-${key.replace(/\W+/g, '-')}`, key, value });
  }
  return doc;
}

function tableNode(nodes: JdmNode[], id: string): JdmNode {
  const node = nodes.find((n) => n?.id === id);
  if (!node || node.type !== 'decisionTableNode' || !Array.isArray(node.content?.rules)) throw new Error(`no decision table "${id}"`);
  return node;
}

function inputColumns(node: JdmNode, fields: string[]): Record<string, string> {
  const inputs = node.content!.inputs ?? [];
  if (inputs.length !== fields.length) throw new Error(`${node.id} must have the input columns ${fields.join(', ')}`);
  const out: Record<string, string> = {};
  for (const field of fields) {
    const column = inputs.find((i) => i.field === field);
    if (!column) throw new Error(`${node.id} has no input column ${field}`);
    out[field] = column.id;
  }
  return out;
}

function columns(node: JdmNode, fields: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const field of fields) {
    const column = node.content!.outputs?.find((o) => o.field === field);
    if (!column) throw new Error(`${node.id} has no output column ${field}`);
    out[field] = column.id;
  }
  return out;
}

function stringLiteral(cell: string | undefined, where: string): string {
  const m = /^"([^"\\]*)"$/.exec((cell ?? '').trim());
  if (!m) throw new Error(`${where}: "${cell ?? ''}" is not a string literal`);
  return m[1]!;
}

function gradeLiteral(cell: string | undefined, where: string): RiskGrade {
  const grade = stringLiteral(cell, where);
  if (!(RISK_GRADES as readonly string[]).includes(grade)) throw new Error(`${where}: grade ${grade} is not one of ${RISK_GRADES.join(', ')}`);
  return grade as RiskGrade;
}

function integerLiteral(cell: string | undefined, where: string): number {
  const value = (cell ?? '').trim();
  if (!/^\d+$/.test(value)) throw new Error(`${where}: "${value}" is not a whole number`);
  return Number(value);
}
