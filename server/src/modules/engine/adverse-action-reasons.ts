/**
 * The one registry of adverse-action reasons.
 *
 * AA-01..AA-23 are the principal reasons of Regulation B, Appendix C, Sample Form C-1
 * (12 CFR 1002), in the form's order and with its exact wording; the AA numbering is ours.
 * AA-24 and AA-25 replace the form's free-text "Other, specify" line with specific reasons.
 * Codes are only ever appended, never renumbered or reworded: stored decisions and lenders'
 * adverse-action notices refer to them by code.
 */

export const ADVERSE_ACTION_REASONS = [
  { code: 'AA-01', reason: 'Credit application incomplete' },
  { code: 'AA-02', reason: 'Insufficient number of credit references provided' },
  { code: 'AA-03', reason: 'Unacceptable type of credit references provided' },
  { code: 'AA-04', reason: 'Unable to verify credit references' },
  { code: 'AA-05', reason: 'Temporary or irregular employment' },
  { code: 'AA-06', reason: 'Unable to verify employment' },
  { code: 'AA-07', reason: 'Length of employment' },
  { code: 'AA-08', reason: 'Income insufficient for amount of credit requested' },
  { code: 'AA-09', reason: 'Excessive obligations in relation to income' },
  { code: 'AA-10', reason: 'Unable to verify income' },
  { code: 'AA-11', reason: 'Length of residence' },
  { code: 'AA-12', reason: 'Temporary residence' },
  { code: 'AA-13', reason: 'Unable to verify residence' },
  { code: 'AA-14', reason: 'No credit file' },
  { code: 'AA-15', reason: 'Limited credit experience' },
  { code: 'AA-16', reason: 'Poor credit performance with us' },
  { code: 'AA-17', reason: 'Delinquent past or present credit obligations with others' },
  { code: 'AA-18', reason: 'Collection action or judgment' },
  { code: 'AA-19', reason: 'Garnishment or attachment' },
  { code: 'AA-20', reason: 'Foreclosure or repossession' },
  { code: 'AA-21', reason: 'Bankruptcy' },
  { code: 'AA-22', reason: 'Number of recent inquiries on credit bureau report' },
  { code: 'AA-23', reason: 'Value or type of collateral not sufficient' },
  { code: 'AA-24', reason: 'Unable to verify identity' },
  { code: 'AA-25', reason: 'Credit information temporarily unavailable' },
] as const;

export type AdverseActionCode = (typeof ADVERSE_ACTION_REASONS)[number]['code'];

/** One element of `decline_reasons` on the wire (interface.md, Decline reason). */
export interface AdverseActionReason {
  code: AdverseActionCode;
  reason: string;
}

/** Codes that may only explain a referral, never a decline (decisions.md section 4). */
export const REFERRAL_ONLY_CODES: ReadonlySet<AdverseActionCode> = new Set<AdverseActionCode>(['AA-25']);

const BY_CODE: ReadonlyMap<string, AdverseActionReason> = new Map(
  ADVERSE_ACTION_REASONS.map((entry) => [entry.code, { code: entry.code, reason: entry.reason }]),
);

export function isAdverseActionCode(value: unknown): value is AdverseActionCode {
  return typeof value === 'string' && BY_CODE.has(value);
}

/** The registered reason for a code; throws for an unknown code (a document or caller bug). */
export function adverseActionReason(code: string): AdverseActionReason {
  const entry = BY_CODE.get(code);
  if (!entry) throw new RangeError(`unknown adverse-action code: ${code}`);
  // A fresh object each time, so a caller mutating its copy cannot change the registry.
  return { code: entry.code, reason: entry.reason };
}
