/** The auto-loan request rules: amount financed, LTV rounding, vehicle age, and the 400/422 split. */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/http/errors/error-registry.js';
import { ltvHundredths, ltvPctForPolicy, normalizeAutoLoanRequest, type AutoLoanCreateBody } from '../../../src/modules/decisions/auto-loan-request.js';
import { defaultAutoLoanDocuments } from '../../../src/modules/engine/index.js';
import { vinCheckDigit } from '../../../src/modules/decisions/vin.js';
import { vinFor } from '../../support/vin.js';

const policy = defaultAutoLoanDocuments().policy.constants;
const asOf = new Date('2026-03-15T12:00:00Z');
const body = (patch: { vehicle?: Partial<AutoLoanCreateBody['vehicle']>; loan?: Partial<AutoLoanCreateBody['loan']>; channel?: 'direct' | 'indirect'; dealer?: AutoLoanCreateBody['dealer'] } = {}): AutoLoanCreateBody => ({
  consumer: { consumer_id: '8a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d' },
  vehicle: { vin: '1g1zt5384vf109149', year: 2027, make: ' Chevrolet ', model: 'Malibu', mileage: 0, condition: 'new', value: '30000.00', ...patch.vehicle },
  loan: { amount: '32000.00', down_payment: '4000.00', trade_in_value: 1500.5, term_months: 72, currency: 'USD', ...patch.loan },
  channel: patch.channel ?? 'direct',
  ...(patch.dealer ? { dealer: patch.dealer } : {}),
});
const failure = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError) return { code: e.code, message: e.message };
    throw e;
  }
  throw new Error('did not fail');
};

describe('auto-loan request rules', () => {
  it('derives the amount financed, the LTV (half up, two decimals) and the vehicle age', () => {
    const a = normalizeAutoLoanRequest(body(), policy, asOf);
    expect(a.loan).toEqual({ amountCents: 3_200_000, downPaymentCents: 400_000, tradeInValueCents: 150_050, amountFinancedCents: 2_649_950, termMonths: 72 });
    // 26,499.50 / 30,000.00 = 88.331666...% -> 88.33
    expect(a.ltvHundredths).toBe(8_833);
    expect(a.vehicle).toMatchObject({ vin: '1G1ZT5384VF109149', make: 'Chevrolet', ageYears: 0, valueCents: 3_000_000 });
    expect(normalizeAutoLoanRequest(body({ vehicle: { year: 2019, vin: vinFor(2019, '1G1ZT53826F109149') } }), policy, asOf).vehicle.ageYears).toBe(7);
    expect(ltvHundredths(1, 3)).toBe(3_333); // 33.333...
    expect(ltvHundredths(2, 3)).toBe(6_667); // 66.666... half up
    expect(ltvHundredths(1, 8)).toBe(1_250); // exactly 12.50
    // What the policy compares: rounded up, so a loan over a limit never reads as at it.
    expect(ltvHundredths(1_300_049, 1_000_000)).toBe(13_000); // shown 130.00
    expect(ltvPctForPolicy(1_300_049, 1_000_000)).toBe(130.01); // compared as 130.01 > 130
    expect(ltvPctForPolicy(1_300_000, 1_000_000)).toBe(130); // exact stays exact
    expect(ltvPctForPolicy(2, 3)).toBe(66.67);
    expect(ltvPctForPolicy(1, 3)).toBe(33.34);
    expect(ltvHundredths(1, 80_000)).toBe(0); // 0.00125% -> 0.00
    expect(ltvHundredths(1, 20_000)).toBe(1); // 0.005% -> 0.01 (half up)
  });

  it('parses the markup exactly and checks the cap at the term band boundaries', () => {
    const dealer = (m: string | number) => ({ dealer_id: 'A3B2C1D0-0000-4000-8000-000000000001', markup_rate_pct: m });
    expect(normalizeAutoLoanRequest(body({ channel: 'indirect', dealer: dealer('1.00') }), policy, asOf).dealer).toEqual({ dealerId: 'a3b2c1d0-0000-4000-8000-000000000001', markupBps: 100 });
    expect(normalizeAutoLoanRequest(body({ channel: 'indirect', dealer: dealer(1.25), loan: { term_months: 60 } }), policy, asOf).dealer!.markupBps).toBe(125);
    expect(failure(() => normalizeAutoLoanRequest(body({ channel: 'indirect', dealer: dealer('1.01') }), policy, asOf))).toMatchObject({ code: 'unprocessable_entity' });
    expect(failure(() => normalizeAutoLoanRequest(body({ channel: 'indirect', dealer: dealer(1.26), loan: { term_months: 60 } }), policy, asOf)).message).toContain('1.25 percentage points for terms up to 60 months');
    expect(failure(() => normalizeAutoLoanRequest(body({ channel: 'indirect', dealer: dealer('1.001') }), policy, asOf)).code).toBe('invalid_request');
    expect(failure(() => normalizeAutoLoanRequest(body({ channel: 'indirect', dealer: dealer(-0.5) }), policy, asOf)).code).toBe('invalid_request');
  });

  it('gives 400 for shape problems before any 422', () => {
    // Both a bad VIN (400) and a bad currency (422): the 400 wins.
    expect(failure(() => normalizeAutoLoanRequest(body({ vehicle: { vin: '1G1ZT53826F109148' }, loan: { currency: 'EUR' } }), policy, asOf)).code).toBe('invalid_request');
    expect(failure(() => normalizeAutoLoanRequest(body({ loan: { currency: 'EUR' } }), policy, asOf)).code).toBe('unprocessable_entity');
    expect(failure(() => normalizeAutoLoanRequest(body({ loan: { down_payment: '30500.00', trade_in_value: '1500.00' } }), policy, asOf)).message).toContain('nothing would be financed');
    expect(failure(() => normalizeAutoLoanRequest(body({ loan: { amount: '10000.00', down_payment: '5000.01', trade_in_value: 0 } }), policy, asOf)).message).toContain('4999.99');
  });

  it('refuses a model year the VIN does not carry (position 10), as a 422 naming both, after every 400', () => {
    // The body's VIN carries "V": 2027, or 1997 one 30-year cycle earlier.
    const wrong = failure(() => normalizeAutoLoanRequest(body({ vehicle: { year: 2026 } }), policy, asOf));
    expect(wrong).toEqual({ code: 'unprocessable_entity', message: 'vehicle.year 2026 does not match vehicle.vin, whose model-year code "V" (position 10) means model year 1997 or 2027; check both.' });
    // The same code one cycle earlier is that year: a 1997 vehicle with this VIN is accepted (and declined later by the policy's age rule, not here).
    expect(normalizeAutoLoanRequest(body({ vehicle: { year: 1997 } }), policy, asOf).vehicle.ageYears).toBe(29);
    // A character that is no year code (U, Z, 0) says so.
    const uVin = '1G1ZT5384UF109149';
    const fixed = uVin.slice(0, 8) + vinCheckDigit(uVin) + uVin.slice(9);
    expect(failure(() => normalizeAutoLoanRequest(body({ vehicle: { vin: fixed } }), policy, asOf)).message).toContain('whose position 10 "U" is not a model-year code; check both.');
    // A bad check digit and a wrong year: the 400 wins.
    expect(failure(() => normalizeAutoLoanRequest(body({ vehicle: { vin: '1G1ZT5383VF109149', year: 2026 } }), policy, asOf)).code).toBe('invalid_request');
  });
});
