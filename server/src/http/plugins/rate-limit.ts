/**
 * Per-key rate limit for `/v1`, after authentication. Token bucket; the rate is the tenant's own
 * setting for the key's environment, else the deployment's default (RATE_LIMIT_*_PER_S), and the
 * burst is twice the rate. Every authenticated response carries RateLimit-Limit/-Remaining/-Reset
 * (IETF draft -06 names: limit = burst, reset = seconds until the bucket is full); a refusal is
 * 429 `rate_limited` with Retry-After (seconds until a token is back).
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import { ApiError } from '../errors/error-registry.js';

export function registerRateLimit(app: FastifyInstance, ctx: AppContext): void {
  app.addHook('onRequest', async (request, reply) => {
    const { auth } = request;
    const rate =
      auth.rateLimitPerSecond ?? (auth.environment === 'live' ? ctx.config.rateLimits.livePerSecond : ctx.config.rateLimits.sandboxPerSecond);
    const limits = { ratePerSecond: rate, burst: rate * 2 };
    const result = await ctx.rateLimiter.take(`key:${auth.keyId}`, limits);
    const headers = {
      'RateLimit-Limit': String(limits.burst),
      'RateLimit-Remaining': String(result.remaining),
      'RateLimit-Reset': String(result.resetSeconds),
    };
    reply.headers(headers);
    if (!result.allowed) {
      throw new ApiError('rate_limited', `Rate limit of ${rate} requests per second (burst ${limits.burst}) exceeded for this API key; retry after the seconds given in Retry-After.`, {
        ...headers,
        'Retry-After': String(result.retryAfterSeconds),
      });
    }
  });
}
