/**
 * FCRA key factors of a credit score: what a lender discloses with the score when a credit score
 * was used in adverse action (a decline, or a counteroffer the consumer does not take), under FCRA
 * 615(a) (15 U.S.C. 1681m(a)): the score, its range, its date, who provided the credit file it was
 * built on, and "all of the key factors that adversely affected" it (1681g(f)).
 *
 * How they are chosen:
 * - The score's own ranking, the scorecard's PMML pointsBelow order (rankReasonCodes: largest gap
 *   below the baseline first, ties in document order, each reason code once). Not the ECOA
 *   reasons: those put the policy's knock-outs (bankruptcy, no file) first, and a knock-out is no
 *   factor of the score (reference.md 2.5: two separate lists, both on one notice).
 * - At most four (1681g(f)(1)(C)), most important first (1681g(f)(2)(B)).
 * - Inquiries are added as a fifth when they adversely affected the score but are not among the
 *   four (1681g(f)(9)). Their code is AA-22, "Number of recent inquiries on credit bureau report".
 * - Only what the file said: a characteristic whose data was missing scored in its missing bin,
 *   coded AA-14 "No credit file", which is no factor of a file that exists. With no file at all
 *   nothing from a consumer report was used, and there is no disclosure (callers check hasFile).
 */
import { adverseActionReason, isAdverseActionCode, type AdverseActionReason } from './adverse-action-reasons.js';
import { bundledScorecard } from './engine-documents.js';
import { rankReasonCodes, type PartialScore } from './scorecard.js';

export const MAX_KEY_FACTORS = 4;
export const INQUIRIES_REASON_CODE = 'AA-22';

/** The key factors' reason codes, most important first (four at most, five when inquiries are the fifth). */
export function keyFactorCodes(partialScores: ReadonlyArray<Pick<PartialScore, 'reasonCode' | 'pointsBelowBaseline' | 'dataPresent'>>): string[] {
  const ranked = rankReasonCodes(partialScores.filter((p) => p.dataPresent));
  const factors = ranked.slice(0, MAX_KEY_FACTORS);
  if (ranked.includes(INQUIRIES_REASON_CODE) && !factors.includes(INQUIRIES_REASON_CODE)) factors.push(INQUIRIES_REASON_CODE);
  return factors;
}

/** The range of possible scores of a scorecard version (scorecards are bundled); null when this build does not have it or it has none. */
export function scoreRangeOf(scorecardVersion: string | null | undefined): { min: number; max: number } | null {
  if (!scorecardVersion) return null;
  try {
    const range = bundledScorecard(scorecardVersion).document.scoreRange;
    return range ? { min: range.min, max: range.max } : null;
  } catch {
    return null;
  }
}

/** The same, with the catalogue's wording (a code outside the catalogue keeps its code and no wording). */
export function keyFactors(partialScores: ReadonlyArray<Pick<PartialScore, 'reasonCode' | 'pointsBelowBaseline' | 'dataPresent'>>): Array<AdverseActionReason | { code: string; reason: null }> {
  return keyFactorCodes(partialScores).map((code) => (isAdverseActionCode(code) ? adverseActionReason(code) : { code, reason: null }));
}
