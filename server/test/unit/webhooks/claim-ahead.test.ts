/**
 * How far ahead of its sends a delivery worker claims (ADR 0031, amended): as far as a waiting
 * delivery can sit behind sends and still start with the lease it must have left.
 */
import { describe, expect, it } from 'vitest';
import { claimAheadFactor, DEFAULT_DELIVERY_OPTIONS } from '../../../src/modules/webhooks/delivery-worker.js';

describe('claimAheadFactor', () => {
  it('is 3 with the defaults: a delivery behind two sends of 10 s still has 40 s of its 60 s lease, more than the 35 s it must have to start', () => {
    expect(claimAheadFactor(DEFAULT_DELIVERY_OPTIONS)).toBe(3);
  });

  it('is 2 when the lease leaves room for one send ahead only, and never less (a delivery whose lease runs short is given back)', () => {
    // (30 - 10) / 2 = 10 s of room: one send of 10 s.
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 30_000 })).toBe(2);
    // (29 - 10) / 2 = 9.5 s: not even one send, still 2.
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 29_000 })).toBe(2);
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 11_000 })).toBe(2);
  });

  it('stops at 3 however long the lease', () => {
    // (50 - 10) / 2 = 20 s: two sends exactly.
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 50_000 })).toBe(3);
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 1_000, leaseMs: 600_000 })).toBe(3);
  });

  it('is 1 without claiming ahead', () => {
    expect(claimAheadFactor({ ...DEFAULT_DELIVERY_OPTIONS, claimAhead: false })).toBe(1);
  });
});
