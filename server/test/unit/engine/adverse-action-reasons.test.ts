import { describe, expect, it } from 'vitest';
import {
  ADVERSE_ACTION_REASONS,
  REFERRAL_ONLY_CODES,
  adverseActionReason,
  isAdverseActionCode,
} from '../../../src/modules/engine/adverse-action-reasons.js';

// Regulation B, Appendix C, Sample Form C-1, Part I, lines 1-23, verbatim and in order (reference.md 2.1).
const FORM_C1 = [
  'Credit application incomplete',
  'Insufficient number of credit references provided',
  'Unacceptable type of credit references provided',
  'Unable to verify credit references',
  'Temporary or irregular employment',
  'Unable to verify employment',
  'Length of employment',
  'Income insufficient for amount of credit requested',
  'Excessive obligations in relation to income',
  'Unable to verify income',
  'Length of residence',
  'Temporary residence',
  'Unable to verify residence',
  'No credit file',
  'Limited credit experience',
  'Poor credit performance with us',
  'Delinquent past or present credit obligations with others',
  'Collection action or judgment',
  'Garnishment or attachment',
  'Foreclosure or repossession',
  'Bankruptcy',
  'Number of recent inquiries on credit bureau report',
  'Value or type of collateral not sufficient',
];

describe('adverse-action reason registry', () => {
  it('holds AA-01..AA-23 with Form C-1 wording in Form C-1 order', () => {
    FORM_C1.forEach((reason, i) => {
      const code = `AA-${String(i + 1).padStart(2, '0')}`;
      expect(ADVERSE_ACTION_REASONS[i]).toEqual({ code, reason });
    });
  });

  it('appends AA-24 and AA-25 and nothing else', () => {
    expect(ADVERSE_ACTION_REASONS).toHaveLength(25);
    expect(ADVERSE_ACTION_REASONS[23]).toEqual({ code: 'AA-24', reason: 'Unable to verify identity' });
    expect(ADVERSE_ACTION_REASONS[24]).toEqual({ code: 'AA-25', reason: 'Credit information temporarily unavailable' });
  });

  it('has unique codes and marks AA-25 as referral-only', () => {
    expect(new Set(ADVERSE_ACTION_REASONS.map((r) => r.code)).size).toBe(25);
    expect([...REFERRAL_ONLY_CODES]).toEqual(['AA-25']);
  });

  it('looks reasons up by code and refuses unknown codes', () => {
    expect(adverseActionReason('AA-21')).toEqual({ code: 'AA-21', reason: 'Bankruptcy' });
    expect(() => adverseActionReason('AA-26')).toThrow(RangeError);
    expect(isAdverseActionCode('AA-14')).toBe(true);
    expect(isAdverseActionCode('AA-1')).toBe(false);
    expect(isAdverseActionCode(14)).toBe(false);
  });

  it('hands out copies, so callers cannot reword the registry', () => {
    const copy = adverseActionReason('AA-08');
    copy.reason = 'changed';
    expect(adverseActionReason('AA-08').reason).toBe('Income insufficient for amount of credit requested');
  });
});
