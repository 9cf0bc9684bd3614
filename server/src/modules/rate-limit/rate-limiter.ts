/**
 * Rate limiting per API key (and, for failed authentication, per client address).
 *
 * In-process by default: a Map of token buckets. With REDIS_URL the buckets live in Redis and every
 * API process shares them; a Lua script does read-refill-take-write atomically. If Redis stops
 * answering, limiting degrades to the in-process buckets (each process then allows the full rate on
 * its own), a warning is logged once, and requests keep being served: availability of the lending
 * API matters more than exactness of the limit for a few seconds. Recovery is logged too.
 * `cds serve` awaits `ready()` before it listens: commands are never queued while disconnected, so
 * a request arriving before the first connection is up would otherwise be limited per process and
 * log a false "Redis unavailable" at every start under traffic.
 */
import { createRequire } from 'node:module';
import type { Redis as RedisClient } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../../lib/clock.js';
import { takeToken, type BucketLimits, type BucketState, type TakeResult } from './token-bucket.js';

export interface RateLimiter {
  /** In-process buckets answer synchronously (no promise on every request); Redis asynchronously. */
  take(bucketKey: string, limits: BucketLimits): TakeResult | Promise<TakeResult>;
  /** 'redis' while Redis serves, 'local' without Redis or while degraded. */
  mode(): 'redis' | 'local';
  /**
   * Resolves once the first connection to the shared store is up, has failed, or the connect
   * time-out has passed (at once without a shared store). Never rejects.
   */
  ready(): Promise<void>;
  close(): Promise<void>;
}

const MAX_LOCAL_BUCKETS = 100_000;

/**
 * In-process buckets, bounded: beyond MAX_LOCAL_BUCKETS the bucket (re)inserted longest ago is
 * dropped (a dropped bucket starts full again). A hit moves its bucket to the end of the Map's
 * order only once it has aged by half the bound (`seq`): moving it on every hit (delete and set)
 * churned the Map's table, about a microsecond per request, while this still never drops a bucket
 * used within the last MAX_LOCAL_BUCKETS / 2 insertions.
 */
interface LocalBuckets {
  entries: Map<string, { state: BucketState; seq: number }>;
  inserted: number;
}

const newLocalBuckets = (): LocalBuckets => ({ entries: new Map(), inserted: 0 });

export function createLocalRateLimiter(clock: Clock): RateLimiter {
  const buckets = newLocalBuckets();
  return {
    take(bucketKey, limits) {
      return takeLocal(buckets, bucketKey, limits, clock.now().getTime());
    },
    mode: () => 'local',
    ready: async () => undefined,
    close: async () => undefined,
  };
}

function takeLocal(buckets: LocalBuckets, key: string, limits: BucketLimits, nowMs: number): TakeResult {
  const entry = buckets.entries.get(key);
  const result = takeToken(entry?.state, limits, nowMs);
  if (entry !== undefined && buckets.inserted - entry.seq < MAX_LOCAL_BUCKETS / 2) {
    entry.state = result.state;
    return result;
  }
  buckets.entries.delete(key);
  buckets.entries.set(key, { state: result.state, seq: buckets.inserted++ });
  if (buckets.entries.size > MAX_LOCAL_BUCKETS) {
    const oldest = buckets.entries.keys().next().value;
    if (oldest !== undefined) buckets.entries.delete(oldest);
  }
  return result;
}

// Mirrors takeToken(): KEYS[1] bucket; ARGV rate, burst, now(ms). Returns allowed, tokens*1000.
const TAKE_SCRIPT = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 't', 'u')
local tokens = burst
if state[1] then
  local elapsed = math.max(0, now - tonumber(state[2]))
  tokens = math.min(burst, tonumber(state[1]) + elapsed * rate / 1000)
end
local allowed = 0
if tokens >= 1 then
  allowed = 1
  tokens = tokens - 1
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'u', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst / rate) * 1000) + 1000)
return {allowed, tostring(tokens)}
`;

const CONNECT_TIMEOUT_MS = 1_000;

export function createRedisRateLimiter(options: { url: string; clock: Clock; logger: Logger; keyPrefix?: string }): RateLimiter {
  const { clock, logger } = options;
  const prefix = options.keyPrefix ?? 'cds:rl:';
  // Loaded only with REDIS_URL: a process without Redis starts faster without the client library.
  const { Redis } = createRequire(import.meta.url)('ioredis') as { Redis: typeof RedisClient };
  const redis = new Redis(options.url, {
    // Never queue commands while disconnected: a request must not wait for Redis to come back.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 250,
    connectTimeout: CONNECT_TIMEOUT_MS,
    lazyConnect: false,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  });
  redis.on('error', () => undefined); // state changes are logged below, not every reconnect attempt
  const firstConnection = new Promise<void>((resolve) => {
    const settle = () => {
      clearTimeout(timer);
      redis.off('ready', settle);
      redis.off('error', settle);
      resolve();
    };
    // A failed first attempt also settles it: the first request then degrades and says so.
    const timer = setTimeout(settle, CONNECT_TIMEOUT_MS);
    timer.unref();
    redis.once('ready', settle);
    redis.once('error', settle);
  });
  const fallback = newLocalBuckets();
  let degraded = false;

  const setDegraded = (value: boolean, err?: unknown) => {
    if (value === degraded) return;
    degraded = value;
    if (value) {
      logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'Redis unavailable: rate limiting degraded to per-process buckets');
    } else {
      logger.info('Redis available again: rate limiting shared through Redis');
    }
  };

  return {
    async take(bucketKey, limits) {
      const nowMs = clock.now().getTime();
      try {
        const [allowed, tokensText] = (await redis.eval(TAKE_SCRIPT, 1, prefix + bucketKey, limits.ratePerSecond, limits.burst, nowMs)) as [number, string];
        setDegraded(false);
        const tokens = Number(tokensText);
        return {
          allowed: allowed === 1,
          state: { tokens, updatedAtMs: nowMs },
          remaining: Math.floor(tokens),
          retryAfterSeconds: allowed === 1 ? 0 : Math.max(1, Math.ceil((1 - tokens) / limits.ratePerSecond)),
          resetSeconds: Math.ceil((limits.burst - tokens) / limits.ratePerSecond),
        };
      } catch (err) {
        setDegraded(true, err);
        return takeLocal(fallback, bucketKey, limits, nowMs);
      }
    },
    mode: () => (degraded ? 'local' : 'redis'),
    ready: () => firstConnection,
    close: async () => {
      redis.disconnect();
    },
  };
}
