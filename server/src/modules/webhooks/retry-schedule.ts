/**
 * The retry decision and the auto-disable rule: pure functions of their inputs, no clock, no I/O.
 *
 * How it works: a delivery makes at most 8 attempts. Attempt 1 is due when the event commits;
 * after a failed attempt n (n < 8) the next one is due `delaysMs[n-1]` after attempt n finished
 * (1 min, 5 min, 30 min, 2 h, 6 h, 24 h, 72 h: interface.md, Delivery rules 2). Any 2xx within the
 * time-out delivers; the eighth failure makes the delivery `failed`. An endpoint counts failed
 * deliveries in a row; the 50th disables it, and any delivered event resets the count
 * (decisions.md section 9). The worker (delivery-worker.ts) asks these functions what to do and
 * writes the answer down; tests drive them with plain numbers and dates.
 *
 * No jitter: the spec states exact delays, and fairness between endpoints (fairness.ts) rather
 * than randomised timing is what keeps one failing receiver from crowding out the others.
 */

export interface RetrySchedule {
  /** delaysMs[i] is the wait after failed attempt i+1 before attempt i+2; attempts = length + 1. */
  readonly delaysMs: readonly number[];
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = Object.freeze({
  delaysMs: Object.freeze([1 * MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 6 * HOUR, 24 * HOUR, 72 * HOUR]),
});

/** 50 consecutive failed deliveries disable an endpoint (interface.md, Delivery rules 4). */
export const AUTO_DISABLE_THRESHOLD = 50;

export function maxAttempts(schedule: RetrySchedule = DEFAULT_RETRY_SCHEDULE): number {
  return schedule.delaysMs.length + 1;
}

/** Any 2xx is a success; 1xx never reaches us, 3xx are not followed, so everything else fails. */
export function isSuccessStatus(status: number): boolean {
  return status >= 200 && status <= 299;
}

export type NextStep =
  | { kind: 'delivered' }
  | { kind: 'retry'; attempt: number; at: Date }
  | { kind: 'failed' };

/**
 * What follows attempt `attempt` (1-based) that `succeeded` or not and finished at `finishedAt`.
 * An attempt number beyond the schedule (a resent delivery whose count was not reset) still ends
 * the delivery rather than throwing: the worker must always be able to record a result.
 */
export function scheduleNextAttempt(
  input: { attempt: number; succeeded: boolean; finishedAt: Date },
  schedule: RetrySchedule = DEFAULT_RETRY_SCHEDULE,
): NextStep {
  if (!Number.isInteger(input.attempt) || input.attempt < 1) throw new RangeError(`attempt must be a positive integer, got ${input.attempt}`);
  if (input.succeeded) return { kind: 'delivered' };
  if (input.attempt >= maxAttempts(schedule)) return { kind: 'failed' };
  const delay = schedule.delaysMs[input.attempt - 1]!;
  return { kind: 'retry', attempt: input.attempt + 1, at: new Date(input.finishedAt.getTime() + delay) };
}

/** When each attempt falls if every one fails instantly, starting at `first` (docs and tests). */
export function attemptTimeline(first: Date, schedule: RetrySchedule = DEFAULT_RETRY_SCHEDULE): Date[] {
  const out = [first];
  for (const delay of schedule.delaysMs) out.push(new Date(out[out.length - 1]!.getTime() + delay));
  return out;
}

export interface EndpointHealth {
  consecutiveFailures: number;
  /** True when this outcome is the one that crosses the threshold. */
  disable: boolean;
}

/** The endpoint's failure count after one of its deliveries finished. */
export function endpointHealthAfter(
  consecutiveFailures: number,
  outcome: 'delivered' | 'failed',
  threshold: number = AUTO_DISABLE_THRESHOLD,
): EndpointHealth {
  if (outcome === 'delivered') return { consecutiveFailures: 0, disable: false };
  const next = consecutiveFailures + 1;
  return { consecutiveFailures: next, disable: next >= threshold };
}
