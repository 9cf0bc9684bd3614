/**
 * The auto-loan engine on its own versioned documents: outcomes for the sandbox's files, collateral
 * rules (LTV by grade, mileage, vehicle age, term for the age), pricing by grade, term and
 * condition, the policy's constants (tiers, range, markup caps, reserve share).
 */
import { describe, expect, it } from 'vitest';
import { syntheticCreditData } from '../../../src/modules/credit-data/sandbox-connector.js';
import { decideAutoLoan, defaultAutoLoanDocuments, kycTierFor, markupCapBps, type AutoLoanTerms } from '../../../src/modules/engine/index.js';

const docs = defaultAutoLoanDocuments();
const history = { returning: false, priorApprovals: 0, priorDeclines: 0 };
const subject = (ssnLast4: string | null, sandboxProfile: 'soft' | null = null) => ({ consumerId: 'c', firstName: 'Pat', lastName: 'Driver', dob: '1980-02-02', ssnLast4, zip: '10001', sandboxProfile });
const prime = syntheticCreditData(subject(null, 'soft'));
const loan = (extra: Partial<AutoLoanTerms> = {}): AutoLoanTerms => ({ amountFinancedCents: 2_500_000, termMonths: 60, ltvPct: 90, vehicleAgeYears: 2, mileage: 20_000, condition: 'used', ...extra });
const decide = (l: AutoLoanTerms, creditData = prime) => decideAutoLoan({ loan: l, history, creditData, asOf: '2026-03-15T12:00:00.000Z' }, docs);

describe('auto-loan engine', () => {
  it('names its own scorecard and policy versions', async () => {
    const d = await decide(loan());
    expect(d.engineVersion).toMatch(/^engine-[0-9.]+\+auto-sc-2026\.11\.1\+auto-policy-2026\.11\.1$/);
    expect(d.versions).toMatchObject({ scorecard: 'auto-sc-2026.11.1', policy: 'auto-policy-2026.11.1' });
  });

  it('approves a prime file at grade A and prices by term and condition', async () => {
    const rates: Record<string, number | null> = {};
    for (const termMonths of [24, 36, 48, 60, 72, 84]) {
      for (const condition of ['new', 'used'] as const) {
        const d = await decide(loan({ termMonths, condition, vehicleAgeYears: 0 }));
        expect(d.outcome).toBe('approved');
        expect(d.riskGrade).toBe('A');
        expect(d.reasons).toEqual([]);
        rates[`${termMonths}-${condition}`] = d.buyRateBps;
      }
    }
    expect(rates).toEqual({
      '24-new': 549, '24-used': 649, '36-new': 549, '36-used': 649, '48-new': 549, '48-used': 649,
      '60-new': 599, '60-used': 699, '72-new': 649, '72-used': 749, '84-new': 699, '84-used': 799,
    });
  });

  it('declines sandbox 0000 (bankruptcy knock-out first), refers 1111 (income not verifiable, AA-10) and 3333 (AA-25)', async () => {
    const declined = await decide(loan(), syntheticCreditData(subject('0000')));
    expect(declined.outcome).toBe('declined');
    expect(declined.reasons[0]!.code).toBe('AA-21');
    expect(declined.reasons.length).toBeLessThanOrEqual(4);
    const referred = await decide(loan(), syntheticCreditData(subject('1111')));
    expect(referred.outcome).toBe('referred');
    expect(referred.policyResult!.outcomeRule).toBe('income_not_verifiable');
    expect(referred.reasons.map((r) => r.code)).toContain('AA-10');
    // The referral holds whatever the collateral: the income rule comes before the bands.
    for (const l of [loan({ ltvPct: 40, vehicleAgeYears: 0, mileage: 5 }), loan({ ltvPct: 125, vehicleAgeYears: 8, mileage: 140_000 })]) {
      expect((await decide(l, syntheticCreditData(subject('1111')))).outcome).toBe('referred');
    }
    const unavailable = await decide(loan(), syntheticCreditData(subject('3333')));
    expect(unavailable).toMatchObject({ outcome: 'referred', creditDataUnavailable: true, score: null });
    expect(unavailable.reasons.map((r) => r.code)).toEqual(['AA-25']);
  });

  it('declines on collateral with AA-23 first: LTV above the grade maximum, mileage, vehicle age, term too long for the age', async () => {
    const cases: Array<[Partial<AutoLoanTerms>, string]> = [
      [{ ltvPct: 130.01 }, 'ltv_above_maximum'],
      [{ mileage: 150_001 }, 'mileage_above_maximum'],
      [{ vehicleAgeYears: 13, termMonths: 36 }, 'vehicle_too_old'],
      [{ vehicleAgeYears: 8, termMonths: 72 }, 'term_too_long_for_vehicle_age'],
      [{ vehicleAgeYears: 5, termMonths: 84 }, 'term_too_long_for_vehicle_age'],
    ];
    for (const [extra, rule] of cases) {
      const d = await decide(loan(extra));
      expect(d.outcome, rule).toBe('declined');
      expect(d.policyResult!.collateralRules, rule).toContain(rule);
      expect(d.reasons[0]!.code, rule).toBe('AA-23');
    }
    // Just inside every limit: approved.
    for (const extra of [{ ltvPct: 130 }, { mileage: 150_000 }, { vehicleAgeYears: 12, termMonths: 36 }, { vehicleAgeYears: 8, termMonths: 60 }, { vehicleAgeYears: 5, termMonths: 72 }]) {
      expect((await decide(loan(extra))).outcome, JSON.stringify(extra)).toBe('approved');
    }
  });

  it('scores the collateral: a higher LTV, an older, higher-mileage vehicle scores lower', async () => {
    const good = await decide(loan({ ltvPct: 70, vehicleAgeYears: 0, mileage: 10 }));
    const worse = await decide(loan({ ltvPct: 120, vehicleAgeYears: 7, mileage: 100_000 }));
    expect(good.score! - worse.score!).toBe(50 - 10 + (20 - 8) + (10 - 3));
  });

  it('carries its constants: tiers, amount-financed range, markup caps (1.25 up to 60 months, 1.00 above), reserve share', () => {
    const c = docs.policy.constants;
    expect(c.amountFinanced).toEqual({ minCents: 500_000, maxCents: 10_000_000 });
    expect(c.dealerReserveSharePct).toBe(75);
    expect([24, 36, 48, 60, 72, 84].map((t) => markupCapBps(t, docs.policy))).toEqual([125, 125, 125, 125, 100, 100]);
    expect([1_499_999, 1_500_000, 3_999_999, 4_000_000].map((a) => kycTierFor(a, docs.policy))).toEqual(['soft', 'enhanced', 'enhanced', 'hard']);
  });
});
