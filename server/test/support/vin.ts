/**
 * Valid VINs for test vehicles of a given model year. The base is a real Honda Accord VIN
 * (1HGCM82633A004352, model year 2003): position 10 is set to the year's code and position 9 to
 * the check digit, so the VIN passes the same checks a lender's real one does. The year-code and
 * check-digit rules themselves are tested against real VINs in test/unit/auto-loan/vin.test.ts.
 */
import { vinCheckDigit, vinModelYearCode } from '../../src/modules/decisions/vin.js';

export function vinFor(year: number, base = '1HGCM82633A004352'): string {
  const withYear = base.slice(0, 9) + vinModelYearCode(year) + base.slice(10);
  return withYear.slice(0, 8) + vinCheckDigit(withYear) + withYear.slice(9);
}

/** A 2024 Honda Accord's VIN, the vehicle most tests finance. */
export const ACCORD_2024_VIN = vinFor(2024);
