/**
 * Points scorecards as versioned JSON documents, in the shape of the PMML 4.4 Scorecard model.
 *
 * How a scorecard scores:
 * 1. Each characteristic reads one feature and walks its bins (PMML attributes) top to bottom; the
 *    first bin whose predicate holds gives the partial score. A missing value (null) only matches a
 *    `{missing: true}` bin; a value no bin covers is treated as missing, so every characteristic
 *    carries a missing bin.
 * 2. total = initialScore + sum of partial scores; the score is that total rounded and clamped to
 *    `scoreRange` (300-850 for our products, none for the PMML test vectors).
 * 3. Reasons use PMML `reasonCodeAlgorithm="pointsBelow"`: gap = baseline - partial score, where the
 *    baseline is the characteristic's maximum attainable points (`baselineMethod: "max"`, our
 *    "points below maximum") or an explicit `baselineScore` (`"other"`, or a documented exception
 *    under "max" for a bonus characteristic whose neutral value is no reason). Largest gap first, ties in
 *    document order; a gap of zero or less gives no reason; a code reached by several
 *    characteristics counts once, at the position of its largest gap. A bin may carry its own
 *    `reasonCode` (PMML attribute-level codes), used for missing data so that, for instance, an
 *    absent income estimate reads "Unable to verify income" rather than an untrue statement.
 * 4. Confidence (0-1) weighs how much of the scorecard's point spread had real data (coverage) with
 *    how deep the credit file is (depth features scaled to 1 at `fullAt`).
 * 5. `scaling` documents the log-odds scale of the points: score = offset + factor * ln(odds), with
 *    factor = pointsToDoubleOdds / ln 2 and offset = targetScore - factor * ln(targetOdds).
 * Everything here is a pure function of the document and the features.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

export type FeatureValue = number | string | boolean | null;
export type FeatureVector = Readonly<Record<string, FeatureValue | undefined>>;

const MissingPredicate = Type.Object({ missing: Type.Literal(true) }, { additionalProperties: false });
const InPredicate = Type.Object(
  { in: Type.Array(Type.Union([Type.String(), Type.Number(), Type.Boolean()]), { minItems: 1 }) },
  { additionalProperties: false },
);
const RangePredicate = Type.Object(
  {
    gte: Type.Optional(Type.Number()),
    gt: Type.Optional(Type.Number()),
    lte: Type.Optional(Type.Number()),
    lt: Type.Optional(Type.Number()),
  },
  { additionalProperties: false, minProperties: 1 },
);

const BinSchema = Type.Object(
  {
    attribute: Type.String({ minLength: 1 }),
    when: Type.Union([MissingPredicate, InPredicate, RangePredicate]),
    points: Type.Number(),
    reasonCode: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);

const CharacteristicSchema = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    description: Type.Optional(Type.String()),
    feature: Type.String({ minLength: 1 }),
    reasonCode: Type.String({ minLength: 1 }),
    baselineScore: Type.Optional(Type.Number()),
    bins: Type.Array(BinSchema, { minItems: 1 }),
  },
  { additionalProperties: false },
);

const ScalingSchema = Type.Object(
  {
    targetScore: Type.Number(),
    targetOdds: Type.Number({ exclusiveMinimum: 0 }),
    pointsToDoubleOdds: Type.Number({ exclusiveMinimum: 0 }),
    odds: Type.Literal('good:bad'),
    note: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

const ConfidenceSchema = Type.Object(
  {
    coverageWeight: Type.Number({ minimum: 0, maximum: 1 }),
    depthWeight: Type.Number({ minimum: 0, maximum: 1 }),
    depthFeatures: Type.Array(
      Type.Object({ feature: Type.String({ minLength: 1 }), fullAt: Type.Number({ exclusiveMinimum: 0 }) }, { additionalProperties: false }),
    ),
  },
  { additionalProperties: false },
);

export const ScorecardDocumentSchema = Type.Object(
  {
    kind: Type.Literal('scorecard'),
    version: Type.String({ minLength: 1 }),
    product: Type.String({ minLength: 1 }),
    description: Type.Optional(Type.String()),
    reasonCodeAlgorithm: Type.Literal('pointsBelow'),
    baselineMethod: Type.Union([Type.Literal('max'), Type.Literal('other')]),
    initialScore: Type.Number(),
    scoreRange: Type.Union([Type.Object({ min: Type.Number(), max: Type.Number() }, { additionalProperties: false }), Type.Null()]),
    scaling: Type.Union([ScalingSchema, Type.Null()]),
    confidence: Type.Union([ConfidenceSchema, Type.Null()]),
    characteristics: Type.Array(CharacteristicSchema, { minItems: 1 }),
  },
  { additionalProperties: false },
);

export type ScorecardDocument = Static<typeof ScorecardDocumentSchema>;
export type ScorecardCharacteristicDocument = Static<typeof CharacteristicSchema>;
export type ScorecardBin = Static<typeof BinSchema>;
export type BinPredicate = ScorecardBin['when'];
export type ScorecardScaling = Static<typeof ScalingSchema>;

/** A characteristic after loading: its baseline and point spread worked out once. */
export interface LoadedCharacteristic extends ScorecardCharacteristicDocument {
  maxPoints: number;
  minPoints: number;
  baseline: number;
}

/** A validated, frozen scorecard, ready to evaluate many times. */
export interface Scorecard {
  readonly version: string;
  readonly document: ScorecardDocument;
  readonly characteristics: readonly LoadedCharacteristic[];
}

export interface PartialScore {
  characteristic: string;
  feature: string;
  value: FeatureValue;
  /** Label of the bin that matched (PMML attribute). */
  attribute: string;
  /** False when the value was missing or fell outside every bin (the missing bin scored it). */
  dataPresent: boolean;
  points: number;
  maxPoints: number;
  baselineScore: number;
  /** baseline - points: the points-below-maximum gap when the baseline is the maximum. */
  pointsBelowBaseline: number;
  /** The matched bin's own code, else the characteristic's. */
  reasonCode: string;
}

export interface ScorecardResult {
  scorecardVersion: string;
  /** initialScore + partial scores, before rounding and clamping. */
  rawScore: number;
  score: number;
  confidence: number;
  partialScores: PartialScore[];
  /** Every code with a positive gap, most important first, each once. Callers cap the count. */
  rankedReasonCodes: string[];
}

export class ScorecardDocumentError extends Error {
  override readonly name = 'ScorecardDocumentError';
}

export interface LoadScorecardOptions {
  /** Rejects documents naming a reason code outside the registry the caller will report in. */
  isKnownReasonCode?: (code: string) => boolean;
}

/** Validate a scorecard document (JSON already parsed) and prepare it for evaluation. */
export function loadScorecard(document: unknown, options: LoadScorecardOptions = {}): Scorecard {
  if (!Value.Check(ScorecardDocumentSchema, document)) {
    const first = Value.Errors(ScorecardDocumentSchema, document).First();
    throw new ScorecardDocumentError(`invalid scorecard document at ${first?.path ?? '/'}: ${first?.message ?? 'unknown error'}`);
  }
  const doc = structuredClone(document);
  const fail = (message: string): never => {
    throw new ScorecardDocumentError(`scorecard ${doc.version}: ${message}`);
  };
  if (doc.scoreRange && doc.scoreRange.min > doc.scoreRange.max) fail('scoreRange.min is above scoreRange.max');
  if (doc.confidence && Math.abs(doc.confidence.coverageWeight + doc.confidence.depthWeight - 1) > 1e-9) {
    fail('confidence weights must add up to 1');
  }
  const names = new Set<string>();
  const characteristics = doc.characteristics.map((c): LoadedCharacteristic => {
    if (names.has(c.name)) fail(`duplicate characteristic ${c.name}`);
    names.add(c.name);
    if (!c.bins.some((bin) => 'missing' in bin.when)) fail(`characteristic ${c.name} has no missing bin`);
    const codes = [c.reasonCode, ...c.bins.flatMap((bin) => (bin.reasonCode ? [bin.reasonCode] : []))];
    for (const code of codes) {
      if (options.isKnownReasonCode && !options.isKnownReasonCode(code)) fail(`characteristic ${c.name} names unknown reason code ${code}`);
    }
    const points = c.bins.map((bin) => bin.points);
    const maxPoints = Math.max(...points);
    const minPoints = Math.min(...points);
    if (doc.baselineMethod === 'other' && c.baselineScore === undefined) {
      fail(`characteristic ${c.name} needs a baselineScore (baselineMethod "other")`);
    }
    // Under "max" an explicit baseline is the documented exception: a bonus characteristic whose
    // neutral attribute must never read as an adverse reason (see the BNPL scorecard's history).
    const baseline = c.baselineScore ?? maxPoints;
    if (doc.baselineMethod === 'max' && (baseline < minPoints || baseline > maxPoints)) {
      fail(`characteristic ${c.name} has a baselineScore outside its points`);
    }
    return Object.assign({}, c, { maxPoints, minPoints, baseline });
  });
  return deepFreeze({ version: doc.version, document: doc, characteristics });
}

/** Score one feature vector. Pure: same scorecard and features, same result. */
export function evaluateScorecard(scorecard: Scorecard, features: FeatureVector): ScorecardResult {
  const doc = scorecard.document;
  const partialScores = scorecard.characteristics.map((c) => scoreCharacteristic(c, features[c.feature]));
  const rawScore = partialScores.reduce((sum, p) => sum + p.points, doc.initialScore);
  let score = Math.round(rawScore);
  if (doc.scoreRange) score = Math.min(doc.scoreRange.max, Math.max(doc.scoreRange.min, score));
  return {
    scorecardVersion: scorecard.version,
    rawScore,
    score,
    confidence: confidenceOf(scorecard, partialScores, features),
    partialScores,
    rankedReasonCodes: rankReasonCodes(partialScores),
  };
}

function scoreCharacteristic(c: LoadedCharacteristic, raw: FeatureValue | undefined): PartialScore {
  const value = isMissing(raw) ? null : raw;
  let bin = value === null ? undefined : c.bins.find((b) => !('missing' in b.when) && matches(b.when, value));
  const dataPresent = bin !== undefined;
  // Validated at load: a missing bin exists.
  bin ??= c.bins.find((b) => 'missing' in b.when) as ScorecardBin;
  return {
    characteristic: c.name,
    feature: c.feature,
    value,
    attribute: bin.attribute,
    dataPresent,
    points: bin.points,
    maxPoints: c.maxPoints,
    baselineScore: c.baseline,
    pointsBelowBaseline: c.baseline - bin.points,
    reasonCode: bin.reasonCode ?? c.reasonCode,
  };
}

function isMissing(value: FeatureValue | undefined): value is null | undefined {
  return value === null || value === undefined || (typeof value === 'number' && Number.isNaN(value));
}

function matches(when: BinPredicate, value: string | number | boolean): boolean {
  if ('missing' in when) return false;
  if ('in' in when) return when.in.includes(value);
  if (typeof value !== 'number') return false;
  if (when.gte !== undefined && !(value >= when.gte)) return false;
  if (when.gt !== undefined && !(value > when.gt)) return false;
  if (when.lte !== undefined && !(value <= when.lte)) return false;
  if (when.lt !== undefined && !(value < when.lt)) return false;
  return true;
}

/** PMML pointsBelow ranking: largest gap first, ties in document order, each code once. */
export function rankReasonCodes(partialScores: ReadonlyArray<Pick<PartialScore, 'reasonCode' | 'pointsBelowBaseline'>>): string[] {
  const ranked = partialScores
    .map((p, index) => ({ code: p.reasonCode, gap: p.pointsBelowBaseline, index }))
    .filter((entry) => entry.gap > 0)
    .sort((a, b) => b.gap - a.gap || a.index - b.index);
  const seen = new Set<string>();
  const codes: string[] = [];
  for (const entry of ranked) {
    if (seen.has(entry.code)) continue;
    seen.add(entry.code);
    codes.push(entry.code);
  }
  return codes;
}

function confidenceOf(scorecard: Scorecard, partials: readonly PartialScore[], features: FeatureVector): number {
  // Coverage is weighted by each characteristic's point spread: missing data on a characteristic
  // that can move the score by 90 points matters more than on one that moves it by 20.
  let spread = 0;
  let covered = 0;
  scorecard.characteristics.forEach((c, i) => {
    const range = c.maxPoints - c.minPoints;
    spread += range;
    if (partials[i]?.dataPresent) covered += range;
  });
  const coverage = spread === 0 ? 1 : covered / spread;
  const conf = scorecard.document.confidence;
  if (!conf) return round3(coverage);
  const depths = conf.depthFeatures.map(({ feature, fullAt }) => {
    const value = features[feature];
    return typeof value === 'number' && Number.isFinite(value) ? Math.min(1, Math.max(0, value / fullAt)) : 0;
  });
  const depth = depths.length === 0 ? 1 : depths.reduce((a, b) => a + b, 0) / depths.length;
  return round3(conf.coverageWeight * coverage + conf.depthWeight * depth);
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** Points per unit of ln(odds): pointsToDoubleOdds / ln 2. */
export function scalingFactor(scaling: ScorecardScaling): number {
  return scaling.pointsToDoubleOdds / Math.LN2;
}

/** The score at odds 1:1, so that score = offset + factor * ln(odds). */
export function scalingOffset(scaling: ScorecardScaling): number {
  return scaling.targetScore - scalingFactor(scaling) * Math.log(scaling.targetOdds);
}

/** The score the scale assigns to good:bad odds. */
export function scoreForOdds(odds: number, scaling: ScorecardScaling): number {
  return scalingOffset(scaling) + scalingFactor(scaling) * Math.log(odds);
}

/** The good:bad odds a score stands for on the document's scale. */
export function oddsForScore(score: number, scaling: ScorecardScaling): number {
  return Math.exp((score - scalingOffset(scaling)) / scalingFactor(scaling));
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
