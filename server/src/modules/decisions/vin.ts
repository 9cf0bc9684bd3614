/**
 * Vehicle Identification Number checks (ISO 3779; 49 CFR 565, mandatory for vehicles sold in North
 * America from model year 1981): 17 characters from 0-9 and A-Z without I, O and Q, and position 9
 * a check digit. The check digit: transliterate each character (digits as themselves; letters by
 * 49 CFR 565.15 table: A=1 ... H=8, J=1 ... N=5, P=7, R=9, S=2 ... Z=9), multiply by the position
 * weights 8 7 6 5 4 3 2 10 0 9 8 7 6 5 4 3 2, sum, take the remainder of division by 11; 10 is
 * written "X". Position 10 is the model year (49 CFR 565.15): a code from a 30-year cycle,
 * A-H J-N P R-T V-Y for 1980-2000 and 2010-2030, then 1-9 for 2001-2009 and 2031-2039 (no I, O, Q,
 * U, Z or 0), so a code names one year in each 30-year cycle. Pure.
 */

const TRANSLITERATION: Readonly<Record<string, number>> = {
  A: 1, B: 2, C: 3, D: 4, E: 5, F: 6, G: 7, H: 8,
  J: 1, K: 2, L: 3, M: 4, N: 5, P: 7, R: 9,
  S: 2, T: 3, U: 4, V: 5, W: 6, X: 7, Y: 8, Z: 9,
};
const WEIGHTS = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2] as const;

export const VIN_PATTERN = /^[A-HJ-NPR-Z0-9]{17}$/;

/** The check digit a VIN's other 16 characters call for ("0"-"9" or "X"); the input must match VIN_PATTERN. */
export function vinCheckDigit(vin: string): string {
  let sum = 0;
  for (let i = 0; i < 17; i++) {
    const ch = vin[i]!;
    const value = ch >= '0' && ch <= '9' ? Number(ch) : TRANSLITERATION[ch];
    if (value === undefined) throw new RangeError(`not a VIN character: ${ch}`);
    sum += value * WEIGHTS[i]!;
  }
  const remainder = sum % 11;
  return remainder === 10 ? 'X' : String(remainder);
}

export type VinProblem = 'length' | 'characters' | 'check_digit';

/** Why a VIN is not valid (after upper-casing), or null when it is. */
export function vinProblem(vin: string): VinProblem | null {
  if (vin.length !== 17) return 'length';
  if (!VIN_PATTERN.test(vin)) return 'characters';
  return vin[8] === vinCheckDigit(vin) ? null : 'check_digit';
}

/** The 30 model-year codes of position 10, from 1980 (and 2010, 2040, ...) on. */
const MODEL_YEAR_CODES = 'ABCDEFGHJKLMNPRSTVWXY123456789';

/** Position 10's code for a model year from 1980 on. */
export function vinModelYearCode(year: number): string {
  return MODEL_YEAR_CODES[(((year - 1980) % 30) + 30) % 30]!;
}

/** The model years from 1980 to 2039 a position-10 code names (one per 30-year cycle); none for a character that is no code. */
export function vinModelYears(code: string): number[] {
  const index = MODEL_YEAR_CODES.indexOf(code);
  return index < 0 ? [] : [1980 + index, 2010 + index];
}
