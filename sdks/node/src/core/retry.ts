/**
 * When to retry, and how long to wait: pure functions of the attempt's outcome, the attempt number
 * and the policy (randomness passed in), so the rules are tested without a network or a clock.
 *
 * - Connection errors and time-outs: retried (a POST carries the same Idempotency-Key on every
 *   attempt, so the service does the work at most once).
 * - 5xx: retried; nothing was committed (docs/errors.md) and 5xx answers are never stored with a key.
 * - 429: retried only when the caller opts in (`retryRateLimited`), after `Retry-After`.
 * - 409 `idempotency_conflict` on a *retry* of a POST: our own earlier attempt is still running on
 *   the service (the body is identical on every attempt, so it cannot be a different request);
 *   docs/errors.md says to retry it with the same key. A 409 on the first attempt is never retried.
 * - Every other 4xx: never retried; the request must be fixed.
 *
 * Delay before retry n (1, 2, ...): `Retry-After` when the answer has one (exactly, no jitter; an
 * answer asking for more than `maxRetryAfterMs` is not retried), else
 * min(initialDelayMs * 2^(n-1), maxDelayMs) scaled by a random factor in (0.75, 1] (jitter spreads
 * out clients that failed together).
 */
import { parseRetryAfter } from './errors.js';

export interface RetryPolicy {
  maxRetries: number;
  initialDelayMs: number;
  maxDelayMs: number;
  /** A `Retry-After` longer than this is not waited for: the error is raised instead. */
  maxRetryAfterMs: number;
  retryRateLimited: boolean;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxRetries: 2,
  initialDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
  retryRateLimited: false,
});

export type AttemptOutcome =
  | { kind: 'connection' }
  | { kind: 'timeout' }
  | { kind: 'response'; status: number; code: string | undefined; headers: Record<string, string> };

export interface RetryDecision {
  retry: boolean;
  delayMs: number;
}

/** Backoff (without `Retry-After`) before retry number `retry` (1-based); `random` in [0, 1). */
export function backoffDelay(retry: number, policy: Pick<RetryPolicy, 'initialDelayMs' | 'maxDelayMs'>, random: number): number {
  const base = Math.min(policy.initialDelayMs * 2 ** (retry - 1), policy.maxDelayMs);
  return base * (1 - 0.25 * random);
}

/**
 * Whether attempt `attempt` (0 = the first) should be followed by another, and after how long.
 * `method` is the HTTP method; `now` is for HTTP-date `Retry-After` values.
 */
export function decideRetry(
  outcome: AttemptOutcome,
  attempt: number,
  method: string,
  policy: RetryPolicy,
  random: number,
  now: number = Date.now(),
): RetryDecision {
  const no = { retry: false, delayMs: 0 };
  if (attempt >= policy.maxRetries) return no;
  const backoff = backoffDelay(attempt + 1, policy, random);
  if (outcome.kind !== 'response') return { retry: true, delayMs: backoff };

  const { status, code, headers } = outcome;
  const retryable =
    status >= 500 ||
    (status === 429 && policy.retryRateLimited) ||
    (status === 409 && code === 'idempotency_conflict' && method === 'POST' && attempt >= 1);
  if (!retryable) return no;
  const retryAfter = parseRetryAfter(headers['retry-after'], now);
  if (retryAfter === undefined) return { retry: true, delayMs: backoff };
  if (retryAfter > policy.maxRetryAfterMs) return no;
  return { retry: true, delayMs: retryAfter };
}
