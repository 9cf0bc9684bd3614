/**
 * Circuit breaker for a remote credit-data source, as pure state transitions.
 *
 * closed --(N consecutive failures)--> open --(cool-down elapsed, next request)--> half_open
 * half_open --(trial succeeds)--> closed;  half_open --(trial fails)--> open (cool-down restarts)
 *
 * The state is a plain value and `now` is an argument, so the connector (the shell) owns the one
 * mutable slot and tests drive time with a manual clock instead of sleeping.
 */

export type BreakerState =
  | { kind: 'closed'; consecutiveFailures: number }
  | { kind: 'open'; openedAtMs: number }
  /** The single trial request is in flight; everyone else is still refused. */
  | { kind: 'half_open' };

export interface BreakerConfig {
  /** Consecutive failures that open the circuit. */
  failureThreshold: number;
  /** How long the circuit stays open before one trial request is let through. */
  cooldownMs: number;
}

export const BREAKER_DEFAULTS: Readonly<BreakerConfig> = Object.freeze({ failureThreshold: 5, cooldownMs: 30_000 });

export const closedBreaker: BreakerState = Object.freeze({ kind: 'closed', consecutiveFailures: 0 });

export interface Admission {
  admitted: boolean;
  /** State to store, whether or not the request was admitted. */
  state: BreakerState;
}

/** May a request go to the source now? Admitting the first request after the cool-down makes it the trial. */
export function admitRequest(state: BreakerState, now: Date, config: BreakerConfig): Admission {
  switch (state.kind) {
    case 'closed':
      return { admitted: true, state };
    case 'open':
      if (now.getTime() - state.openedAtMs >= config.cooldownMs) return { admitted: true, state: { kind: 'half_open' } };
      return { admitted: false, state };
    case 'half_open':
      return { admitted: false, state };
  }
}

/** Any success is evidence the source works again, including a late answer to a request admitted before it opened. */
export function recordSuccess(_state: BreakerState): BreakerState {
  return closedBreaker;
}

export function recordFailure(state: BreakerState, now: Date, config: BreakerConfig): BreakerState {
  switch (state.kind) {
    case 'closed': {
      const consecutiveFailures = state.consecutiveFailures + 1;
      if (consecutiveFailures >= config.failureThreshold) return { kind: 'open', openedAtMs: now.getTime() };
      return { kind: 'closed', consecutiveFailures };
    }
    case 'half_open':
      return { kind: 'open', openedAtMs: now.getTime() };
    case 'open':
      // A straggler admitted before the circuit opened must not push the cool-down further out.
      return state;
  }
}

/** Rejects configurations that would make the breaker never open or never recover. */
export function validateBreakerConfig(config: BreakerConfig): BreakerConfig {
  if (!Number.isSafeInteger(config.failureThreshold) || config.failureThreshold < 1) {
    throw new RangeError('circuit breaker failureThreshold must be an integer >= 1');
  }
  if (!Number.isSafeInteger(config.cooldownMs) || config.cooldownMs < 0) {
    throw new RangeError('circuit breaker cooldownMs must be a non-negative integer');
  }
  return config;
}
