/**
 * The sandbox's credit bureau: a synthetic credit file per person, derived from a hash of who they
 * are, so the same person always gets the same file and no live data source is ever touched.
 *
 * How a file is chosen (first rule that applies):
 * 1. Seeded sandbox consumers (`sandboxProfile` set) get a prime file, so they approve as the
 *    sandbox table of interface.md promises for their baskets (25-200, 500-5,000, 5,000+).
 * 2. Magic `ssn_last4` values (decisions.md section 6): `3333` -> credit data unavailable
 *    (`magic_value`); `0000` -> a file with a bankruptcy, which the default policy declines
 *    (AA-21); `1111` -> a file that scores in the default policy's referral band for any amount;
 *    `2222` (identity verification fails, handled by the identity module) -> an ordinary good file.
 * 3. Anyone else: SHA-256 of the normalised name and date of birth picks a profile (prime,
 *    near-prime, fair, marginal, subprime, thin, no file, bankrupt) and the values inside it, so
 *    sandbox traffic shows every risk grade. SSN digits and address are left out of the hash on
 *    purpose: a consumer who adds their SSN later or moves is still the same person.
 * Pure and synchronous underneath (`syntheticCreditData`); the connector only wraps it in a promise.
 */
import { createHash } from 'node:crypto';
import { emptyCreditFile, type CreditDataConnector, type CreditDataResult, type CreditFile, type CreditSubject } from './credit-data.types.js';

export const SANDBOX_SOURCE = 'sandbox-synthetic';

export const SANDBOX_MAGIC_SSN_LAST4 = {
  declined: '0000',
  referred: '1111',
  verificationFails: '2222',
  creditDataUnavailable: '3333',
} as const;

type FileValues = Omit<CreditFile, 'fileId' | 'source' | 'hasFile'>;

/** Inclusive ranges a profile draws from; income and debt-to-income give the obligations. */
interface Profile {
  name: string;
  /** Share of non-magic sandbox consumers, per mille. */
  weight: number;
  hasFile: boolean;
  utilizationPct: [number, number];
  delinquencies30: [number, number];
  delinquencies90: [number, number];
  collections: [number, number];
  /** Chance, per mille, of a foreclosure or repossession. */
  foreclosurePerMille: number;
  bankruptcy: boolean;
  tradelines: [number, number];
  oldestMonths: [number, number];
  inquiries: [number, number];
  incomeDollars: [number, number];
  debtToIncomePct: [number, number];
}

const PROFILES: readonly Profile[] = [
  profile('prime', 300, [1, 12], [0, 0], [0, 0], [0, 0], 0, [9, 25], [90, 240], [0, 1], [6_000, 15_000], [5, 14]),
  profile('near_prime', 250, [35, 60], [1, 1], [0, 0], [0, 0], 0, [4, 9], [30, 90], [2, 3], [4_000, 9_000], [25, 38]),
  profile('fair', 180, [45, 80], [1, 2], [0, 1], [0, 0], 0, [3, 8], [24, 72], [2, 4], [3_000, 6_000], [28, 42]),
  profile('marginal', 100, [65, 90], [1, 2], [0, 0], [0, 1], 50, [3, 6], [18, 48], [3, 4], [2_500, 4_500], [35, 48]),
  profile('subprime', 100, [90, 130], [2, 6], [1, 3], [1, 4], 250, [1, 6], [6, 60], [4, 9], [1_800, 3_500], [45, 70]),
  profile('thin', 40, [0, 30], [0, 0], [0, 0], [0, 0], 0, [1, 2], [3, 18], [0, 2], [2_000, 4_000], [5, 20]),
  { ...profile('no_file', 20, [0, 0], [0, 0], [0, 0], [0, 0], 0, [0, 0], [0, 0], [0, 0], [0, 0], [0, 0]), hasFile: false },
  { ...profile('bankrupt', 10, [60, 110], [1, 4], [1, 2], [0, 2], 100, [3, 10], [24, 120], [2, 6], [2_000, 4_000], [35, 60]), bankruptcy: true },
];

/** Seeded consumers: one fixed, unmistakably prime file. */
const SEEDED_PRIME: FileValues = {
  tradelines: 18,
  oldestTradelineMonths: 156,
  revolvingUtilizationPct: 4,
  delinquencies30dLast24m: 0,
  delinquencies90dLast24m: 0,
  collectionsOrJudgments: 0,
  bankruptcy: false,
  foreclosureOrRepossession: false,
  inquiriesLast6m: 0,
  monthlyObligationsCents: 140_000,
  estimatedMonthlyIncomeCents: 1_200_000,
};

/** `0000`: a bankruptcy on a weak file; the default policy knocks it out with AA-21. */
const MAGIC_DECLINED: FileValues = {
  tradelines: 6,
  oldestTradelineMonths: 60,
  revolvingUtilizationPct: 95,
  delinquencies30dLast24m: 3,
  delinquencies90dLast24m: 2,
  collectionsOrJudgments: 2,
  bankruptcy: true,
  foreclosureOrRepossession: false,
  inquiriesLast6m: 4,
  monthlyObligationsCents: 150_000,
  estimatedMonthlyIncomeCents: 280_000,
};

/**
 * `1111`: a mixed file with no income estimate. Income-based characteristics then score their
 * fixed "income not available" points, so the score (575 plus 0-20 for the history with the
 * lender) stays inside the default referral band 560-599 whatever the amount.
 */
const MAGIC_REFERRED: FileValues = {
  tradelines: 4,
  oldestTradelineMonths: 48,
  revolvingUtilizationPct: 60,
  delinquencies30dLast24m: 1,
  delinquencies90dLast24m: 0,
  collectionsOrJudgments: 1,
  bankruptcy: false,
  foreclosureOrRepossession: false,
  inquiriesLast6m: 3,
  monthlyObligationsCents: 90_000,
  estimatedMonthlyIncomeCents: 0,
};

/** SHA-256 of the normalised identity (name and date of birth). */
export function sandboxIdentityHash(subject: Pick<CreditSubject, 'firstName' | 'lastName' | 'dob'>): Buffer {
  const norm = (s: string) => s.normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase();
  return createHash('sha256')
    .update(`cds-sandbox-credit-v1\n${norm(subject.firstName)}\n${norm(subject.lastName)}\n${subject.dob.trim()}`)
    .digest();
}

/** The sandbox's answer for a subject. Pure: the same subject always gets the same result. */
export function syntheticCreditData(subject: CreditSubject): CreditDataResult {
  const hash = sandboxIdentityHash(subject);
  const ref = hash.toString('hex').slice(0, 16);
  if (subject.sandboxProfile !== null) return ok(`sbx_seeded_${ref}`, SEEDED_PRIME);
  switch (subject.ssnLast4) {
    case SANDBOX_MAGIC_SSN_LAST4.creditDataUnavailable:
      return { status: 'unavailable', reason: 'magic_value', detail: 'sandbox magic value: credit data unavailable', latencyMs: 0 };
    case SANDBOX_MAGIC_SSN_LAST4.declined:
      return ok(`sbx_magic_declined_${ref}`, MAGIC_DECLINED);
    case SANDBOX_MAGIC_SSN_LAST4.referred:
      return ok(`sbx_magic_referred_${ref}`, MAGIC_REFERRED);
    case SANDBOX_MAGIC_SSN_LAST4.verificationFails:
      return ok(`sbx_${ref}`, drawFile(profileNamed('prime'), hash));
  }
  const chosen = pickProfile(hash);
  if (!chosen.hasFile) return { status: 'ok', file: emptyCreditFile(`sbx_${ref}`, SANDBOX_SOURCE), latencyMs: 0 };
  return ok(`sbx_${ref}`, drawFile(chosen, hash));
}

export class SandboxCreditDataConnector implements CreditDataConnector {
  readonly name = SANDBOX_SOURCE;
  fetchCreditFile(subject: CreditSubject, _context: { asOf: Date; tenantId: string }): Promise<CreditDataResult> {
    return Promise.resolve(syntheticCreditData(subject));
  }
}

export function createSandboxConnector(): CreditDataConnector {
  return new SandboxCreditDataConnector();
}

/** Which profile a hash falls in (exported for the sandbox docs and tests). */
export function sandboxProfileFor(subject: Pick<CreditSubject, 'firstName' | 'lastName' | 'dob'>): string {
  return pickProfile(sandboxIdentityHash(subject)).name;
}

function pickProfile(hash: Buffer): Profile {
  // Bytes 0-1 choose the profile; bytes 2 onwards choose values inside it.
  let ticket = hash.readUInt16BE(0) % 1000;
  for (const p of PROFILES) {
    if (ticket < p.weight) return p;
    ticket -= p.weight;
  }
  return PROFILES[0] as Profile;
}

function profileNamed(name: string): Profile {
  return PROFILES.find((p) => p.name === name) as Profile;
}

function drawFile(p: Profile, hash: Buffer): FileValues {
  let cursor = 2;
  // Two bytes per draw: the 32-byte hash covers the 11 draws with room to spare.
  const draw = ([lo, hi]: [number, number]): number => {
    const value = hash.readUInt16BE(cursor);
    cursor += 2;
    return lo + (value % (hi - lo + 1));
  };
  const incomeCents = draw(p.incomeDollars) * 100;
  const dti = draw(p.debtToIncomePct);
  return {
    revolvingUtilizationPct: draw(p.utilizationPct),
    delinquencies30dLast24m: draw(p.delinquencies30),
    delinquencies90dLast24m: draw(p.delinquencies90),
    collectionsOrJudgments: draw(p.collections),
    foreclosureOrRepossession: draw([0, 999]) < p.foreclosurePerMille,
    bankruptcy: p.bankruptcy,
    tradelines: draw(p.tradelines),
    oldestTradelineMonths: draw(p.oldestMonths),
    inquiriesLast6m: draw(p.inquiries),
    estimatedMonthlyIncomeCents: incomeCents,
    monthlyObligationsCents: Math.round((incomeCents * dti) / 100),
  };
}

function ok(fileId: string, values: FileValues): CreditDataResult {
  return { status: 'ok', file: { fileId, source: SANDBOX_SOURCE, hasFile: true, ...values }, latencyMs: 0 };
}


function profile(
  name: string,
  weight: number,
  utilizationPct: [number, number],
  delinquencies30: [number, number],
  delinquencies90: [number, number],
  collections: [number, number],
  foreclosurePerMille: number,
  tradelines: [number, number],
  oldestMonths: [number, number],
  inquiries: [number, number],
  incomeDollars: [number, number],
  debtToIncomePct: [number, number],
): Profile {
  return {
    name,
    weight,
    hasFile: true,
    bankruptcy: false,
    utilizationPct,
    delinquencies30,
    delinquencies90,
    collections,
    foreclosurePerMille,
    tradelines,
    oldestMonths,
    inquiries,
    incomeDollars,
    debtToIncomePct,
  };
}
