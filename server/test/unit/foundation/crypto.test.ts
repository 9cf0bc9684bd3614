import { describe, expect, it } from 'vitest';
import { cryptoRandom, pooledBytes } from '../../../src/lib/clock.js';
import { createSecretBox, openedTextCache, safeEqual, type SecretBox } from '../../../src/lib/crypto.js';

describe('secret box (AES-256-GCM)', () => {
  const box = createSecretBox(Buffer.alloc(32, 3));

  it('round-trips, never repeats a ciphertext and hides the plaintext', () => {
    const a = box.seal('1234', 'consumer-1');
    const b = box.seal('1234', 'consumer-1');
    expect(a).not.toBe(b);
    expect(a).toMatch(/^v1\./);
    expect(a).not.toContain('1234');
    expect(box.openText(a, 'consumer-1')).toBe('1234');
  });

  it('uses a fresh IV for every seal, across the pools its IVs are sliced from, and each opens', () => {
    // Pools of 4 IVs: 10 seals cross two refills.
    const small = createSecretBox(Buffer.alloc(32, 3), pooledBytes(cryptoRandom, 48));
    const sealed = Array.from({ length: 10 }, (_, i) => small.seal(`value-${i}`, 'row'));
    const ivs = sealed.map((s) => Buffer.from(s.slice(3), 'base64').subarray(0, 12).toString('hex'));
    expect(new Set(ivs).size).toBe(10);
    expect(ivs.every((iv) => iv !== '0'.repeat(24))).toBe(true);
    sealed.forEach((s, i) => expect(small.openText(s, 'row')).toBe(`value-${i}`));
  });

  it('refuses a ciphertext moved to another row, tampered with, or opened with another key', () => {
    const sealed = box.seal('1234', 'consumer-1');
    expect(() => box.open(sealed, 'consumer-2')).toThrow();
    const raw = Buffer.from(sealed.slice(3), 'base64');
    raw[raw.length - 1]! ^= 1;
    expect(() => box.open('v1.' + raw.toString('base64'), 'consumer-1')).toThrow();
    expect(() => createSecretBox(Buffer.alloc(32, 4)).open(sealed, 'consumer-1')).toThrow();
  });

  it('compares secrets in constant time', () => {
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
  });

  it('openedTextCache opens each sealed text once, keeps at most its limit, never keeps a failure, and never answers for another row', () => {
    let opens = 0;
    const counting: SecretBox = { ...box, openText: (sealed, ad) => (opens++, box.openText(sealed, ad)) };
    const open = openedTextCache(counting, 2);
    const a = box.seal('1111', 'consumer-a');
    const b = box.seal('2222', 'consumer-b');
    const c = box.seal('3333', 'consumer-c');
    expect([open(a, 'consumer-a'), open(a, 'consumer-a'), open(b, 'consumer-b')]).toEqual(['1111', '1111', '2222']);
    expect(opens).toBe(2);
    // The same sealed text under another row's associated data is another entry, and fails.
    expect(() => open(a, 'consumer-b')).toThrow();
    expect(() => open(a, 'consumer-b')).toThrow();
    expect(opens).toBe(4);
    // A third value drops the oldest (a), which is then opened again.
    expect(open(c, 'consumer-c')).toBe('3333');
    expect(open(b, 'consumer-b')).toBe('2222');
    expect(opens).toBe(5);
    expect(open(a, 'consumer-a')).toBe('1111');
    expect(opens).toBe(6);
    // A new value sealed for the same row is a new sealed text: never the old answer.
    expect(open(box.seal('4444', 'consumer-a'), 'consumer-a')).toBe('4444');
  });
});
