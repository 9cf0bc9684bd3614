/** VIN checks (ISO 3779 / 49 CFR 565) on real VINs and single-character corruptions of them. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { vinCheckDigit, vinModelYearCode, vinModelYears, vinProblem } from '../../../src/modules/decisions/vin.js';
import { vinFor } from '../../support/vin.js';

// Published, check-digit-valid VINs: 49 CFR 565's worked example style (Wikipedia's 1M8GDM9AXKP042788,
// check digit X), a 2003 Honda Accord, a 1993 Acura Legend, a 2006 Chevrolet Malibu.
const REAL = ['1M8GDM9AXKP042788', '1HGCM82633A004352', 'JH4KA7561PC008269', '1G1ZT53826F109149', '11111111111111111'];

describe('VIN', () => {
  it('accepts real VINs and computes their check digit, X included', () => {
    for (const vin of REAL) expect(vinProblem(vin), vin).toBeNull();
    expect(vinCheckDigit('1M8GDM9AXKP042788')).toBe('X');
    expect(vinCheckDigit('1HGCM82633A004352')).toBe('3');
  });

  it('names the problem: length, characters (I, O, Q, lower case, symbols), check digit', () => {
    expect(vinProblem('1HGCM82633A00435')).toBe('length');
    expect(vinProblem('1HGCM82633A0043521')).toBe('length');
    expect(vinProblem('1HGCM8263IA004352')).toBe('characters');
    expect(vinProblem('1HGCM8263OA004352')).toBe('characters');
    expect(vinProblem('1HGCM8263QA004352')).toBe('characters');
    expect(vinProblem('1hgcm82633a004352')).toBe('characters');
    expect(vinProblem('1HGCM82633A00435-')).toBe('characters');
    expect(vinProblem('1HGCM82634A004352')).toBe('check_digit');
    expect(vinProblem('1M8GDM9A1KP042788')).toBe('check_digit');
  });

  it('catches every single-digit typing error outside the check position (weights are nonzero mod 11, except position 9)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...REAL.slice(0, 4)), fc.integer({ min: 0, max: 16 }), fc.integer({ min: 1, max: 9 }), (vin, pos, delta) => {
        fc.pre(pos !== 8 && /[0-9]/.test(vin[pos]!));
        const changed = vin.slice(0, pos) + String((Number(vin[pos]) + delta) % 10) + vin.slice(pos + 1);
        expect(vinProblem(changed)).toBe('check_digit');
      }),
    );
  });

  it('reads the model year of position 10 on real VINs (the 1989 coach, 2003 Accord, 1993 Legend, 2006 Malibu)', () => {
    const years: Record<string, number> = { '1M8GDM9AXKP042788': 1989, '1HGCM82633A004352': 2003, JH4KA7561PC008269: 1993, '1G1ZT53826F109149': 2006 };
    for (const [vin, year] of Object.entries(years)) {
      expect(vinModelYearCode(year), vin).toBe(vin[9]);
      expect(vinModelYears(vin[9]!), vin).toContain(year);
    }
    // The published code table: A-H J-N P R-T V-Y from 1980 (2010), then 1-9 from 2001 (2031).
    expect([1980, 1988, 1989, 1993, 1994, 1996, 1997, 2000, 2001, 2009, 2010, 2018, 2024, 2026, 2027, 2030, 2031].map(vinModelYearCode).join('')).toBe('AJKPRTVY19AJRTVY1');
    expect(vinModelYears('R')).toEqual([1994, 2024]);
    expect(vinModelYears('9')).toEqual([2009, 2039]);
    for (const notACode of ['U', 'Z', '0', 'I']) expect(vinModelYears(notACode)).toEqual([]);
  });

  it('builds test VINs for any model year that pass every check', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1981, max: 2039 }), (year) => {
        const vin = vinFor(year);
        expect(vinProblem(vin)).toBeNull();
        expect(vinModelYears(vin[9]!)).toContain(year);
      }),
    );
  });
});
