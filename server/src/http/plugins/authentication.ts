/**
 * Bearer API-key authentication for `/v1`. Runs first on every API request (before the body is even
 * parsed), so a missing or wrong key is always 401, whatever else is wrong with the request.
 * Failed attempts draw from a per-client-address bucket; an address that keeps failing gets 429
 * instead of another chance to guess.
 */
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { AppContext } from '../../app/context.js';
import type { AuthenticatedKey } from '../../modules/api-keys/api-keys.service.js';
import { ApiError } from '../errors/error-registry.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on every authenticated `/v1` request. */
    auth: AuthenticatedKey;
  }
}

/** 60 failed attempts per address, refilled at one a second. */
export const FAILED_AUTH_LIMITS = { ratePerSecond: 1, burst: 60 };

export function registerAuthentication(app: FastifyInstance, ctx: AppContext): void {
  app.decorateRequest('auth', null as unknown as AuthenticatedKey);
  app.addHook('onRequest', authenticationHook(ctx));
}

/** The hook itself, also given to the 405 routes of `/v1` paths (plugins/errors.ts `collectRoutes`), so they refuse a missing key first too. */
export function authenticationHook(ctx: AppContext): onRequestHookHandler {
  // Callback style: a cached key (SQLite) is accepted synchronously, no promise per request.
  return (request, _reply, done) => {
    const key = bearerToken(request);
    const auth = key === null ? null : ctx.apiKeys.authenticate(key);
    if (auth !== null && !(auth instanceof Promise)) {
      request.auth = auth;
      done();
      return;
    }
    const settled =
      auth === null
        ? refuse(ctx, request, key)
        : auth.then((found) => {
            if (!found) return refuse(ctx, request, key);
            request.auth = found;
          });
    settled.then(() => done(), done);
  };
}

/** Throws the 401, or the 429 for an address that keeps failing. */
async function refuse(ctx: AppContext, request: FastifyRequest, key: string | null): Promise<never> {
  const limit = await ctx.rateLimiter.take(`auth-fail:${request.ip}`, FAILED_AUTH_LIMITS);
  if (!limit.allowed) {
    // The same headers as a per-key 429 (decisions.md section 8), describing the address's bucket.
    throw new ApiError('rate_limited', 'Too many failed authentication attempts from this address; retry after the time given in Retry-After.', {
      'RateLimit-Limit': String(FAILED_AUTH_LIMITS.burst),
      'RateLimit-Remaining': String(limit.remaining),
      'RateLimit-Reset': String(limit.resetSeconds),
      'Retry-After': String(limit.retryAfterSeconds),
    });
  }
  throw new ApiError('invalid_api_key', key !== null ? UNKNOWN_KEY : request.headers.authorization === undefined ? NO_KEY : MALFORMED_HEADER);
}

const NO_KEY = 'No API key provided. Send it as "Authorization: Bearer <API_KEY>".';
const MALFORMED_HEADER = 'The Authorization header is not of the form "Bearer <API_KEY>" (one key after the word Bearer, nothing else).';
const UNKNOWN_KEY =
  'The API key in the Authorization header is unknown, malformed or revoked; keys start with svc_test_ (sandbox) or svc_live_ (live) and are generated in the lender portal.';

function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}
