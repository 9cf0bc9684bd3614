/**
 * What the engine knows about an applicant's credit, whatever source it came from.
 *
 * A connector (sandbox synthetic file, live credit-data gateway) turns an applicant into a
 * CreditDataResult. The engine only ever sees this shape, so a new bureau is a new connector and
 * never a change to scoring. A source that fails or times out is a value ('unavailable'), not an
 * exception: the decision then becomes a referral with AA-25 and `score.errored` fires.
 */

export interface CreditFile {
  /** The source's own reference for this pull, kept in the audit record. */
  fileId: string;
  /** Which connector produced it: 'sandbox-synthetic' or 'gateway:<name>'. */
  source: string;
  /** False when the bureau holds no file for the person (a knock-out: AA-14 "No credit file"). */
  hasFile: boolean;
  /** Number of tradelines (open and closed accounts) on file. */
  tradelines: number;
  /** Age of the oldest tradeline in months. */
  oldestTradelineMonths: number;
  /** Revolving balances over revolving limits, whole percent (may exceed 100). */
  revolvingUtilizationPct: number;
  /** 30+ days past due occurrences in the last 24 months. */
  delinquencies30dLast24m: number;
  /** 90+ days past due occurrences in the last 24 months. */
  delinquencies90dLast24m: number;
  /** Accounts in collection plus public-record judgments. */
  collectionsOrJudgments: number;
  /** A bankruptcy on file (a knock-out: AA-21 "Bankruptcy"). */
  bankruptcy: boolean;
  /** A foreclosure or repossession on file. */
  foreclosureOrRepossession: boolean;
  /** Hard inquiries in the last 6 months. */
  inquiriesLast6m: number;
  /** Monthly payments on existing obligations, integer cents. */
  monthlyObligationsCents: number;
  /** Estimated monthly income, integer cents (income-estimation model of the source). */
  estimatedMonthlyIncomeCents: number;
}

export type CreditDataResult =
  | { status: 'ok'; file: CreditFile; latencyMs: number }
  | { status: 'unavailable'; reason: 'timeout' | 'error' | 'circuit_open' | 'magic_value'; detail: string; latencyMs: number };

/** Who we ask about. PII: never logged, never put in an event. */
export interface CreditSubject {
  consumerId: string;
  firstName: string;
  lastName: string;
  /** YYYY-MM-DD */
  dob: string;
  /** Decrypted only for the pull; null when the consumer never gave it. */
  ssnLast4: string | null;
  zip: string;
  /** Seeded sandbox consumers carry the tier they were seeded for; everyone else null. */
  sandboxProfile: 'soft' | 'enhanced' | 'hard' | null;
}

export interface CreditDataConnector {
  readonly name: string;
  fetchCreditFile(subject: CreditSubject, context: { asOf: Date; tenantId: string }): Promise<CreditDataResult>;
}

/** What a "no file" answer becomes: a real CreditFile with nothing on it, so the engine can knock it out (AA-14). */
export function emptyCreditFile(fileId: string, source: string): CreditFile {
  return {
    fileId,
    source,
    hasFile: false,
    tradelines: 0,
    oldestTradelineMonths: 0,
    revolvingUtilizationPct: 0,
    delinquencies30dLast24m: 0,
    delinquencies90dLast24m: 0,
    collectionsOrJudgments: 0,
    bankruptcy: false,
    foreclosureOrRepossession: false,
    inquiriesLast6m: 0,
    monthlyObligationsCents: 0,
    estimatedMonthlyIncomeCents: 0,
  };
}
