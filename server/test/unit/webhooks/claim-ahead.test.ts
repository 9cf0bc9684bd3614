/**
 * How far ahead of its sends a delivery worker claims (ADR 0031, amended): as far as a waiting
 * delivery can sit behind sends and still start with the lease it must have left.
 */
import { describe, expect, it } from 'vitest';
import { claimAheadFactor, DEFAULT_DELIVERY_OPTIONS } from '../../../src/modules/webhooks/delivery-worker.js';

describe('claimAheadFactor', () => {
  it('is 4 with the defaults: a delivery behind three sends of 10 s still has 40 s of its 70 s lease, what it must have to start', () => {
    expect(DEFAULT_DELIVERY_OPTIONS).toMatchObject({ timeoutMs: 10_000, leaseMs: 70_000 });
    expect(claimAheadFactor(DEFAULT_DELIVERY_OPTIONS)).toBe(4);
  });

  it('falls with a shorter lease, one send at a time, and is never below 2 (a delivery whose lease runs short is given back)', () => {
    // (69 - 10) / 2 = 29.5 s of room: two sends of 10 s.
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 69_000 })).toBe(3);
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 50_000 })).toBe(3);
    // (30 - 10) / 2 = 10 s: one send.
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 30_000 })).toBe(2);
    // Not even one send: still 2.
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 29_000 })).toBe(2);
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 11_000 })).toBe(2);
  });

  it('stops at 4 however long the lease', () => {
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 10_000, leaseMs: 90_000 })).toBe(4);
    expect(claimAheadFactor({ claimAhead: true, timeoutMs: 1_000, leaseMs: 600_000 })).toBe(4);
  });

  it('is 1 without claiming ahead', () => {
    expect(claimAheadFactor({ ...DEFAULT_DELIVERY_OPTIONS, claimAhead: false })).toBe(1);
  });
});
