/**
 * lib/json-text.ts writes by hand what JSON.stringify and Date#toISOString write: the same bytes,
 * for every input, or the hot paths that use it would answer differently from the rest.
 */
import { describe, expect, it } from 'vitest';
import { isoTimestamp, jsonString } from '../../../src/lib/json-text.js';

describe('jsonString', () => {
  it('is JSON.stringify for every single character and for null', () => {
    for (let c = 0; c <= 0xffff; c++) {
      const s = `a${String.fromCharCode(c)}b`;
      if (jsonString(s) !== JSON.stringify(s)) expect.fail(`U+${c.toString(16)}: ${jsonString(s)} against ${JSON.stringify(s)}`);
    }
    expect(jsonString(null)).toBe('null');
    expect(jsonString('')).toBe('""');
  });

  it('is JSON.stringify for strings that mix plain text, escapes, astral characters and lone surrogates', () => {
    const pieces = ['plain', '"', '\\', '\n', '\u0000', 'é', '\u2028', '😀', '\ud83d', '\ude00', '</script>', ' '];
    let seed = 7;
    // The high bits of a linear congruential generator: its low bits repeat with a short period.
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) >>> 12;
    for (let i = 0; i < 2000; i++) {
      let s = '';
      for (let n = next() % 6; n > 0; n--) s += pieces[next() % pieces.length];
      expect(jsonString(s)).toBe(JSON.stringify(s));
    }
  });
});

describe('isoTimestamp', () => {
  it('is toISOString at the edges of the calendar and of the four-digit years', () => {
    const instants = [
      0, -1, 1, 999, 1000, 86_399_999, 86_400_000, -86_400_000, -86_400_001,
      Date.UTC(2000, 1, 29, 23, 59, 59, 999), Date.UTC(2000, 2, 1), Date.UTC(1900, 1, 28, 12), Date.UTC(1900, 2, 1),
      Date.UTC(2100, 1, 28), Date.UTC(2100, 2, 1), Date.UTC(2024, 1, 29), Date.UTC(2026, 11, 31, 23, 59, 59, 999),
      -62_167_219_200_000, -62_167_219_200_001, 253_402_300_799_999, 253_402_300_800_000,
      // Date.UTC reads years 0 to 99 as 1900 to 1999: the years before 1000 are parsed from text.
      Date.parse('0001-01-01T00:00:00.000Z') - 1, Date.parse('0042-03-04T05:06:07.089Z'), Date.parse('0999-12-31T23:59:59.999Z'),
      8.64e15, -8.64e15, 1.5, -0.5,
    ];
    for (const ms of instants) expect(isoTimestamp(ms), String(ms)).toBe(new Date(ms).toISOString());
  });

  it('is toISOString for every day from year 1600 to 2500, at a varying time of day', () => {
    const from = Date.UTC(1600, 0, 1);
    const until = Date.UTC(2500, 0, 1);
    for (let day = from, i = 0; day < until; day += 86_400_000, i++) {
      const ms = day + ((i * 7_919_113) % 86_400_000);
      if (isoTimestamp(ms) !== new Date(ms).toISOString()) expect.fail(`${ms}: ${isoTimestamp(ms)} against ${new Date(ms).toISOString()}`);
    }
  });

  it('throws as toISOString does for an invalid time', () => {
    expect(() => isoTimestamp(Number.NaN)).toThrow(RangeError);
    expect(() => isoTimestamp(8.64e15 + 1)).toThrow(RangeError);
  });
});
