/**
 * The test Redis (REDIS_TEST_URL, default redis://127.0.0.1:6379). Suites that need it skip with a
 * loud warning in a local run without Redis; with CI=true they fail instead, because CI must prove
 * the shared rate limits and the Redis fault paths.
 */
import { Redis } from 'ioredis';

export const REDIS_TEST_URL = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';

/** True when Redis answers a PING; `suite` names what is skipped when it does not. */
export async function isRedisReachable(suite: string): Promise<boolean> {
  const redis = new Redis(REDIS_TEST_URL, { lazyConnect: true, connectTimeout: 1_000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return true;
  } catch (err) {
    if (process.env.CI === 'true') throw new Error(`Redis is required in CI but unreachable at ${REDIS_TEST_URL}: ${String(err)}`);
    console.warn(`\n!!! Redis unreachable at ${REDIS_TEST_URL}: ${suite} is SKIPPED in this local run !!!\n`);
    return false;
  } finally {
    redis.disconnect();
  }
}
