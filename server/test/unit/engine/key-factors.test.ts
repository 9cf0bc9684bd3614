import { describe, expect, it } from 'vitest';
import { keyFactorCodes, keyFactors } from '../../../src/modules/engine/index.js';

const partial = (reasonCode: string, pointsBelowBaseline: number, dataPresent = true) => ({ reasonCode, pointsBelowBaseline, dataPresent });

describe('FCRA key factors (15 U.S.C. 1681g(f))', () => {
  it('are the score ranking: largest gap first, ties in scorecard order, each code once, nothing at or above the baseline', () => {
    expect(keyFactorCodes([partial('AA-15', 10), partial('AA-17', 30), partial('AA-09', 10), partial('AA-17', 5), partial('AA-11', 0), partial('AA-07', -4)])).toEqual(['AA-17', 'AA-15', 'AA-09']);
    expect(keyFactorCodes([partial('AA-15', 0)])).toEqual([]);
  });

  it('stop at four, most important first', () => {
    expect(keyFactorCodes([partial('AA-01', 5), partial('AA-02', 50), partial('AA-03', 40), partial('AA-04', 30), partial('AA-05', 20), partial('AA-06', 10)])).toEqual(['AA-02', 'AA-03', 'AA-04', 'AA-05']);
  });

  it('add inquiries as a fifth when they lowered the score but are not among the four (1681g(f)(9))', () => {
    const five = [partial('AA-22', 3), partial('AA-02', 50), partial('AA-03', 40), partial('AA-04', 30), partial('AA-05', 20), partial('AA-06', 10)];
    expect(keyFactorCodes(five)).toEqual(['AA-02', 'AA-03', 'AA-04', 'AA-05', 'AA-22']);
    // Among the four already: no fifth. At the baseline: not a key factor, so not added.
    expect(keyFactorCodes([partial('AA-22', 45), ...five.slice(1)])).toEqual(['AA-02', 'AA-22', 'AA-03', 'AA-04']);
    expect(keyFactorCodes([partial('AA-22', 0), ...five.slice(1)])).toEqual(['AA-02', 'AA-03', 'AA-04', 'AA-05']);
  });

  it('are only what the file said: a characteristic scored in its missing bin (AA-14 "No credit file") is no factor', () => {
    expect(keyFactorCodes([partial('AA-14', 80, false), partial('AA-15', 9), partial('AA-22', 50, false)])).toEqual(['AA-15']);
  });

  it('carry the catalogue wording', () => {
    expect(keyFactors([partial('AA-22', 3), partial('AA-15', 9)])).toEqual([
      { code: 'AA-15', reason: 'Limited credit experience' },
      { code: 'AA-22', reason: 'Number of recent inquiries on credit bureau report' },
    ]);
  });
});
