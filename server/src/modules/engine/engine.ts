/**
 * The BNPL decision pipeline. The engine is data: a versioned scorecard document and a versioned
 * JDM policy decide; this file only wires them together.
 *
 * How one decision goes (`decideBnpl`):
 * 1. The plan to price is the preference, else the policy's default pick for the amount.
 * 2. Credit data unavailable -> referred with AA-25 and `creditDataUnavailable: true` (the caller
 *    emits `score.errored`); nothing is scored on missing data.
 * 3. Features are derived from the credit file, the request and the history with this lender.
 * 4. The scorecard gives partial scores, a 300-850 score, a confidence and the points-below-maximum
 *    reason ranking.
 * 5. The policy graph (ZEN) gives the risk grade, knock-outs, the outcome, the amount it would lend
 *    (a counteroffer when the grade's limit is below the request) and the nominal rate per plan.
 * 6. Reasons: declines carry knock-outs first, then the scorecard's ranking; referrals carry the
 *    ranking that put them in review; approvals carry none (a counteroffer keeps its ranking in
 *    `counterofferReasons`, for the notice owed if the consumer does not take it). At most four.
 * The result is the audit record: it holds the input, the versions, the features, the partial
 * scores and the policy's output, so `replay` can run it again and show it decides the same way.
 * Apart from the timings, the output is a pure function of (input, documents).
 */
import { adverseActionReason, type AdverseActionCode, type AdverseActionReason } from './adverse-action-reasons.js';
import { bundledDocumentsFor, type EngineDocuments } from './engine-documents.js';
import { deriveBnplFeatures, isBnplPlan, type BnplFeatures, type BnplPlan, type LenderHistory } from './features.js';
import { defaultPlanFor, kycTierFor, type KycTier, type PolicyOutput, type RiskGrade } from './policy.js';
import { evaluateScorecard, type PartialScore } from './scorecard.js';
import type { CreditDataResult } from '../credit-data/credit-data.types.js';
import { copyPlainData } from '../../lib/plain-data.js';

export { kycTierFor } from './policy.js';

/** Version of this pipeline code (features, reason merging); bump it when either changes. */
export const ENGINE_CODE_VERSION = '1.0.0';

/** Reg B commentary 9(b)(2)-1 and FCRA 1681g(f)(1)(C): more than four reasons do not help. */
export const MAX_REASONS = 4;

export interface BnplEngineInput {
  /** Requested amount, integer cents. */
  requestedAmountCents: number;
  planPreference: BnplPlan | null;
  /**
   * What this lender knows from its own earlier decisions. No identity data enters the engine:
   * the credit file is already derived data, so age, sex, race, marital status or ZIP cannot be used.
   */
  history: LenderHistory;
  creditData: CreditDataResult;
  /** ISO 8601 time the decision is made as of (from the caller's clock). */
  asOf: string;
}

export type EngineOutcome = 'approved' | 'declined' | 'referred';

export interface EngineTimings {
  featuresMs: number;
  scorecardMs: number;
  policyMs: number;
  totalMs: number;
}

export interface BnplEngineDecision {
  /** `engine-<code>+<scorecard>+<policy>`, e.g. engine-1.0.0+bnpl-sc-2026.11.1+bnpl-policy-2026.11.1. */
  engineVersion: string;
  versions: { engine: string; scorecard: string; policy: string };
  asOf: string;
  /** The input exactly as decided on (no PII: the credit file carries no identity data). */
  input: BnplEngineInput;
  outcome: EngineOutcome;
  /** Credit data could not be had: the caller emits `score.errored`; the outcome is referred, AA-25. */
  creditDataUnavailable: boolean;
  /** 300-850; null only when credit data was unavailable. */
  score: number | null;
  rawScore: number | null;
  confidence: number;
  riskGrade: RiskGrade | null;
  /** decline_reasons: empty on approval, at most four, most important first. */
  reasons: AdverseActionReason[];
  /** On a counteroffer approval: why the full amount was not granted (points below maximum). */
  counterofferReasons: AdverseActionReason[];
  /** Plan the request was priced on (preference, else the default pick for the requested amount). */
  plan: BnplPlan;
  requestedAmountCents: number;
  /** Set only on approval; never above the request, never below the plan's minimum. */
  approvedAmountCents: number | null;
  counteroffer: boolean;
  /** Nominal annual rate of `plan` in basis points, set only on approval. Not an APR. */
  rateBps: number | null;
  /** The grade's nominal rate for every plan, so a caller re-picking the plan can price it. */
  ratesBps: Record<BnplPlan, number | null> | null;
  /** decision.finalized `recommended_amount`: the approval, an underwriter's starting point on a referral, 0 on a decline. */
  recommendedAmountCents: number;
  recommendedRateBps: number;
  /** decision.finalized `recommended_rate_pct`: recommendedRateBps / 100. */
  recommendedRatePct: number;
  /** KYC tier of the requested amount under the deciding policy. */
  kycTier: KycTier;
  features: BnplFeatures | null;
  partialScores: PartialScore[];
  policyResult: PolicyOutput | null;
  timings: EngineTimings;
}

export interface DecideOptions {
  /** Milliseconds clock for the timings only; nothing decided depends on it. */
  now?: () => number;
}

export class EngineInputError extends Error {
  override readonly name = 'EngineInputError';
}

export function engineVersionOf(documents: EngineDocuments): string {
  return `engine-${ENGINE_CODE_VERSION}+${documents.scorecard.version}+${documents.policy.version}`;
}

export async function decideBnpl(input: BnplEngineInput, documents: EngineDocuments, options: DecideOptions = {}): Promise<BnplEngineDecision> {
  const now = options.now ?? (() => performance.now());
  const started = now();
  assertValidInput(input);
  const { scorecard, policy } = documents;
  // A private copy: the record must not change if the caller later mutates its input.
  const recorded = copyPlainData(input);
  const plan = input.planPreference ?? defaultPlanFor(input.requestedAmountCents, policy);
  const engineVersion = engineVersionOf(documents);
  const versions = { engine: ENGINE_CODE_VERSION, scorecard: scorecard.version, policy: policy.version };
  const kycTier = kycTierFor(input.requestedAmountCents, policy);

  // Written out, not `{ ...base, outcome, ... }`: see docs/performance.md, "objects built by
  // spreading" (on Node 20 every such object gets a map of its own, about 1 µs per property).
  if (input.creditData.status === 'unavailable') {
    return {
      engineVersion,
      versions,
      asOf: input.asOf,
      input: recorded,
      plan,
      requestedAmountCents: input.requestedAmountCents,
      kycTier,
      outcome: 'referred',
      creditDataUnavailable: true,
      score: null,
      rawScore: null,
      confidence: 0,
      riskGrade: null,
      reasons: [adverseActionReason('AA-25')],
      counterofferReasons: [],
      approvedAmountCents: null,
      counteroffer: false,
      rateBps: null,
      ratesBps: null,
      recommendedAmountCents: 0,
      recommendedRateBps: 0,
      recommendedRatePct: 0,
      features: null,
      partialScores: [],
      policyResult: null,
      timings: { featuresMs: 0, scorecardMs: 0, policyMs: 0, totalMs: elapsed(started, now()) },
    };
  }

  const features = deriveBnplFeatures({
    file: input.creditData.file,
    requestedAmountCents: input.requestedAmountCents,
    plan,
    history: input.history,
  });
  const featuresDone = now();
  const scored = evaluateScorecard(scorecard, features);
  const scoredDone = now();
  const policyResult = await policy.evaluate({
    asOf: input.asOf,
    score: scored.score,
    confidence: scored.confidence,
    request: { amountCents: input.requestedAmountCents, plan },
    credit: { hasFile: features.hasCreditFile, bankruptcy: features.bankruptcy },
    features,
  });
  const policyDone = now();

  const ranked = scored.rankedReasonCodes as AdverseActionCode[];
  const outcome: EngineOutcome =
    policyResult.outcome === 'approve' ? 'approved' : policyResult.outcome === 'refer' ? 'referred' : 'declined';
  const approved = outcome === 'approved';
  // Knock-outs lead; the default policy only knocks out into declines, a tenant's may refer.
  const reasonCodes: AdverseActionCode[] = approved ? [] : [...policyResult.knockoutCodes, ...ranked];
  const counteroffer = approved && policyResult.counteroffer;
  // A referral's recommendation is where an underwriter starts; an offer below the plan's minimum is no offer.
  const recommendedAmountCents =
    outcome === 'declined' || !policyResult.fitsPlan ? 0 : policyResult.offerAmountCents;
  const recommendedRateBps = outcome === 'declined' ? 0 : (policyResult.rateBps ?? 0);

  return {
    engineVersion,
    versions,
    asOf: input.asOf,
    input: recorded,
    plan,
    requestedAmountCents: input.requestedAmountCents,
    kycTier,
    outcome,
    creditDataUnavailable: false,
    score: scored.score,
    rawScore: scored.rawScore,
    confidence: scored.confidence,
    riskGrade: policyResult.riskGrade,
    reasons: topReasons(reasonCodes),
    counterofferReasons: counteroffer ? topReasons(ranked) : [],
    approvedAmountCents: approved ? policyResult.offerAmountCents : null,
    counteroffer,
    rateBps: approved ? policyResult.rateBps : null,
    ratesBps: { ...policyResult.ratesBps },
    recommendedAmountCents,
    recommendedRateBps,
    recommendedRatePct: recommendedRateBps / 100,
    features,
    partialScores: scored.partialScores,
    policyResult,
    timings: {
      featuresMs: elapsed(started, featuresDone),
      scorecardMs: elapsed(featuresDone, scoredDone),
      policyMs: elapsed(scoredDone, policyDone),
      totalMs: elapsed(started, now()),
    },
  };
}

/** Each code once, in order, at most four, with the registry's wording. */
function topReasons(codes: readonly AdverseActionCode[]): AdverseActionReason[] {
  return [...new Set(codes)].slice(0, MAX_REASONS).map((code) => adverseActionReason(code));
}

export interface ReplayResult {
  /** True when everything but the timings came out the same. */
  matches: boolean;
  /** JSON paths that differ between the record and the replay (timings ignored). */
  differences: string[];
  replayed: BnplEngineDecision;
}

/**
 * Decide a stored record's input again. Without documents, the bundled documents of the versions
 * the record names are used (an unknown version throws); with other documents this is a what-if
 * run and the differences show what the new versions would change.
 */
export async function replay(record: BnplEngineDecision, documents?: EngineDocuments): Promise<ReplayResult> {
  const docs = documents ?? bundledDocumentsFor(record.versions);
  const replayed = await decideBnpl(record.input, docs);
  const differences: string[] = [];
  diff(comparable(record), comparable(replayed), '$', differences);
  return { matches: differences.length === 0, differences, replayed };
}

function comparable(decision: BnplEngineDecision): unknown {
  const { timings: _timings, ...rest } = decision;
  // Through JSON, as the record is stored: a fresh result and a re-read record compare alike.
  return JSON.parse(JSON.stringify(rest)) as unknown;
}

function diff(a: unknown, b: unknown, path: string, out: string[]): void {
  if (out.length >= 50) return;
  if (a === b) return;
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of keys) diff((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], `${path}.${key}`, out);
    return;
  }
  out.push(path);
}

function elapsed(from: number, to: number): number {
  return Math.round((to - from) * 1000) / 1000;
}

function assertValidInput(input: BnplEngineInput): void {
  const fail = (message: string): never => {
    throw new EngineInputError(message);
  };
  if (!Number.isSafeInteger(input.requestedAmountCents) || input.requestedAmountCents <= 0) {
    fail('requestedAmountCents must be a positive integer number of cents');
  }
  if (input.planPreference !== null && !isBnplPlan(input.planPreference)) fail(`unknown plan ${String(input.planPreference)}`);
  const { history } = input;
  if (!history || typeof history.returning !== 'boolean') fail('history.returning must be a boolean');
  for (const count of [history.priorApprovals, history.priorDeclines]) {
    if (!Number.isSafeInteger(count) || count < 0) fail('history counts must be non-negative integers');
  }
  if (typeof input.asOf !== 'string' || Number.isNaN(Date.parse(input.asOf))) fail('asOf must be an ISO 8601 time');
  const status = (input.creditData as { status?: unknown } | undefined)?.status;
  if (status !== 'ok' && status !== 'unavailable') fail('creditData must be a CreditDataResult');
}
