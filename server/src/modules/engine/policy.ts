/**
 * The credit policy: a GoRules JDM decision graph, one versioned JSON document per tenant and
 * environment, evaluated by ZEN (@gorules/zen-engine, Rust core).
 *
 * How a policy document works:
 * - It is an ordinary JDM graph (inputNode -> expressionNode / decisionTableNode ... -> outputNode),
 *   so it opens, edits and simulates in GoRules' open-source editor. Only data-only node kinds are
 *   accepted: no function nodes (JavaScript is code, not policy data) and no sub-decisions.
 * - The expression node with id `policyConstants` holds the policy's identity and plain values:
 *   `policy.version`, `policy.tenant`, `policy.environment`, KYC tier thresholds, plan minimums and
 *   the default plan pick. Each is a literal, so it can also be read without evaluating the graph
 *   (`kycTierFor` is synchronous and runs before any decision).
 * - The graph's output is checked against PolicyOutputSchema and a few invariants (a pay_in_4 rate
 *   of 0, rates within 0-35.99%, an offer never above the request) on every evaluation: a bad edit
 *   fails loudly instead of approving on garbage.
 * - Evaluations run as JavaScript compiled from the document where the compiler can match ZEN
 *   exactly (jdm-compiler.ts, ADR 0020); ZEN evaluates the rest and checks the compiled answers.
 * Compile once (`compilePolicy`) and reuse; `evaluate` is async because ZEN is.
 */
import type { ZenDecision, ZenEngine } from '@gorules/zen-engine';
import { Type, type Static } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import { isAdverseActionCode, type AdverseActionCode } from './adverse-action-reasons.js';
import { BNPL_PLANS, type BnplFeatures, type BnplPlan } from './features.js';
import { evaluatorFor } from './jdm-compiler.js';
import { DATA_ONLY_NODE_TYPES, inputFields, policyInputFor } from './policy-input.js';
import { zenModule } from './zen.js';

export const RISK_GRADES = ['A', 'B', 'C', 'D', 'E'] as const;
export type RiskGrade = (typeof RISK_GRADES)[number];
export type PolicyOutcome = 'approve' | 'refer' | 'decline';
export type KycTier = 'soft' | 'enhanced' | 'hard';

/** Highest nominal annual rate any plan may carry: 35.99% (decisions.md section 3). */
export const MAX_RATE_BPS = 3599;

const CONSTANTS_NODE_ID = 'policyConstants';

const Cents = Type.Integer({ minimum: 0 });

const PolicyConstantsSchema = Type.Object({
  version: Type.String({ minLength: 1 }),
  product: Type.Literal('bnpl'),
  /** A tenant id, or "*" for the default every tenant without its own policy gets. */
  tenant: Type.String({ minLength: 1 }),
  environment: Type.Union([Type.Literal('sandbox'), Type.Literal('live'), Type.Literal('*')]),
  kycTiers: Type.Object({ enhancedFromCents: Cents, hardFromCents: Cents }),
  planMinimumCents: Type.Object({ pay_in_4: Cents, pay_in_6: Cents, monthly: Cents }),
  defaultPlan: Type.Object({ payIn4UpToCents: Cents, payIn6UpToCents: Cents }),
});
export type PolicyConstants = Static<typeof PolicyConstantsSchema>;

const NullableRate = Type.Union([Type.Integer(), Type.Null()]);
const PolicyOutputSchema = Type.Object({
  policyVersion: Type.String(),
  riskGrade: Type.Union(RISK_GRADES.map((g) => Type.Literal(g))),
  band: Type.Union([Type.Literal('approve'), Type.Literal('refer'), Type.Literal('decline')]),
  outcome: Type.Union([Type.Literal('approve'), Type.Literal('refer'), Type.Literal('decline')]),
  outcomeRule: Type.String({ minLength: 1 }),
  knockoutCodes: Type.Array(Type.String()),
  gradeLimitCents: Cents,
  offerAmountCents: Cents,
  counteroffer: Type.Boolean(),
  planMinimumCents: Cents,
  fitsPlan: Type.Boolean(),
  rateBps: NullableRate,
  ratesBps: Type.Object({ pay_in_4: NullableRate, pay_in_6: NullableRate, monthly: NullableRate }),
});

/** What the policy graph decides, validated. Rates are nominal annual rates in basis points. */
export interface PolicyOutput extends Omit<Static<typeof PolicyOutputSchema>, 'knockoutCodes'> {
  knockoutCodes: AdverseActionCode[];
  riskGrade: RiskGrade;
  outcome: PolicyOutcome;
  band: PolicyOutcome;
}

/** The context the graph sees. Field names here are the ones the JDM tables reference. */
export interface PolicyInput {
  asOf: string;
  score: number;
  confidence: number;
  request: { amountCents: number; plan: BnplPlan };
  credit: { hasFile: boolean; bankruptcy: boolean | null };
  features: BnplFeatures;
}

/** Every top-level field of PolicyInput (policy-input.ts gives ZEN those the document reads). */
const POLICY_INPUT_FIELDS = inputFields<PolicyInput>({ asOf: true, score: true, confidence: true, request: true, credit: true, features: true });

export interface CompiledPolicy {
  readonly version: string;
  readonly constants: PolicyConstants;
  /** The JDM document as loaded (kept so an audit can show exactly what decided). */
  readonly document: unknown;
  evaluate(input: PolicyInput): Promise<PolicyOutput>;
  /** The graph's raw result, unchecked (policy validation checks it itself, collecting every problem). */
  evaluateUnchecked(input: PolicyInput): Promise<unknown>;
}

export class PolicyDocumentError extends Error {
  override readonly name = 'PolicyDocumentError';
}

export class PolicyEvaluationError extends Error {
  override readonly name = 'PolicyEvaluationError';
}

let zen: ZenEngine | undefined;
/** One ZEN engine per process (every product's policy); decisions compiled from it are independent and reusable. */
export function zenEngine(): ZenEngine {
  zen ??= new (zenModule().ZenEngine)();
  return zen;
}

/** Validate and compile a JDM policy document. Throws PolicyDocumentError on a bad document. */
export function compilePolicy(document: unknown): CompiledPolicy {
  const doc = structuredClone(document);
  const constants = readPolicyConstants(doc);
  let decision: ZenDecision;
  try {
    decision = zenEngine().createDecision(doc as object);
    decision.validate();
  } catch (error) {
    throw new PolicyDocumentError(`policy ${constants.version} does not compile: ${errorText(error)}`);
  }
  const frozenDoc = deepFreeze(doc);
  const evaluateGraph = graphEvaluation<PolicyInput>(frozenDoc, decision, POLICY_INPUT_FIELDS, constants.version);
  return Object.freeze({
    version: constants.version,
    constants,
    document: frozenDoc,
    evaluate: (input: PolicyInput) => evaluateCompiled(evaluateGraph, constants, input),
    evaluateUnchecked: evaluateGraph,
  });
}

/**
 * A compiled document's raw evaluation, for either product: given the input fields the document
 * reads, their numbers checked (policy-input.ts), by the graph compiled to JavaScript where it can
 * be and ZEN otherwise, ZEN judging (jdm-compiler.ts).
 */
export function graphEvaluation<T extends object>(document: unknown, decision: ZenDecision, fields: readonly (keyof T & string)[], version: string): (input: T) => Promise<unknown> {
  const given = policyInputFor<T>(document, fields);
  const evaluate = evaluatorFor(document, async (input) => (await decision.evaluate(input)).result as unknown, version);
  return async (input) => evaluate(given(input));
}

async function evaluateCompiled(evaluateGraph: (input: PolicyInput) => Promise<unknown>, constants: PolicyConstants, input: PolicyInput): Promise<PolicyOutput> {
  let raw: unknown;
  try {
    raw = await evaluateGraph(input);
  } catch (error) {
    throw new PolicyEvaluationError(`policy ${constants.version} failed: ${errorText(error)}`);
  }
  return checkPolicyOutput(raw, constants, input);
}

function checkPolicyOutput(raw: unknown, constants: PolicyConstants, input: PolicyInput): PolicyOutput {
  const problems = policyOutputProblems(raw, constants, input);
  if (problems.length > 0) throw new PolicyEvaluationError(`policy ${constants.version}: ${problems[0]!.message}`);
  return { rateBps: null, ...(raw as Record<string, unknown>) } as PolicyOutput;
}

/**
 * The output schema compiled to a checking function once, on first use: every decision checks its
 * output, and TypeBox's interpreting `Value.Check` cost more than the rest of the check (the
 * rare failing output still gets `Value.Errors`' messages). Lazily, so start-up does not pay.
 */
let compiledOutputCheck: TypeCheck<typeof PolicyOutputSchema> | undefined;
const outputChecker = () => (compiledOutputCheck ??= TypeCompiler.Compile(PolicyOutputSchema));

/** The fields a policy graph returns: exactly these (the engine reads nothing else from a policy). */
export const POLICY_OUTPUT_FIELDS = Object.keys(PolicyOutputSchema.properties) as readonly string[];

export interface PolicyOutputProblem {
  /** The output field at fault, e.g. `ratesBps.monthly`; `output` for the object as a whole. */
  field: string;
  rule: string;
  message: string;
}

/**
 * Everything wrong with one evaluation's output: the schema (every error, not only the first) and
 * the invariants. Empty when the output can be used. Policy validation (policy-validation.ts)
 * runs this over a battery of inputs; `evaluate` runs it on every decision and fails on the first.
 */
export function policyOutputProblems(raw: unknown, constants: PolicyConstants, input: PolicyInput): PolicyOutputProblem[] {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return [{ field: 'output', rule: 'output_schema', message: 'the graph returned no object' }];
  // ZEN leaves a key out when its expression is null; the contract spells such values as null.
  const out: Record<string, unknown> = { rateBps: null, ...(raw as Record<string, unknown>) };
  if (!outputChecker().Check(out)) {
    return [...Value.Errors(PolicyOutputSchema, out)].map((e) => {
      const field = e.path.replace(/^\//, '').replace(/\//g, '.') || 'output';
      return { field, rule: 'output_schema', message: `unexpected output at ${e.path || '/'}: ${e.message}` };
    });
  }
  const problems: PolicyOutputProblem[] = [];
  const add = (field: string, rule: string, message: string) => problems.push({ field, rule, message });
  const typed = out as Static<typeof PolicyOutputSchema>;
  for (const key of Object.keys(out)) {
    if (!POLICY_OUTPUT_FIELDS.includes(key)) add(key, 'output_contract', `unexpected output field ${key}: a policy returns only ${POLICY_OUTPUT_FIELDS.join(', ')}`);
  }
  if (typed.policyVersion !== constants.version) add('policyVersion', 'version_consistent', `graph reports version ${typed.policyVersion}`);
  for (const code of typed.knockoutCodes) {
    if (!isAdverseActionCode(code)) add('knockoutCodes', 'adverse_action_code_known', `knock-out code ${code} is not in the registry`);
  }
  for (const plan of BNPL_PLANS) {
    const rate = typed.ratesBps[plan];
    if (rate !== null && (rate < 0 || rate > MAX_RATE_BPS)) add(`ratesBps.${plan}`, 'rate_range', `${plan} rate ${rate} bps is outside 0-${MAX_RATE_BPS}`);
  }
  // pay_in_4 is the fee-free product; a rate there would make it a different product.
  if (typed.ratesBps.pay_in_4 !== null && typed.ratesBps.pay_in_4 !== 0) add('ratesBps.pay_in_4', 'pay_in_4_free', 'pay_in_4 must be priced at 0 bps');
  if (typed.offerAmountCents > input.request.amountCents) add('offerAmountCents', 'offer_within_request', 'offer above the requested amount');
  if (typed.outcome === 'approve' && (typed.rateBps === null || !typed.fitsPlan || typed.knockoutCodes.length > 0)) {
    add('outcome', 'approval_complete', 'an approval needs a rate, an offer within the plan and no knock-out');
  }
  return problems;
}

/** Read the `policyConstants` node without evaluating the graph. */
export function readPolicyConstants(document: unknown): PolicyConstants {
  const inspected = inspectPolicyDocument(document);
  const first = inspected.problems[0];
  if (first || !inspected.constants) throw new PolicyDocumentError(`invalid policy document: ${first?.message ?? 'no constants'}`);
  return inspected.constants;
}

/** One thing wrong with a policy document: where (a JSON pointer), which rule, in words. */
export interface PolicyDocumentProblem {
  path: string;
  rule: string;
  message: string;
}

/**
 * The `policy` object of a JDM document's `policyConstants` node, each value a literal evaluated
 * without context, after checking the graph uses only data-only node kinds. Shared by every
 * product's policy loader (auto loans: auto-loan-policy.ts); each checks the values against its
 * own schema. Throws on the first problem.
 */
export function readPolicyConstantValues(document: unknown): unknown {
  const inspected = inspectPolicyConstantValues(document);
  const first = inspected.problems[0];
  if (first) throw new PolicyDocumentError(`invalid policy document: ${first.message}`);
  return inspected.values;
}

/**
 * The product-independent static checks, every problem at once: a JDM graph of allowed node kinds
 * and a `policyConstants` node of literals. `values` is its `policy` object (unchecked).
 */
export function inspectPolicyConstantValues(document: unknown): { values: unknown; constantsPath: string | null; problems: PolicyDocumentProblem[] } {
  const problems: PolicyDocumentProblem[] = [];
  const add = (path: string, rule: string, message: string) => problems.push({ path, rule, message });
  if (!document || typeof document !== 'object' || Array.isArray(document)) {
    add('/', 'jdm_graph', 'not an object');
    return { values: null, constantsPath: null, problems };
  }
  const { nodes, edges } = document as { nodes?: unknown; edges?: unknown };
  if (!Array.isArray(nodes) || !Array.isArray(edges)) {
    add(Array.isArray(nodes) ? '/edges' : '/nodes', 'jdm_graph', 'a JDM graph needs nodes and edges');
    return { values: null, constantsPath: null, problems };
  }
  (nodes as Array<{ type?: unknown; id?: unknown }>).forEach((node, i) => {
    if (typeof node?.type !== 'string' || !DATA_ONLY_NODE_TYPES.has(node.type)) {
      add(`/nodes/${i}/type`, 'node_kind_allowed', `node ${String(node?.id)} has kind ${String(node?.type)}; allowed: ${[...DATA_ONLY_NODE_TYPES].join(', ')}`);
    }
  });
  const index = (nodes as Array<{ id?: unknown }>).findIndex((node) => node?.id === CONSTANTS_NODE_ID);
  const constantsNode = nodes[index] as { type?: unknown; content?: { expressions?: unknown } } | undefined;
  if (!constantsNode || constantsNode.type !== 'expressionNode' || !Array.isArray(constantsNode.content?.expressions)) {
    add(index < 0 ? '/nodes' : `/nodes/${index}`, 'policy_constants', `an expressionNode with id "${CONSTANTS_NODE_ID}" is required`);
    return { values: null, constantsPath: null, problems };
  }
  const values: Record<string, unknown> = {};
  (constantsNode.content.expressions as Array<{ key?: unknown; value?: unknown }>).forEach((entry, i) => {
    const path = `/nodes/${index}/content/expressions/${i}`;
    if (typeof entry?.key !== 'string' || typeof entry.value !== 'string') {
      add(path, 'policy_constants', 'policy constants need a key and a value');
      return;
    }
    try {
      // Evaluated with an empty context: a constant that references anything else is rejected.
      setPath(values, entry.key.split('.'), zenModule().evaluateExpressionSync(entry.value, {}));
    } catch (error) {
      add(`${path}/value`, 'constant_literal', `constant ${entry.key}: ${errorText(error)}`);
    }
  });
  return { values: values['policy'], constantsPath: `/nodes/${index}/content/expressions`, problems };
}

/**
 * The static checks of a BNPL policy document, every problem at once (the upload form lists them
 * all): the graph and constants above, then the constants against the BNPL schema and their order.
 */
export function inspectPolicyDocument(document: unknown): { constants: PolicyConstants | null; problems: PolicyDocumentProblem[] } {
  const { values: policy, constantsPath, problems } = inspectPolicyConstantValues(document);
  // No constants node to read: nothing more to check. Otherwise go on, so every problem is listed.
  if (constantsPath === null) return { constants: null, problems };
  const add = (rule: string, message: string) => problems.push({ path: constantsPath, rule, message });
  if (!Value.Check(PolicyConstantsSchema, policy)) {
    const seen = new Set<string>();
    for (const e of Value.Errors(PolicyConstantsSchema, policy)) {
      // TypeBox reports a missing value twice (required, then its type): once per constant is enough.
      if (seen.has(e.path)) continue;
      seen.add(e.path);
      add('policy_constants', `policy constants at ${e.path || '/'}: ${e.message}`);
    }
    return { constants: null, problems };
  }
  if (policy.kycTiers.enhancedFromCents > policy.kycTiers.hardFromCents) add('tier_thresholds_ordered', 'KYC enhanced threshold is above the hard one');
  if (policy.defaultPlan.payIn4UpToCents > policy.defaultPlan.payIn6UpToCents) add('default_plan_ordered', 'default plan thresholds are out of order');
  return { constants: deepFreeze(policy), problems };
}

/** Any product's policy (compiled, or its constants): each carries the KYC tier thresholds. */
export type KycTierSource = { constants: Pick<PolicyConstants, 'kycTiers'> } | Pick<PolicyConstants, 'kycTiers'>;

/** KYC tier for an amount under a policy: below enhancedFrom soft, below hardFrom enhanced, else hard. */
export function kycTierFor(amountCents: number, policy: KycTierSource): KycTier {
  const { kycTiers } = 'constants' in policy ? policy.constants : policy;
  if (amountCents >= kycTiers.hardFromCents) return 'hard';
  if (amountCents >= kycTiers.enhancedFromCents) return 'enhanced';
  return 'soft';
}

/** The plan the service picks without a preference (decisions.md section 3), thresholds from the policy. */
export function defaultPlanFor(amountCents: number, policy: CompiledPolicy | PolicyConstants): BnplPlan {
  const { defaultPlan } = 'constants' in policy ? policy.constants : policy;
  if (amountCents <= defaultPlan.payIn4UpToCents) return 'pay_in_4';
  if (amountCents <= defaultPlan.payIn6UpToCents) return 'pay_in_6';
  return 'monthly';
}

export type Environment = 'sandbox' | 'live';

export interface PolicyCatalog {
  readonly policies: readonly CompiledPolicy[];
  /** The most specific policy: tenant+environment, then tenant, then environment, then the default. */
  resolve(tenantId: string, environment: Environment): CompiledPolicy;
}

export function createPolicyCatalog(policies: readonly CompiledPolicy[]): PolicyCatalog {
  const byScope = new Map<string, CompiledPolicy>();
  for (const policy of policies) {
    const key = `${policy.constants.tenant}\u0000${policy.constants.environment}`;
    if (byScope.has(key)) {
      throw new PolicyDocumentError(`two policies for tenant ${policy.constants.tenant}, environment ${policy.constants.environment}`);
    }
    byScope.set(key, policy);
  }
  return {
    policies: [...policies],
    resolve(tenantId, environment) {
      for (const [tenant, env] of [
        [tenantId, environment],
        [tenantId, '*'],
        ['*', environment],
        ['*', '*'],
      ] as const) {
        const found = byScope.get(`${tenant}\u0000${env}`);
        if (found) return found;
      }
      throw new PolicyDocumentError(`no policy for tenant ${tenantId} in ${environment} and no default`);
    },
  };
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  path.forEach((part, i) => {
    if (i === path.length - 1) {
      node[part] = value;
      return;
    }
    const next = node[part];
    if (!next || typeof next !== 'object') node[part] = {};
    node = node[part] as Record<string, unknown>;
  });
}

export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === 'string' ? error : JSON.stringify(error);
}

export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
