import { describe, expect, it } from 'vitest';
import { createSecretBox, safeEqual } from '../../../src/lib/crypto.js';

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
});
