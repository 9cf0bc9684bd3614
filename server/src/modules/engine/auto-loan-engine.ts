/**
 * The auto-loan decision pipeline, the same steps as BNPL's (engine.ts) on the auto-loan documents:
 * credit data unavailable -> referred AA-25; features (credit + loan + collateral); the auto-loan
 * scorecard; the auto-loan policy graph. Reasons: declines carry knock-outs, then collateral codes
 * (AA-23), then the scorecard's points-below-maximum ranking; referrals carry the ranking (an
 * unverifiable income leads it with AA-10 through the scorecard's missing-income bins); approvals
 * none. At most four. The result is the audit record; apart from the timings it is a pure function
 * of (input, documents), so `replayAutoLoan` can show a stored decision decides the same way again.
 */
import { adverseActionReason, type AdverseActionCode, type AdverseActionReason } from './adverse-action-reasons.js';
import { deriveAutoLoanFeatures, type AutoLoanFeatures, type AutoLoanTerms } from './auto-loan-features.js';
import type { AutoLoanPolicyOutput, CompiledAutoLoanPolicy } from './auto-loan-policy.js';
import { ENGINE_CODE_VERSION, EngineInputError, MAX_REASONS, type EngineOutcome, type EngineTimings } from './engine.js';
import type { LenderHistory } from './features.js';
import { kycTierFor, type KycTier, type RiskGrade } from './policy.js';
import { evaluateScorecard, type PartialScore, type Scorecard } from './scorecard.js';
import type { CreditDataResult } from '../credit-data/credit-data.types.js';
import { copyPlainData } from '../../lib/plain-data.js';

export interface AutoLoanEngineDocuments {
  scorecard: Scorecard;
  policy: CompiledAutoLoanPolicy;
}

export interface AutoLoanEngineInput {
  loan: AutoLoanTerms;
  history: LenderHistory;
  creditData: CreditDataResult;
  asOf: string;
}

export interface AutoLoanEngineDecision {
  engineVersion: string;
  versions: { engine: string; scorecard: string; policy: string };
  asOf: string;
  input: AutoLoanEngineInput;
  outcome: EngineOutcome;
  creditDataUnavailable: boolean;
  score: number | null;
  rawScore: number | null;
  confidence: number;
  riskGrade: RiskGrade | null;
  reasons: AdverseActionReason[];
  /** Buy rate of the grade, term and condition in basis points; set on approval and referral. */
  buyRateBps: number | null;
  /** decision.finalized `recommended_amount`: the amount financed when approved or referred, 0 on a decline. */
  recommendedAmountCents: number;
  recommendedRateBps: number;
  recommendedRatePct: number;
  kycTier: KycTier;
  features: AutoLoanFeatures | null;
  partialScores: PartialScore[];
  policyResult: AutoLoanPolicyOutput | null;
  timings: EngineTimings;
}

export function autoLoanEngineVersionOf(documents: AutoLoanEngineDocuments): string {
  return `engine-${ENGINE_CODE_VERSION}+${documents.scorecard.version}+${documents.policy.version}`;
}

export async function decideAutoLoan(input: AutoLoanEngineInput, documents: AutoLoanEngineDocuments, options: { now?: () => number } = {}): Promise<AutoLoanEngineDecision> {
  const now = options.now ?? (() => performance.now());
  const started = now();
  assertValidInput(input);
  const { scorecard, policy } = documents;
  const engineVersion = autoLoanEngineVersionOf(documents);
  const versions = { engine: ENGINE_CODE_VERSION, scorecard: scorecard.version, policy: policy.version };
  const recorded = copyPlainData(input);
  const kycTier = kycTierFor(input.loan.amountFinancedCents, policy);
  // Written out, not `{ ...base, outcome, ... }`: docs/performance.md, "objects built by spreading".
  if (input.creditData.status === 'unavailable') {
    return {
      engineVersion,
      versions,
      asOf: input.asOf,
      input: recorded,
      kycTier,
      outcome: 'referred',
      creditDataUnavailable: true,
      score: null,
      rawScore: null,
      confidence: 0,
      riskGrade: null,
      reasons: [adverseActionReason('AA-25')],
      buyRateBps: null,
      recommendedAmountCents: 0,
      recommendedRateBps: 0,
      recommendedRatePct: 0,
      features: null,
      partialScores: [],
      policyResult: null,
      timings: { featuresMs: 0, scorecardMs: 0, policyMs: 0, totalMs: elapsed(started, now()) },
    };
  }
  const features = deriveAutoLoanFeatures({ file: input.creditData.file, loan: input.loan, history: input.history });
  const featuresDone = now();
  const scored = evaluateScorecard(scorecard, features);
  const scoredDone = now();
  const policyResult = await policy.evaluate({
    asOf: input.asOf,
    score: scored.score,
    confidence: scored.confidence,
    request: { amountFinancedCents: input.loan.amountFinancedCents, termMonths: input.loan.termMonths, condition: input.loan.condition },
    credit: { hasFile: features.hasCreditFile, bankruptcy: features.bankruptcy },
    features,
  });
  const policyDone = now();
  const outcome: EngineOutcome = policyResult.outcome === 'approve' ? 'approved' : policyResult.outcome === 'refer' ? 'referred' : 'declined';
  const ranked = scored.rankedReasonCodes as AdverseActionCode[];
  const codes: AdverseActionCode[] =
    outcome === 'approved' ? [] : outcome === 'declined' ? [...policyResult.knockoutCodes, ...policyResult.collateralCodes, ...ranked] : ranked;
  const rate = outcome === 'declined' ? 0 : (policyResult.buyRateBps ?? 0);
  return {
    engineVersion,
    versions,
    asOf: input.asOf,
    input: recorded,
    kycTier,
    outcome,
    creditDataUnavailable: false,
    score: scored.score,
    rawScore: scored.rawScore,
    confidence: scored.confidence,
    riskGrade: policyResult.riskGrade,
    reasons: [...new Set(codes)].slice(0, MAX_REASONS).map((c) => adverseActionReason(c)),
    buyRateBps: outcome === 'declined' ? null : policyResult.buyRateBps,
    recommendedAmountCents: outcome === 'declined' ? 0 : input.loan.amountFinancedCents,
    recommendedRateBps: rate,
    recommendedRatePct: rate / 100,
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

function elapsed(from: number, to: number): number {
  return Math.round((to - from) * 1000) / 1000;
}

function assertValidInput(input: AutoLoanEngineInput): void {
  const fail = (message: string): never => {
    throw new EngineInputError(message);
  };
  const { loan } = input;
  if (!Number.isSafeInteger(loan.amountFinancedCents) || loan.amountFinancedCents <= 0) fail('amountFinancedCents must be a positive integer number of cents');
  if (!Number.isSafeInteger(loan.termMonths) || loan.termMonths <= 0) fail('termMonths must be a positive integer');
  if (!Number.isFinite(loan.ltvPct) || loan.ltvPct <= 0) fail('ltvPct must be positive');
  if (!Number.isSafeInteger(loan.vehicleAgeYears) || loan.vehicleAgeYears < 0) fail('vehicleAgeYears must be a non-negative integer');
  if (!Number.isSafeInteger(loan.mileage) || loan.mileage < 0) fail('mileage must be a non-negative integer');
  if (loan.condition !== 'new' && loan.condition !== 'used') fail('condition must be new or used');
  if (typeof input.asOf !== 'string' || Number.isNaN(Date.parse(input.asOf))) fail('asOf must be an ISO 8601 time');
  const status = (input.creditData as { status?: unknown } | undefined)?.status;
  if (status !== 'ok' && status !== 'unavailable') fail('creditData must be a CreditDataResult');
}
