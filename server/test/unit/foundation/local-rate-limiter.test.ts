import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { createLocalRateLimiter } from '../../../src/modules/rate-limit/rate-limiter.js';
import type { TakeResult } from '../../../src/modules/rate-limit/token-bucket.js';

describe('in-process rate limiter', () => {
  // The clock never moves: an emptied bucket stays empty unless it is dropped (a dropped bucket starts full).
  const limits = { ratePerSecond: 1, burst: 1 };
  const take = (limiter: ReturnType<typeof createLocalRateLimiter>, key: string) => limiter.take(key, limits) as TakeResult;

  it('answers synchronously and keeps a bucket used within the last 50,000 insertions while 150,000 others pass', () => {
    const limiter = createLocalRateLimiter(new ManualClock());
    expect(take(limiter, 'hot').allowed).toBe(true);
    expect(take(limiter, 'cold').allowed).toBe(true);
    for (let i = 0; i < 150_000; i++) {
      take(limiter, `other-${i}`);
      if (i % 10_000 === 0) expect(take(limiter, 'hot').allowed, `hot after ${i}`).toBe(false);
    }
    expect(take(limiter, 'hot').allowed).toBe(false); // remembered: still empty
    expect(take(limiter, 'cold').allowed).toBe(true); // dropped beyond the bound: full again
  });
});
