/**
 * Token bucket, as a pure function.
 *
 * A bucket holds up to `burst` tokens and refills continuously at `ratePerSecond`. Each request
 * takes one token; with none left it is refused and told how long until one is back. State is
 * two numbers (tokens, last refill time), so the same arithmetic runs in-process and inside the
 * Redis script (rate-limit.redis.lua mirrors this function line for line).
 */
export interface BucketState {
  tokens: number;
  updatedAtMs: number;
}

export interface BucketLimits {
  ratePerSecond: number;
  burst: number;
}

export interface TakeResult {
  allowed: boolean;
  state: BucketState;
  /** Whole tokens left after this request. */
  remaining: number;
  /** Seconds until a refused request may succeed (0 when allowed). */
  retryAfterSeconds: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
}

export function takeToken(previous: BucketState | undefined, limits: BucketLimits, nowMs: number): TakeResult {
  const { ratePerSecond, burst } = limits;
  const elapsedMs = previous ? Math.max(0, nowMs - previous.updatedAtMs) : 0;
  const available = previous ? Math.min(burst, previous.tokens + (elapsedMs * ratePerSecond) / 1000) : burst;
  const allowed = available >= 1;
  const tokens = allowed ? available - 1 : available;
  return {
    allowed,
    state: { tokens, updatedAtMs: nowMs },
    remaining: Math.floor(tokens),
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - tokens) / ratePerSecond)),
    resetSeconds: Math.ceil((burst - tokens) / ratePerSecond),
  };
}
