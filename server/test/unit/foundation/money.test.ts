import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { formatMoney, parseMoney } from '../../../src/lib/money.js';

describe('money', () => {
  it('parses strings and JSON numbers with at most two decimals into cents', () => {
    expect(parseMoney('149.97')).toBe(14997);
    expect(parseMoney('0.1')).toBe(10);
    expect(parseMoney('25')).toBe(2500);
    expect(parseMoney(149.97)).toBe(14997);
    expect(parseMoney(0.29)).toBe(29); // 0.29 * 100 is 28.999999999999996 in floating point
    expect(parseMoney(1e21)).toBeNull();
  });

  it('refuses anything that is not a plain non-negative amount', () => {
    for (const bad of ['', ' 1', '1.234', '-1', '+1', '1e3', '01', '1,000.00', '.5', '5.', 'NaN', null, undefined, true, {}, -1, 1.005, Infinity]) {
      expect(parseMoney(bad), String(bad)).toBeNull();
    }
  });

  it('formats cents as two-decimal strings', () => {
    expect(formatMoney(0)).toBe('0.00');
    expect(formatMoney(5)).toBe('0.05');
    expect(formatMoney(123456)).toBe('1234.56');
    expect(formatMoney(-5)).toBe('-0.05');
    expect(() => formatMoney(1.5)).toThrow();
  });

  it('round-trips every cent amount', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 10_000_000_00 }), (cents) => parseMoney(formatMoney(cents)) === cents));
  });
});
