import { describe, expect, it } from 'vitest';
import { copyPlainData } from '../../../src/lib/plain-data.js';

describe('copyPlainData', () => {
  it('copies plain data deeply: equal, shares nothing, undefined properties left out as JSON leaves them', () => {
    const original = { a: 1, b: 'x', c: null, d: true, e: [1, { f: [2, 3] }], g: { h: { i: -0.5 } }, j: undefined, k: Object.assign(Object.create(null), { l: 1 }) };
    const copy = copyPlainData(original);
    expect(copy).toEqual({ a: 1, b: 'x', c: null, d: true, e: [1, { f: [2, 3] }], g: { h: { i: -0.5 } }, k: { l: 1 } });
    expect('j' in copy).toBe(false);
    expect(copy.e).not.toBe(original.e);
    expect(copy.g.h).not.toBe(original.g.h);
    (original.e[1] as { f: number[] }).f.push(4);
    expect(copy.e[1]).toEqual({ f: [2, 3] });
    expect(copyPlainData(structuredClone(original))).toEqual(JSON.parse(JSON.stringify(original)));
  });

  it('refuses what is not plain data instead of copying it wrongly', () => {
    for (const value of [{ at: new Date(0) }, { m: new Map() }, [undefined], { f: () => 1 }, { n: 1n }, new (class Point {})()]) {
      expect(() => copyPlainData(value)).toThrow(TypeError);
    }
  });
});
