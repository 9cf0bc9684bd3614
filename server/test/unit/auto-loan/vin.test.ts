/** VIN checks (ISO 3779 / 49 CFR 565) on real VINs and single-character corruptions of them. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { vinCheckDigit, vinProblem } from '../../../src/modules/decisions/vin.js';

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
});
