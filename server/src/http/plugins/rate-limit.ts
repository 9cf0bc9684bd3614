/**
 * Per-key rate limit for `/v1`, after authentication. Token bucket; the rate is the tenant's own
 * setting for the key's environment, else the deployment's default (RATE_LIMIT_*_PER_S), and the
 * burst is twice the rate. Every authenticated response carries RateLimit-Limit/-Remaining/-Reset
 * (IETF draft -06 names: limit = burst, reset = seconds until the bucket is full); a refusal is
 * 429 `rate_limited` with Retry-After (seconds until a token is back).
 */
import type { FastifyInstance, FastifyReply, onRequestHookHandler } from 'fastify';
import type { AppContext } from '../../app/context.js';
import type { BucketLimits, TakeResult } from '../../modules/rate-limit/token-bucket.js';
import { ApiError } from '../errors/error-registry.js';

export function registerRateLimit(app: FastifyInstance, ctx: AppContext): void {
  app.addHook('onRequest', rateLimitHook(ctx));
}

/** The hook itself, also given to the 405 routes of `/v1` paths (plugins/errors.ts `collectRoutes`): they count against the key like any answer. */
export function rateLimitHook(ctx: AppContext): onRequestHookHandler {
  // Callback style: the in-process limiter answers synchronously, so no promise per request.
  return (request, reply, done) => {
    const { auth } = request;
    const rate =
      auth.rateLimitPerSecond ?? (auth.environment === 'live' ? ctx.config.rateLimits.livePerSecond : ctx.config.rateLimits.sandboxPerSecond);
    const limits = { ratePerSecond: rate, burst: rate * 2 };
    const taken = ctx.rateLimiter.take(`key:${auth.keyId}`, limits);
    if (!(taken instanceof Promise)) {
      done(apply(reply, rate, limits, taken));
      return;
    }
    taken.then((result) => done(apply(reply, rate, limits, result)), done);
  };
}

/** Sets the RateLimit-* headers; the 429 to answer with when the bucket is empty. */
function apply(reply: FastifyReply, rate: number, limits: BucketLimits, result: TakeResult): ApiError | undefined {
  const limit = String(limits.burst);
  const remaining = String(result.remaining);
  const reset = String(result.resetSeconds);
  reply.header('RateLimit-Limit', limit).header('RateLimit-Remaining', remaining).header('RateLimit-Reset', reset);
  if (result.allowed) return undefined;
  return new ApiError('rate_limited', `Rate limit of ${rate} requests per second (burst ${limits.burst}) exceeded for this API key; retry after the seconds given in Retry-After.`, {
    'RateLimit-Limit': limit,
    'RateLimit-Remaining': remaining,
    'RateLimit-Reset': reset,
    'Retry-After': String(result.retryAfterSeconds),
  });
}
