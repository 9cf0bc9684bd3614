import { describe, expect, it } from 'vitest';
import {
  BREAKER_DEFAULTS,
  admitRequest,
  closedBreaker,
  recordFailure,
  recordSuccess,
  validateBreakerConfig,
  type BreakerConfig,
  type BreakerState,
} from '../../../src/modules/credit-data/circuit-breaker.js';

const config: BreakerConfig = { failureThreshold: 3, cooldownMs: 10_000 };
const t0 = new Date('2026-01-15T12:00:00.000Z');
const at = (ms: number): Date => new Date(t0.getTime() + ms);

function failTimes(n: number, state: BreakerState = closedBreaker, now: Date = t0): BreakerState {
  let s = state;
  for (let i = 0; i < n; i += 1) s = recordFailure(s, now, config);
  return s;
}

describe('circuit breaker', () => {
  it('defaults to opening after 5 failures and a 30 s cool-down', () => {
    expect(BREAKER_DEFAULTS).toEqual({ failureThreshold: 5, cooldownMs: 30_000 });
  });

  it('admits everything while closed and counts consecutive failures', () => {
    expect(admitRequest(closedBreaker, t0, config)).toEqual({ admitted: true, state: closedBreaker });
    expect(failTimes(2)).toEqual({ kind: 'closed', consecutiveFailures: 2 });
  });

  it('opens on the Nth consecutive failure, at that moment', () => {
    expect(failTimes(3, closedBreaker, at(500))).toEqual({ kind: 'open', openedAtMs: at(500).getTime() });
  });

  it('a success resets the count, so failures must be consecutive', () => {
    const s = recordFailure(recordSuccess(failTimes(2)), t0, config);
    expect(s).toEqual({ kind: 'closed', consecutiveFailures: 1 });
  });

  it('refuses while open and before the cool-down has elapsed', () => {
    const open = failTimes(3);
    expect(admitRequest(open, at(9_999), config)).toEqual({ admitted: false, state: open });
  });

  it('lets exactly one trial through once the cool-down has elapsed', () => {
    const first = admitRequest(failTimes(3), at(10_000), config);
    expect(first).toEqual({ admitted: true, state: { kind: 'half_open' } });
    const second = admitRequest(first.state, at(10_001), config);
    expect(second).toEqual({ admitted: false, state: { kind: 'half_open' } });
  });

  it('closes when the trial succeeds', () => {
    expect(recordSuccess({ kind: 'half_open' })).toEqual(closedBreaker);
  });

  it('re-opens with a fresh cool-down when the trial fails', () => {
    const reopened = recordFailure({ kind: 'half_open' }, at(12_000), config);
    expect(reopened).toEqual({ kind: 'open', openedAtMs: at(12_000).getTime() });
    expect(admitRequest(reopened, at(21_999), config).admitted).toBe(false);
    expect(admitRequest(reopened, at(22_000), config).admitted).toBe(true);
  });

  it('a late failure while already open does not push the cool-down out', () => {
    const open = failTimes(3);
    expect(recordFailure(open, at(9_000), config)).toBe(open);
  });

  it('a threshold of 1 opens on the first failure', () => {
    expect(recordFailure(closedBreaker, t0, { failureThreshold: 1, cooldownMs: 0 }).kind).toBe('open');
  });

  it('rejects configurations that would never open or never recover', () => {
    expect(() => validateBreakerConfig({ failureThreshold: 0, cooldownMs: 1 })).toThrow(RangeError);
    expect(() => validateBreakerConfig({ failureThreshold: 1.5, cooldownMs: 1 })).toThrow(RangeError);
    expect(() => validateBreakerConfig({ failureThreshold: 1, cooldownMs: -1 })).toThrow(RangeError);
    expect(validateBreakerConfig(config)).toBe(config);
  });
});
