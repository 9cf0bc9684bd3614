import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { canonicalJson, parseIdempotencyKey, requestFingerprint } from '../../../src/modules/idempotency/idempotency.service.js';

describe('idempotency fingerprint', () => {
  it('ignores key order at every depth but not values, method or path', () => {
    const a = requestFingerprint('POST', '/v1/decisions/bnpl', { b: 1, a: { y: [1, 2], x: '1.50' } });
    expect(requestFingerprint('post', '/v1/decisions/bnpl', { a: { x: '1.50', y: [1, 2] }, b: 1 })).toBe(a);
    expect(requestFingerprint('POST', '/v1/decisions/bnpl', { a: { x: '1.50', y: [2, 1] }, b: 1 })).not.toBe(a);
    expect(requestFingerprint('POST', '/v1/decisions/bnpl', { b: 1, a: { y: [1, 2], x: '1.5' } })).not.toBe(a);
    expect(requestFingerprint('POST', '/v1/other', { b: 1, a: { y: [1, 2], x: '1.50' } })).not.toBe(a);
  });

  it('canonical JSON parses back to the same value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(JSON.parse(canonicalJson(v))).toEqual(JSON.parse(JSON.stringify(v)));
      }),
    );
  });

  it('accepts 1 to 255 printable ASCII characters only', () => {
    expect(parseIdempotencyKey(undefined)).toBeNull();
    expect(parseIdempotencyKey('a')).toBe('a');
    expect(parseIdempotencyKey('~'.repeat(255))).toHaveLength(255);
    for (const bad of ['', 'x'.repeat(256), 'new\nline', '\u00e9', ['a', 'b']]) {
      expect(() => parseIdempotencyKey(bad as string)).toThrow(/Idempotency-Key/);
    }
  });

  it('refuses a key sent twice, which Node joins into one value', () => {
    expect(parseIdempotencyKey('k1', ['Host', 'x', 'Idempotency-Key', 'k1'])).toBe('k1');
    expect(() => parseIdempotencyKey('k1, k2', ['Idempotency-Key', 'k1', 'IDEMPOTENCY-KEY', 'k2'])).toThrow(/single value/);
    // The same joined text sent as one header is a key like any other (printable ASCII).
    expect(parseIdempotencyKey('k1, k2', ['Idempotency-Key', 'k1, k2'])).toBe('k1, k2');
  });
});
