/**
 * Reads started before authentication, for routes that ask (route config `prefetch`): the poll.
 *
 * How it works. This hook runs first on every `/v1` request, before authentication. A route whose
 * config has `prefetch(request)` gets its read started here, from the raw URL parameters, and the
 * promise kept on `request.prefetched`; the handler, which runs only after authentication, rate
 * limiting and validation, awaits it instead of starting the read then. Nothing of what was read
 * is used or shown before the handler has checked it against the authenticated key's scope, so a
 * request refused on the way answers exactly as it would have without the prefetch.
 *
 * Why: on PostgreSQL a cache hit of the API-key cache waits for the freshness barrier (ADR 0015),
 * a statement on the API-key listener's connection, and the poll's batched read rides on that
 * same statement (ADR 0024). Started together, in the turn the request arrived, they go out as
 * one statement and the poll takes one round trip instead of two (the barrier, then the read).
 *
 * A prefetch that fails is not an unhandled rejection: the handler sees the failure when it awaits
 * the promise (a 503 for a database outage, as before), and a request refused before its handler
 * never looks.
 */
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Starts the route's read before authentication; null when there is nothing to read. */
    prefetch?: (request: FastifyRequest) => Promise<unknown> | null;
  }
  interface FastifyRequest {
    /** What the route's `prefetch` started, or null. Unchecked: the handler checks it against `auth`. */
    prefetched: Promise<unknown> | null;
  }
}

export function registerPrefetch(app: FastifyInstance): void {
  app.decorateRequest('prefetched', null);
  app.addHook('onRequest', (request, _reply, done) => {
    const prefetch = request.routeOptions.config.prefetch;
    const started = prefetch ? prefetch(request) : null;
    if (started !== null) {
      started.catch(() => undefined);
      request.prefetched = started;
    }
    done();
  });
}
