/**
 * The structured view of a BNPL policy: the numbers lenders actually change (score cut-offs, band
 * and limit per risk grade, nominal rate per grade and plan, KYC tier thresholds, plan minimums,
 * default-plan thresholds), read out of a JDM document and written back into it.
 *
 * How it works: the bundled policy's `riskGrade` and `pricing` decision tables have a regular
 * shape (one input column, literal outputs, `>= N` score cells, `"A"` grade cells). When a document
 * keeps that shape, `readPolicyTables` returns its numbers and `writePolicyTables` rebuilds exactly
 * those two tables' rules and the `policyConstants` literals, leaving every other node, edge and
 * editor attribute as it was. A graph that has been reshaped (uploaded as raw JSON with other
 * tables) returns `null` with the reason, and is edited as raw JSON only (ADR 0009). Pure.
 */
import { BNPL_PLANS, type BnplPlan } from './features.js';
import { inspectPolicyDocument, RISK_GRADES, type PolicyConstants, type PolicyOutcome, type RiskGrade } from './policy.js';

export interface GradeRow {
  grade: RiskGrade;
  /** The lowest score of the grade (`>= N`); null for the last row, which takes every lower score. */
  minScore: number | null;
  band: PolicyOutcome;
  limitCents: number;
}

export interface PricingRow {
  grade: RiskGrade;
  /** Nominal annual rate in basis points per plan; null: the grade is not priced on that plan. */
  ratesBps: Record<BnplPlan, number | null>;
}

export interface PolicyTables {
  grades: GradeRow[];
  pricing: PricingRow[];
  kycTiers: PolicyConstants['kycTiers'];
  planMinimumCents: PolicyConstants['planMinimumCents'];
  defaultPlan: PolicyConstants['defaultPlan'];
}

export const GRADE_NODE_ID = 'riskGrade';
export const PRICING_NODE_ID = 'pricing';
const CONSTANTS_NODE_ID = 'policyConstants';

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

const PRICING_FIELDS: Record<BnplPlan, string> = { pay_in_4: 'ratesBps.pay_in_4', pay_in_6: 'ratesBps.pay_in_6', monthly: 'ratesBps.monthly' };
const BANDS = new Set<PolicyOutcome>(['approve', 'refer', 'decline']);

export type ReadTablesResult = { tables: PolicyTables; reason: null } | { tables: null; reason: string };

/** The structured view, or why this document cannot have one. Throws nothing. */
export function readPolicyTables(document: unknown): ReadTablesResult {
  try {
    return { tables: readOrThrow(document), reason: null };
  } catch (error) {
    return { tables: null, reason: error instanceof Error ? error.message : String(error) };
  }
}

function readOrThrow(document: unknown): PolicyTables {
  // Constants whose values break a rule (tiers out of order) still have a structured view; validation reports the rule.
  const { constants, problems } = inspectPolicyDocument(document);
  if (!constants) throw new Error(problems[0]?.message ?? 'no policy constants');
  const nodes = (document as { nodes: JdmNode[] }).nodes;
  const gradeNode = tableNode(nodes, GRADE_NODE_ID);
  const scoreInput = single(gradeNode.content!.inputs, 'score', GRADE_NODE_ID);
  const out = columns(gradeNode, ['riskGrade', 'band', 'gradeLimitCents']);
  const grades: GradeRow[] = gradeNode.content!.rules!.map((rule, i) => {
    const cell = (rule[scoreInput] ?? '').trim();
    const match = /^>=\s*(\d+)$/.exec(cell);
    if (cell !== '' && !match) throw new Error(`${GRADE_NODE_ID} rule ${i + 1}: score cell "${cell}" is not ">= N"`);
    const band = stringLiteral(rule[out.band!], `${GRADE_NODE_ID} rule ${i + 1} band`);
    if (!BANDS.has(band as PolicyOutcome)) throw new Error(`${GRADE_NODE_ID} rule ${i + 1}: band ${band} is not approve, refer or decline`);
    return {
      grade: gradeLiteral(rule[out.riskGrade!], `${GRADE_NODE_ID} rule ${i + 1}`),
      minScore: match ? Number(match[1]) : null,
      band: band as PolicyOutcome,
      limitCents: integerLiteral(rule[out.gradeLimitCents!], `${GRADE_NODE_ID} rule ${i + 1} limit`),
    };
  });
  const pricingNode = tableNode(nodes, PRICING_NODE_ID);
  const gradeInput = single(pricingNode.content!.inputs, 'riskGrade', PRICING_NODE_ID);
  const rateColumns = columns(pricingNode, Object.values(PRICING_FIELDS));
  const pricing: PricingRow[] = [];
  for (const [i, rule] of pricingNode.content!.rules!.entries()) {
    const cell = (rule[gradeInput] ?? '').trim();
    if (cell === '') continue; // the catch-all: grades without a row of their own are not priced
    const grade = gradeLiteral(cell, `${PRICING_NODE_ID} rule ${i + 1}`);
    const ratesBps = {} as Record<BnplPlan, number | null>;
    for (const plan of BNPL_PLANS) {
      const value = (rule[rateColumns[PRICING_FIELDS[plan]]!] ?? '').trim();
      ratesBps[plan] = value === 'null' ? null : integerLiteral(value, `${PRICING_NODE_ID} rule ${i + 1} ${plan}`);
    }
    pricing.push({ grade, ratesBps });
  }
  return {
    grades,
    pricing,
    kycTiers: { ...constants.kycTiers },
    planMinimumCents: { ...constants.planMinimumCents },
    defaultPlan: { ...constants.defaultPlan },
  };
}

/**
 * A copy of `document` with the tables and constants replaced by `tables`. The caller validates
 * the result (policy-validation.ts); this only rewrites. Throws when the document has no
 * structured view (readPolicyTables says why).
 */
export function writePolicyTables(document: unknown, tables: PolicyTables): unknown {
  readOrThrow(document);
  const doc = structuredClone(document) as { nodes: JdmNode[] };
  const gradeNode = tableNode(doc.nodes, GRADE_NODE_ID);
  const scoreInput = single(gradeNode.content!.inputs, 'score', GRADE_NODE_ID);
  const out = columns(gradeNode, ['riskGrade', 'band', 'gradeLimitCents']);
  gradeNode.content!.rules = tables.grades.map((row) => ({
    _id: `rg-${row.grade.toLowerCase()}`,
    [scoreInput]: row.minScore === null ? '' : `>= ${row.minScore}`,
    [out.riskGrade!]: JSON.stringify(row.grade),
    [out.band!]: JSON.stringify(row.band),
    [out.gradeLimitCents!]: String(row.limitCents),
  }));
  const pricingNode = tableNode(doc.nodes, PRICING_NODE_ID);
  const gradeInput = single(pricingNode.content!.inputs, 'riskGrade', PRICING_NODE_ID);
  const rateColumns = columns(pricingNode, Object.values(PRICING_FIELDS));
  const rateCells = (rates: Record<BnplPlan, number | null>) =>
    Object.fromEntries(BNPL_PLANS.map((plan) => [rateColumns[PRICING_FIELDS[plan]]!, rates[plan] === null ? 'null' : String(rates[plan])]));
  pricingNode.content!.rules = [
    ...tables.pricing.map((row) => ({ _id: `pr-${row.grade.toLowerCase()}`, [gradeInput]: JSON.stringify(row.grade), ...rateCells(row.ratesBps) })),
    { _id: 'pr-none', [gradeInput]: '', ...rateCells({ pay_in_4: null, pay_in_6: null, monthly: null }) },
  ];
  setConstants(doc, {
    'policy.kycTiers.enhancedFromCents': String(tables.kycTiers.enhancedFromCents),
    'policy.kycTiers.hardFromCents': String(tables.kycTiers.hardFromCents),
    'policy.planMinimumCents.pay_in_4': String(tables.planMinimumCents.pay_in_4),
    'policy.planMinimumCents.pay_in_6': String(tables.planMinimumCents.pay_in_6),
    'policy.planMinimumCents.monthly': String(tables.planMinimumCents.monthly),
    'policy.defaultPlan.payIn4UpToCents': String(tables.defaultPlan.payIn4UpToCents),
    'policy.defaultPlan.payIn6UpToCents': String(tables.defaultPlan.payIn6UpToCents),
  });
  return doc;
}

/**
 * A copy of `document` naming the version, tenant and environment it is stored as. The service
 * assigns these (a stored version's identity is never the uploader's to choose), so an upload of
 * the bundled file, or of another environment's version, becomes this scope's next version.
 */
export function withPolicyIdentity(document: unknown, identity: { version: string; tenant: string; environment: 'sandbox' | 'live' }): unknown {
  if (!document || typeof document !== 'object' || !Array.isArray((document as { nodes?: unknown }).nodes)) return document;
  const doc = structuredClone(document) as { nodes: JdmNode[] };
  const node = doc.nodes.find((n) => n?.id === CONSTANTS_NODE_ID);
  if (!node || node.type !== 'expressionNode' || !Array.isArray(node.content?.expressions)) return doc;
  setConstants(doc, {
    'policy.version': JSON.stringify(identity.version),
    'policy.tenant': JSON.stringify(identity.tenant),
    'policy.environment': JSON.stringify(identity.environment),
  });
  return doc;
}

function setConstants(doc: { nodes: JdmNode[] }, values: Record<string, string>): void {
  const node = doc.nodes.find((n) => n?.id === CONSTANTS_NODE_ID)!;
  const expressions = node.content!.expressions!;
  for (const [key, value] of Object.entries(values)) {
    const entry = expressions.find((e) => e.key === key);
    if (entry) entry.value = value;
    else expressions.push({ id: `pc-${key.replace(/\W+/g, '-')}`, key, value });
  }
}

function tableNode(nodes: JdmNode[], id: string): JdmNode {
  const node = nodes.find((n) => n?.id === id);
  if (!node || node.type !== 'decisionTableNode' || !Array.isArray(node.content?.rules)) throw new Error(`no decision table "${id}"`);
  return node;
}

function single(inputs: Array<{ id: string; field?: string }> | undefined, field: string, table: string): string {
  if (!inputs || inputs.length !== 1 || inputs[0]!.field !== field) throw new Error(`${table} must have one input column, ${field}`);
  return inputs[0]!.id;
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
