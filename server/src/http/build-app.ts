/**
 * Builds the HTTP application without listening, so tests drive it with `inject()` and the CLI
 * decides how to serve it. Order matters and is the request's life:
 *   request id -> (/v1) authentication -> rate limit -> body parse & schema validation
 *   -> route -> idempotency + one transaction -> response (errors through one handler).
 */
import Fastify, { type FastifyInstance, type RouteOptions } from 'fastify';
import addFormats from 'ajv-formats';
import type { Ajv } from 'ajv';
import { readFileSync } from 'node:fs';
import type { AppContext } from '../app/context.js';
import { pooledBase62 } from '../lib/clock.js';
import { registerOpenApi } from './openapi.js';
import { createLazyCompilers, type LazyCompilers } from './lazy-compilers.js';
import { collectRoutes, handleFrameworkError, registerErrorHandling, sendError, writeClientError } from './plugins/errors.js';
import { authenticationHook, registerAuthentication } from './plugins/authentication.js';
import { registerPrefetch } from './plugins/prefetch.js';
import { rateLimitHook, registerRateLimit } from './plugins/rate-limit.js';
import { registerSystemRoutes } from './routes/system.routes.js';
import { HSTS_VALUE, servedOverHttps } from './transport-security.js';
import { registerBnplRoutes } from '../modules/decisions/bnpl.routes.js';
import { registerAutoLoanRoutes } from '../modules/decisions/auto-loan.routes.js';
import { registerNoticeRoutes } from '../modules/notices/notices-v1.routes.js';
import { registerComingSoonRoutes } from '../modules/decisions/coming-soon.routes.js';
import { registerSandboxRoutes } from '../modules/decisions/sandbox.routes.js';
import { registerEventRoutes } from '../modules/events/events.routes.js';
import { registerVerifyRoutes } from '../modules/kyc/verify.routes.js';
import { registerPortal } from '../modules/portal/portal.routes.js';
import { registerDocsSite } from '../modules/docs-site/docs-site.routes.js';
import { registerDurableResponses } from './durable-responses.js';
import { closeIfUnread } from './lingering-close.js';
import { ApiError } from './errors/error-registry.js';
import { AccessLogController, lazyRequestLogger } from './request-logging.js';

export const BODY_LIMIT_BYTES = 64 * 1024;

/** `x-error` (a field's human message for format errors) and `example` are annotations, not rules. */
function registerSchemaKeywords(ajv: Ajv): Ajv {
  return ajv.addKeyword('x-error').addKeyword('example');
}

/**
 * Where the process is in its life, as the HTTP layer shows it: while `draining` (a rolling deploy
 * sent SIGTERM and SHUTDOWN_DRAIN_MS has not passed), requests are still served but `/readyz`
 * answers 503 and every response closes its connection, so load balancers and keep-alive clients
 * move to the other nodes before this one stops listening.
 */
export interface ServerLifecycle {
  draining: boolean;
}

export interface BuildAppOptions {
  /** Extra `/v1` routes (tests use this for a probe route); they get auth, limits and errors. */
  registerExtraV1Routes?: (v1: FastifyInstance, ctx: AppContext) => void;
  /** `cds serve` passes the one it flips on SIGTERM; in-process apps never drain. */
  lifecycle?: ServerLifecycle;
  /** Sees every route as it is declared (the isolation matrix and the hostile-input suite enumerate routes with it). */
  onRoute?: (route: RouteOptions) => void;
}

/** A hop count as Fastify applies it (hop 0 is the socket's peer). */
function hopsWithin(hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops;
}

/**
 * What Node needs besides `requestTimeout` (which Fastify sets) to time a request out: a headers'
 * time-out no longer than the request's (with the default 60 s and a shorter request time-out, a
 * request whose headers are in was never timed out: measured), and checks of open requests a
 * quarter of the time-out apart (Node's default: every 30 s). Set on the server before it listens.
 */
function requestTimeoutCompanions(requestTimeoutMs: number): { headersTimeout: number; connectionsCheckingInterval: number } {
  return {
    headersTimeout: Math.min(60_000, requestTimeoutMs),
    connectionsCheckingInterval: Math.max(250, Math.min(30_000, Math.floor(requestTimeoutMs / 4))),
  };
}

/** The app and its route validators and serialisers, which are compiled on first use (lazy-compilers.ts). */
export interface BuiltApp {
  app: FastifyInstance;
  compilers: LazyCompilers;
}

export async function buildApp(ctx: AppContext, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  return (await buildAppWithCompilers(ctx, options)).app;
}

/** buildApp, also handing back the pending compilers (`cds serve` compiles them after it listens). */
export async function buildAppWithCompilers(ctx: AppContext, options: BuildAppOptions = {}): Promise<BuiltApp> {
  const { config } = ctx;
  const compilers = createLazyCompilers();
  const requestIdChars = pooledBase62(ctx.random);
  const lifecycle: ServerLifecycle = options.lifecycle ?? { draining: false };
  // What every /v1 answer runs first, whatever the route: the key (401), then its limit. Also run
  // by a /v1 path's 405 routes and before a router error (a malformed URL) is answered.
  const v1Hooks = { '/v1': [authenticationHook(ctx), rateLimitHook(ctx)] };
  const app = Fastify({
    loggerInstance: ctx.logger,
    // One line per request, and a request's own logger only when it writes one (request-logging.ts).
    logController: new AccessLogController(ctx.logger),
    childLoggerFactory: lazyRequestLogger,
    genReqId: () => `req_${requestIdChars(20)}`,
    requestIdHeader: false,
    bodyLimit: BODY_LIMIT_BYTES,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    forceCloseConnections: 'idle',
    // The whole request must arrive within HTTP_REQUEST_TIMEOUT_MS (default 5 minutes, Node's own
    // default, which Fastify turns off: its `requestTimeout` 0 means none). Without it a client that
    // sends headers and then a body that never completes holds its connection for ever; with it
    // Node ends the request (a 400 from writeClientError) and closes the connection (see
    // requestTimeoutCompanions). A response, however long it streams, is not bound by it.
    requestTimeout: config.httpRequestTimeoutMs,
    // Behind a load balancer the socket's address is the balancer's; TRUST_PROXY names it, so
    // per-address limits (failed authentication, portal sign-in) see the real client.
    trustProxy: typeof config.trustProxy === 'number' ? hopsWithin(config.trustProxy) : config.trustProxy,
    return503OnClosing: true,
    frameworkErrors: (error, request, reply) => handleFrameworkError(error, request, reply, v1Hooks),
    clientErrorHandler: (err, socket) => writeClientError(err, socket, `req_${requestIdChars(20)}`),
    https: config.tls ? { cert: readFileSync(config.tls.certFile), key: readFileSync(config.tls.keyFile) } : null,
    schemaController: { compilersFactory: compilers.factories },
    ajv: {
      // Wrong types are errors, never silently coerced; unknown fields are refused, never dropped.
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false, verbose: true, strict: true, allowUnionTypes: true },
      plugins: [addFormats as unknown as (ajv: Ajv) => Ajv, registerSchemaKeywords],
    },
  }) as unknown as FastifyInstance;
  // Object.assign: Node's types list connectionsCheckingInterval as a constructor option only; the
  // server reads it when it starts listening.
  Object.assign(app.server, requestTimeoutCompanions(config.httpRequestTimeoutMs));
  if (options.onRoute) app.addHook('onRoute', options.onRoute);

  // JSON is the only request media type; Fastify's built-in text/plain parser would let a
  // non-JSON body reach validation as a string instead of being refused with 415.
  app.removeContentTypeParser('text/plain');
  // No string of a request body may hold the NUL character: PostgreSQL's text cannot store it (a
  // login with `"email":"a\u0000b"` was a 500 there, and a 200 on SQLite), and no field means it.
  // JSON can only carry it escaped, so bodies without the escape skip the walk.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: BODY_LIMIT_BYTES }, (request, body, done) => {
    if (!(body as string).includes('\\u0000')) return parseJson(request, body as string, done);
    parseJson(request, body as string, (err: Error | null, value?: unknown) => {
      if (err === null && holdsNul(value)) done(new ApiError('invalid_request', 'A string in the request body contains the NUL character (\\u0000), which no field accepts.'), undefined);
      else done(err, value);
    });
  });
  // Callback-style hooks where nothing is awaited: no promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('Request-Id', request.id);
    done();
  });
  // Graceful shutdown: requests already running finish; their keep-alive connections are then
  // closed instead of idling until the keep-alive timeout and holding the process open. While
  // draining (before close), the same: a kept-alive client reconnects, through the balancer, elsewhere.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Over HTTPS every response, whatever its route, pins HTTPS (transport-security.ts).
  const hsts = servedOverHttps(config);
  app.addHook('onSend', (request, reply, payload, done) => {
    if (closing || lifecycle.draining) reply.header('Connection', 'close');
    // An answer before the body was read (a 401, 413 or 415, bad JSON) closes the connection, lingering (lingering-close.ts).
    closeIfUnread(request.raw, reply);
    if (hsts) reply.header('Strict-Transport-Security', HSTS_VALUE);
    done(null, payload);
  });
  // SQLite: no response leaves before what it could show is on disk (durable-responses.ts).
  registerDurableResponses(app, ctx.storage.walSync);
  registerErrorHandling(app);
  const finishRoutes = collectRoutes(app);
  await registerOpenApi(app);

  registerSystemRoutes(app, ctx, lifecycle);
  await registerVerifyRoutes(app, ctx);
  // The lender portal: its own session/CSRF/role guard and the built web app (modules/portal).
  await registerPortal(app, ctx);
  // The documentation site: public, outside /v1, rendered from docs/ once (modules/docs-site).
  await registerDocsSite(app);
  app.get('/v1/openapi.json', { schema: { hide: true } }, async (_request, reply) => reply.type('application/json').send(app.swagger()));

  await app.register(
    async (v1) => {
      registerPrefetch(v1);
      registerAuthentication(v1, ctx);
      registerRateLimit(v1, ctx);
      // Unknown /v1 paths still authenticate first: no key is 401 whatever the path.
      v1.setNotFoundHandler((request, reply) => sendError(reply, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}.`));
      registerBnplRoutes(v1, ctx);
      registerSandboxRoutes(v1, ctx);
      registerAutoLoanRoutes(v1, ctx);
      registerNoticeRoutes(v1, ctx);
      registerComingSoonRoutes(v1);
      registerEventRoutes(v1, ctx);
      options.registerExtraV1Routes?.(v1, ctx);
    },
    { prefix: '/v1' },
  );

  await app.after();
  // A method a /v1 path does not have is refused like any /v1 request: the key first (401), then its limit.
  finishRoutes(v1Hooks);
  return { app, compilers };
}

/**
 * Whether a parsed JSON value holds the NUL character in a string or a key, at any depth. A walk
 * with its own stack: JSON nested tens of thousands deep is valid, and recursion would overflow.
 */
function holdsNul(root: unknown): boolean {
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return true;
    } else if (Array.isArray(value)) {
      for (const item of value) pending.push(item);
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        if (key.includes('\u0000')) return true;
        pending.push(item);
      }
    }
  }
  return false;
}
