import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { takeToken, type BucketState } from '../../../src/modules/rate-limit/token-bucket.js';

describe('token bucket', () => {
  const limits = { ratePerSecond: 5, burst: 10 };

  it('starts full, allows the burst, then refuses with the time until the next token', () => {
    let state: BucketState | undefined;
    for (let i = 0; i < 10; i++) {
      const r = takeToken(state, limits, 0);
      expect(r.allowed).toBe(true);
      expect(r.remaining).toBe(9 - i);
      state = r.state;
    }
    const refused = takeToken(state, limits, 0);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterSeconds).toBe(1);
    expect(refused.resetSeconds).toBe(2);
  });

  it('refills continuously and never above the burst', () => {
    const empty: BucketState = { tokens: 0, updatedAtMs: 0 };
    expect(takeToken(empty, limits, 199).allowed).toBe(false);
    expect(takeToken(empty, limits, 200).allowed).toBe(true);
    expect(takeToken(empty, limits, 3_600_000).remaining).toBe(9);
  });

  it('never allows more than burst + rate * elapsed requests', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 500 }), { minLength: 1, maxLength: 300 }), (gaps) => {
        let state: BucketState | undefined;
        let now = 0;
        let allowed = 0;
        for (const gap of gaps) {
          now += gap;
          const r = takeToken(state, limits, now);
          state = r.state;
          if (r.allowed) allowed++;
        }
        return allowed <= limits.burst + (now * limits.ratePerSecond) / 1000;
      }),
    );
  });
});
