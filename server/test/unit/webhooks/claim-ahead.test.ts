/**
 * How far ahead of its sends a delivery worker claims (ADR 0031, amended): as far as a waiting
 * delivery can sit behind sends that run to their time-out (and a second late in all) and still
 * start with the lease it must have left.
 */
import { describe, expect, it } from 'vitest';
import { claimAheadFactor, DEFAULT_DELIVERY_OPTIONS } from '../../../src/modules/webhooks/delivery-worker.js';

describe('claimAheadFactor', () => {
  it('is 4 with the defaults: behind three sends of 10 s and a second late, a delivery has 44 s of its 75 s lease, more than the 42.5 s it must have to start', () => {
    expect(DEFAULT_DELIVERY_OPTIONS).toMatchObject({ timeoutMs: 10_000, leaseMs: 75_000 });
    expect(claimAheadFactor(DEFAULT_DELIVERY_OPTIONS)).toBe(4);
    // (72 - 10) / 2 = 31 s of room: three sends and the second, exactly.
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 72_000 })).toBe(4);
  });

  it('falls with a shorter lease, one send at a time, and is never below 2 (a delivery whose lease runs short is given back)', () => {
    // 30.5 s of room: not three sends and a second, two.
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 71_000 })).toBe(3);
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 52_000 })).toBe(3);
    // 20 s: one send and the second.
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 50_000 })).toBe(2);
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 30_000 })).toBe(2);
    // Not even one send: still 2.
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 11_000 })).toBe(2);
  });

  it('stops at 4 however long the lease', () => {
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 120_000 })).toBe(4);
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 1_000, leaseMs: 600_000 })).toBe(4);
  });

  it('is 1 without claiming ahead', () => {
    expect(claimAheadFactor({ ...DEFAULT_DELIVERY_OPTIONS, claimAhead: false })).toBe(1);
  });
});
