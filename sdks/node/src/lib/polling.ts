/**
 * Polling a pending decision until it completes. The service recommends one poll every 2-3 s, so
 * the interval is clamped to that range (2.5 s by default); `clampInterval: false` lifts the clamp
 * for tests against a fake server. The loop stops at the first `complete` state, at the deadline
 * (PollTimeoutError carrying the last pending state), or when the signal fires (APIUserAbortError).
 * Polls are never closer than 2 s (or the unclamped interval): the last one before the deadline is
 * made at the deadline only when that is far enough from the one before; otherwise the loop waits
 * the deadline out and stops with the state it has.
 * Each poll is an ordinary GET with the client's retries and time-out.
 */
import { PollTimeoutError } from '../core/errors.js';
import { sleep, throwIfAborted } from '../core/http.js';
import type { Decision } from './decision.js';

export const POLL_INTERVAL_MS = { min: 2_000, default: 2_500, max: 3_000 } as const;
/** Default overall limit: the hard tier estimates 600 s; longer, the caller polls again. */
export const DEFAULT_POLL_TIMEOUT_MS = 15 * 60_000;

export interface PollOptions {
  /** Time between polls; clamped to 2 000-3 000 ms unless `clampInterval` is false. Default 2 500. */
  intervalMs?: number;
  /** Allow any `intervalMs` (tests only: the service asks for 2-3 s). */
  clampInterval?: boolean;
  /** Give up after this long (ms, default 15 minutes). Ignored when `deadline` is given. */
  timeoutMs?: number;
  /** Give up at this moment (a Date or epoch milliseconds). */
  deadline?: Date | number;
  /** Cancels the loop (and the request in flight). */
  signal?: AbortSignal;
  /** Called with every pending state seen. */
  onPending?: (decision: Decision) => void;
}

export function pollInterval(options: Pick<PollOptions, 'intervalMs' | 'clampInterval'>): number {
  const requested = options.intervalMs ?? POLL_INTERVAL_MS.default;
  if (!Number.isFinite(requested) || requested < 0) throw new TypeError('poll: intervalMs must be a non-negative number.');
  if (options.clampInterval === false) return requested;
  return Math.min(POLL_INTERVAL_MS.max, Math.max(POLL_INTERVAL_MS.min, requested));
}

export async function pollUntilComplete<D extends Decision>(
  fetchOnce: (signal: AbortSignal | undefined) => Promise<D>,
  options: PollOptions = {},
): Promise<D> {
  const interval = pollInterval(options);
  const deadline =
    options.deadline !== undefined
      ? options.deadline instanceof Date
        ? options.deadline.getTime()
        : options.deadline
      : Date.now() + (options.timeoutMs ?? DEFAULT_POLL_TIMEOUT_MS);
  const { signal } = options;
  // The least time between two polls: the service's 2 s, or the interval a test asked for.
  const minGap = options.clampInterval === false ? interval : POLL_INTERVAL_MS.min;
  for (;;) {
    throwIfAborted(signal);
    const decision = await fetchOnce(signal);
    if (!decision.isPending) return decision;
    options.onPending?.(decision);
    const remaining = deadline - Date.now();
    if (remaining < minGap) {
      if (remaining > 0) await sleep(remaining, signal);
      throw new PollTimeoutError(`Decision ${decision.decision_id} is still pending at the polling deadline.`, decision);
    }
    await sleep(Math.min(interval, remaining), signal);
  }
}
