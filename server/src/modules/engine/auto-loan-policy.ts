/**
 * The auto-loan credit policy: a GoRules JDM graph like the BNPL policy (policy.ts explains the
 * format and the `policyConstants` node), with its own constants and output contract.
 *
 * What the default graph decides (policies/auto-loan-policy-v1.json):
 *   knock-outs (no credit file AA-14, bankruptcy AA-21)
 *   -> risk grade by score, with the grade's amount-financed limit and maximum loan-to-value
 *   -> collateral rules (AA-23): LTV above the grade's maximum, mileage or vehicle age above the
 *      maximum, a term too long for the vehicle's age
 *   -> buy rate by grade and term, plus the used-vehicle adder
 *   -> outcome: knock-out or collateral -> decline; income not verifiable -> refer (proof of income);
 *      approve band within the limit -> approve; above the limit -> refer; refer band -> refer;
 *      else decline.
 * The constants also carry what the service needs before any evaluation: KYC tier thresholds, the
 * amount-financed range, the dealer markup caps by term and the dealer's reserve share.
 */
import type { ZenDecision } from '@gorules/zen-engine';
import { Type, type Static } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import { isAdverseActionCode, type AdverseActionCode } from './adverse-action-reasons.js';
import type { AutoLoanFeatures, VehicleCondition } from './auto-loan-features.js';
import { inputFields } from './policy-input.js';
import { deepFreeze, errorText, graphEvaluation, MAX_RATE_BPS, PolicyDocumentError, PolicyEvaluationError, readPolicyConstantValues, RISK_GRADES, zenEngine, type PolicyOutcome, type RiskGrade } from './policy.js';

const Cents = Type.Integer({ minimum: 0 });
const Bps = Type.Integer({ minimum: 0, maximum: MAX_RATE_BPS });

export const AutoLoanPolicyConstantsSchema = Type.Object({
  version: Type.String({ minLength: 1 }),
  product: Type.Literal('auto_loan'),
  tenant: Type.String({ minLength: 1 }),
  environment: Type.Union([Type.Literal('sandbox'), Type.Literal('live'), Type.Literal('*')]),
  kycTiers: Type.Object({ enhancedFromCents: Cents, hardFromCents: Cents }),
  amountFinanced: Type.Object({ minCents: Cents, maxCents: Cents }),
  /** Dealer markup caps in basis points: terms up to 60 months, and above. */
  markupCapBps: Type.Object({ upTo60Months: Bps, above60Months: Bps }),
  /** Dealer participation: share of the markup's extra finance charge paid to the dealer, percent. */
  dealerReserveSharePct: Type.Integer({ minimum: 0, maximum: 100 }),
  usedVehicleAdderBps: Bps,
  vehicle: Type.Object({ maxMileage: Type.Integer({ minimum: 0 }), maxAgeYears: Type.Integer({ minimum: 0 }) }),
});
export type AutoLoanPolicyConstants = Static<typeof AutoLoanPolicyConstantsSchema>;

const AutoLoanPolicyOutputSchema = Type.Object({
  policyVersion: Type.String(),
  riskGrade: Type.Union(RISK_GRADES.map((g) => Type.Literal(g))),
  band: Type.Union([Type.Literal('approve'), Type.Literal('refer'), Type.Literal('decline')]),
  outcome: Type.Union([Type.Literal('approve'), Type.Literal('refer'), Type.Literal('decline')]),
  outcomeRule: Type.String({ minLength: 1 }),
  knockoutCodes: Type.Array(Type.String()),
  collateralCodes: Type.Array(Type.String()),
  collateralRules: Type.Array(Type.String()),
  gradeLimitCents: Cents,
  maxLtvPct: Type.Union([Type.Number(), Type.Null()]),
  withinLimit: Type.Boolean(),
  buyRateBps: Type.Union([Type.Integer(), Type.Null()]),
});

export interface AutoLoanPolicyOutput extends Omit<Static<typeof AutoLoanPolicyOutputSchema>, 'knockoutCodes' | 'collateralCodes'> {
  knockoutCodes: AdverseActionCode[];
  collateralCodes: AdverseActionCode[];
  riskGrade: RiskGrade;
  outcome: PolicyOutcome;
  band: PolicyOutcome;
}

export interface AutoLoanPolicyInput {
  asOf: string;
  score: number;
  confidence: number;
  request: { amountFinancedCents: number; termMonths: number; condition: VehicleCondition };
  credit: { hasFile: boolean; bankruptcy: boolean | null };
  features: AutoLoanFeatures;
}

/** Every top-level field of AutoLoanPolicyInput (policy-input.ts gives ZEN those the document reads). */
const AUTO_LOAN_POLICY_INPUT_FIELDS = inputFields<AutoLoanPolicyInput>({ asOf: true, score: true, confidence: true, request: true, credit: true, features: true });

export interface CompiledAutoLoanPolicy {
  readonly version: string;
  readonly constants: AutoLoanPolicyConstants;
  readonly document: unknown;
  evaluate(input: AutoLoanPolicyInput): Promise<AutoLoanPolicyOutput>;
  /** The graph's raw result, unchecked: for validation, which lists every contract problem. */
  evaluateUnchecked(input: AutoLoanPolicyInput): Promise<unknown>;
}

export function readAutoLoanPolicyConstants(document: unknown): AutoLoanPolicyConstants {
  const policy = readPolicyConstantValues(document);
  const fail = (message: string): never => {
    throw new PolicyDocumentError(`invalid auto-loan policy document: ${message}`);
  };
  if (!Value.Check(AutoLoanPolicyConstantsSchema, policy)) {
    const first = Value.Errors(AutoLoanPolicyConstantsSchema, policy).First();
    return fail(`policy constants at ${first?.path ?? '/'}: ${first?.message ?? 'missing'}`);
  }
  if (policy.kycTiers.enhancedFromCents > policy.kycTiers.hardFromCents) fail('KYC enhanced threshold is above the hard one');
  if (policy.amountFinanced.minCents <= 0 || policy.amountFinanced.minCents > policy.amountFinanced.maxCents) fail('amount-financed range is empty');
  return deepFreeze(policy);
}

export function compileAutoLoanPolicy(document: unknown): CompiledAutoLoanPolicy {
  const doc = structuredClone(document);
  const constants = readAutoLoanPolicyConstants(doc);
  let decision: ZenDecision;
  try {
    decision = zenEngine().createDecision(doc as object);
    decision.validate();
  } catch (error) {
    throw new PolicyDocumentError(`policy ${constants.version} does not compile: ${errorText(error)}`);
  }
  const frozenDoc = deepFreeze(doc);
  const evaluateGraph = graphEvaluation<AutoLoanPolicyInput>(frozenDoc, decision, AUTO_LOAN_POLICY_INPUT_FIELDS, constants.version);
  return Object.freeze({
    version: constants.version,
    constants,
    document: frozenDoc,
    evaluate: async (input: AutoLoanPolicyInput) => {
      let raw: unknown;
      try {
        raw = await evaluateGraph(input);
      } catch (error) {
        throw new PolicyEvaluationError(`policy ${constants.version} failed: ${errorText(error)}`);
      }
      return checkOutput(raw, constants);
    },
    evaluateUnchecked: evaluateGraph,
  });
}

function checkOutput(raw: unknown, constants: AutoLoanPolicyConstants): AutoLoanPolicyOutput {
  const first = autoLoanPolicyOutputProblems(raw, constants)[0];
  if (first) throw new PolicyEvaluationError(`policy ${constants.version}: ${first.message}`);
  return { buyRateBps: null, maxLtvPct: null, ...(raw as object) } as AutoLoanPolicyOutput;
}

/** The output schema compiled once, on first use (as the BNPL policy's: policy.ts). */
let compiledOutputCheck: TypeCheck<typeof AutoLoanPolicyOutputSchema> | undefined;
const outputChecker = () => (compiledOutputCheck ??= TypeCompiler.Compile(AutoLoanPolicyOutputSchema));

/**
 * Every way a graph result breaks the auto-loan output contract (empty: it holds). The engine
 * refuses an output with any (checkOutput); policy validation lists them all for sample inputs.
 */
export function autoLoanPolicyOutputProblems(raw: unknown, constants: AutoLoanPolicyConstants): Array<{ field: string; rule: string; message: string }> {
  const problems: Array<{ field: string; rule: string; message: string }> = [];
  if (!raw || typeof raw !== 'object') return [{ field: 'output', rule: 'output_contract', message: 'the graph returned no object' }];
  // ZEN leaves a key out when its expression is null; the contract spells such values as null.
  const out: Record<string, unknown> = { buyRateBps: null, maxLtvPct: null, ...(raw as Record<string, unknown>) };
  if (!outputChecker().Check(out)) {
    const seen = new Set<string>();
    for (const e of Value.Errors(AutoLoanPolicyOutputSchema, out)) {
      if (seen.has(e.path)) continue;
      seen.add(e.path);
      problems.push({ field: e.path.slice(1).replace(/\//g, '.') || 'output', rule: 'output_contract', message: `unexpected output at ${e.path || '/'}: ${e.message}` });
    }
    return problems;
  }
  const o = out as Static<typeof AutoLoanPolicyOutputSchema>;
  if (o.policyVersion !== constants.version) problems.push({ field: 'policyVersion', rule: 'version_matches', message: `graph reports version ${o.policyVersion}` });
  for (const code of [...o.knockoutCodes, ...o.collateralCodes]) {
    if (!isAdverseActionCode(code)) problems.push({ field: 'knockoutCodes', rule: 'adverse_action_code_known', message: `reason code ${code} is not in the registry` });
  }
  if (o.buyRateBps !== null && (o.buyRateBps < 0 || o.buyRateBps > MAX_RATE_BPS)) {
    problems.push({ field: 'buyRateBps', rule: 'rate_range', message: `buy rate ${o.buyRateBps} bps is outside 0-${MAX_RATE_BPS}` });
  }
  if (o.outcome === 'approve' && (o.buyRateBps === null || o.knockoutCodes.length > 0 || o.collateralCodes.length > 0 || !o.withinLimit)) {
    problems.push({ field: 'outcome', rule: 'approval_consistent', message: 'an approval needs a buy rate, no knock-out or collateral rule, and an amount within the limit' });
  }
  return problems;
}

/** The dealer markup cap of a term under a policy, basis points (decisions.md section 10). */
export function markupCapBps(termMonths: number, policy: CompiledAutoLoanPolicy | AutoLoanPolicyConstants): number {
  const constants = 'constants' in policy ? policy.constants : policy;
  return termMonths <= 60 ? constants.markupCapBps.upTo60Months : constants.markupCapBps.above60Months;
}
