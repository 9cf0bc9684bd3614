/**
 * Errors on the wire. Every non-2xx response leaves through here and has exactly the body
 * `{error, message, request_id}` with a code from the registry. Framework errors (bad JSON, body
 * too large, wrong media type, schema validation) are translated into registry codes; database
 * outages become 503 with Retry-After; anything else is a 500 that says nothing about internals
 * while the log line (with the same request id) says everything.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Duplex } from 'node:stream';
import { isDatabaseUnavailable } from '../../db/database.js';
import { ApiError, ERROR_REGISTRY, errorBody, type ErrorCode } from '../errors/error-registry.js';

const ALL_METHODS = ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'OPTIONS'] as const;

export function sendError(reply: FastifyReply, code: ErrorCode, message: string, headers: Record<string, string> = {}): FastifyReply {
  return reply
    .code(ERROR_REGISTRY[code].status)
    .headers(headers)
    .type('application/json; charset=utf-8')
    .send(errorBody(code, message, reply.request.id));
}

/** Retry-After (seconds) of a 503 because the database cannot serve us right now. */
export const STORAGE_RETRY_AFTER_S = '2';

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | ApiError | Error, request, reply) => {
    if (error instanceof ApiError) return sendError(reply, error.code, error.message, error.headers);
    const fastifyError = error as FastifyError;
    if (fastifyError.validation) return sendError(reply, 'invalid_request', describeValidationError(fastifyError));
    switch (fastifyError.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendError(reply, 'payload_too_large', ERROR_REGISTRY.payload_too_large.message);
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return sendError(reply, 'unsupported_media_type', ERROR_REGISTRY.unsupported_media_type.message);
      // Multipart limits of the hosted upload forms: not the body size, so not its message.
      case 'FST_FILES_LIMIT':
      case 'FST_FIELDS_LIMIT':
      case 'FST_PARTS_LIMIT':
        return sendError(reply, 'payload_too_large', 'The upload has more files or fields than this form takes.');
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return sendError(reply, 'invalid_request', 'The request body is empty; send a JSON object.');
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
        return sendError(reply, 'invalid_request', describeFramework4xx(error, fastifyError.code));
      default:
        break;
    }
    if (request.raw.destroyed && !request.raw.complete) {
      // The client's side ended before its body was in (it went away, or the request time-out
      // ended it): Node reports an "aborted" ECONNRESET, which is not the database's. Nobody is
      // left to answer; logged as what it is, not as an error of ours.
      request.log.info({ err: { code: (error as NodeJS.ErrnoException).code, message: error.message } }, 'request body not received in full; the connection is gone');
      return sendError(reply, 'invalid_request', 'The request was not completed.');
    }
    if (isDatabaseUnavailable(error)) {
      request.log.error({ err: error }, 'database unavailable');
      return sendError(reply, 'service_unavailable', ERROR_REGISTRY.service_unavailable.message, { 'Retry-After': STORAGE_RETRY_AFTER_S });
    }
    const status = fastifyError.statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      // Remaining client errors from the framework: malformed JSON, prototype poisoning, bad headers.
      if (status === 413) return sendError(reply, 'payload_too_large', ERROR_REGISTRY.payload_too_large.message);
      if (status === 415) return sendError(reply, 'unsupported_media_type', ERROR_REGISTRY.unsupported_media_type.message);
      return sendError(reply, 'invalid_request', describeFramework4xx(error, fastifyError.code));
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendError(reply, 'internal_error', ERROR_REGISTRY.internal_error.message);
  });

  app.setNotFoundHandler((request, reply) => sendError(reply, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}.`));
}

/**
 * Errors the router raises before any hook runs (Fastify's `frameworkErrors`): a path that is not
 * valid percent-encoding, or a path parameter past the router's length limit. Without this they
 * leave with Fastify's own body, no Request-Id and the raw path echoed back.
 */
export function handleFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply, hooksByPrefix: Record<string, onRequestHookHandler[]> = {}): void {
  reply.header('Request-Id', request.id);
  // Under /v1 the key comes first (a missing or wrong key is 401 whatever else is wrong, and the
  // request counts against its limits), so the prefix's hooks run before the 400.
  const path = request.url;
  const hooks = Object.entries(hooksByPrefix).find(([prefix]) => path === prefix || path.startsWith(`${prefix}/`) || path.startsWith(`${prefix}?`))?.[1] ?? [];
  const next = (index: number, hookError?: Error | null): void => {
    if (hookError) {
      if (hookError instanceof ApiError) sendError(reply, hookError.code, hookError.message, hookError.headers);
      else sendError(reply, 'internal_error', ERROR_REGISTRY.internal_error.message);
      return;
    }
    if (index === hooks.length) {
      answerFrameworkError(error, request, reply);
      return;
    }
    hooks[index]!.call(request.server, request, reply, (e?: Error | null) => next(index + 1, e));
  };
  next(0);
}

function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') return sendError(reply, 'invalid_request', 'A path segment is longer than 100 characters; no resource has an id that long.');
  if (error.code === 'FST_ERR_BAD_URL') return sendError(reply, 'invalid_request', describeFramework4xx(error, error.code));
  request.log.error({ err: error }, 'router error');
  return sendError(reply, 'internal_error', ERROR_REGISTRY.internal_error.message);
}

/**
 * A request Node's HTTP parser refused before Fastify saw it (malformed request line or header,
 * invalid characters, conflicting Content-Length and Transfer-Encoding, headers over the size
 * limit, a request not completed in time). Fastify's default writes its own body; this writes the
 * stable one, with a request id of its own, and closes the connection as Node does.
 */
export function writeClientError(err: NodeJS.ErrnoException, socket: Duplex, requestId: string): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const message =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? 'The request headers are larger than this server accepts; send fewer or shorter headers.'
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? 'The request was not completed in time; send the whole request at once.'
        : 'The request is not valid HTTP/1.1 (its request line, a header, or the framing of its body is malformed).';
  const body = errorBody('invalid_request', message, requestId);
  // An answer to HEAD has no body (a client would read ours as garbage); the raw bytes say if it was one.
  const head = (err as { rawPacket?: unknown }).rawPacket;
  const isHead = Buffer.isBuffer(head) && head.subarray(0, 5).toString('latin1') === 'HEAD ';
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nRequest-Id: ${requestId}\r\nConnection: close\r\n\r\n${isHead ? '' : body}`,
    );
  }
  socket.destroy(err);
}

/** The remaining framework 4xx: a prototype-poisoning key, malformed JSON, a bad header or URL. */
export function describeFramework4xx(error: Error, code: string | undefined): string {
  if (/prototype|constructor/i.test(error.message)) return 'The request body contains a "__proto__" or "constructor" key; such keys are refused in JSON bodies.';
  if (error instanceof SyntaxError) return 'The request body is not valid JSON.';
  // The framework's parser drops its cause, so both refusals it makes are named.
  if (code === 'FST_ERR_CTP_INVALID_JSON_BODY') return 'The request body is not valid JSON, or it has a "__proto__" or "constructor.prototype" key, which is refused.';
  if (code === 'FST_ERR_BAD_URL') return 'The request URL is malformed (an invalid percent-encoding); encode it as RFC 3986 describes.';
  if (code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') return 'The Content-Length header does not match the body sent.';
  return `The request could not be read (${code ?? 'malformed HTTP'}): check the URL, the headers and that the body is JSON.`;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Whether the route's path exists for this caller (see `collectRoutes`); runs as an onRequest hook on the route and on its 405 route. */
    pathGuard?: onRequestHookHandler;
  }
}

/**
 * A path that exists with other methods answers 405 with Allow instead of 404. Routes are
 * collected as they are declared; the function returned adds the 405 routes once they all are.
 * The 405 routes are the root's, outside the plugin whose hooks the path's own routes run: a path
 * declared in a plugin registered with one of `hooksByPrefix`'s prefixes (`/v1`) gets that
 * prefix's onRequest hooks on its 405 route too, so a missing key is still 401 before anything
 * else, whatever the method (docs/errors.md).
 */
export function collectRoutes(app: FastifyInstance): (hooksByPrefix?: Record<string, onRequestHookHandler[]>) => void {
  const methodsByUrl = new Map<string, { methods: Set<string>; prefix: string; guards: Set<onRequestHookHandler> }>();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const seen = methodsByUrl.get(route.url) ?? { methods: new Set<string>(), prefix: route.prefix, guards: new Set<onRequestHookHandler>() };
    for (const m of methods) seen.methods.add(m.toUpperCase());
    // A route's `config.pathGuard` decides whether the path exists for this caller at all (the
    // sandbox helper's, for a live key): its 405 route runs it too, so the path is 404 for every method.
    const guard = route.config?.pathGuard;
    if (guard) seen.guards.add(guard);
    methodsByUrl.set(route.url, seen);
  });
  return (hooksByPrefix = {}) => {
    for (const [url, { methods, prefix, guards }] of [...methodsByUrl]) {
      if (methods.has('GET')) methods.add('HEAD');
      const missing = ALL_METHODS.filter((m) => !methods.has(m));
      if (missing.length === 0) continue;
      const allow = [...methods].sort().join(', ');
      const hooks = [...(Object.entries(hooksByPrefix).find(([p]) => prefix === p || prefix.startsWith(`${p}/`))?.[1] ?? []), ...guards];
      app.route({
        method: missing,
        url,
        schema: { hide: true },
        ...(hooks.length > 0 ? { onRequest: hooks } : {}),
        handler: async (request, reply) => {
          // `/v1/decisions/bnpl/` matches the poll's path with an empty id: it is no path of ours,
          // and "allowed: GET" would tell a caller who added a slash to the create URL the wrong thing.
          if (Object.values(request.params as Record<string, string>).some((value) => value === '')) {
            return sendError(reply, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}.`);
          }
          return sendError(reply, 'method_not_allowed', `Method not allowed here; allowed: ${allow}.`, { Allow: allow });
        },
      });
    }
  };
}

interface AjvErrorLike {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
  parentSchema?: Record<string, unknown>;
  schema?: unknown;
  data?: unknown;
}

/** How each part of a request is named in a message. */
const PART_NAMES: Record<string, { whole: string; member: string }> = {
  body: { whole: 'The request body', member: 'field' },
  querystring: { whole: 'The query string', member: 'query parameter' },
  params: { whole: 'The path', member: 'path parameter' },
  headers: { whole: 'The headers', member: 'header' },
};

/** Plain words for the formats our schemas use, each with an example (never the caller's value). */
const FORMAT_RULES: Record<string, string> = {
  uuid: 'must be a UUID such as 3b0f5c3e-6a0e-4a31-9a53-2f1c3f0e9a11',
  date: 'must be a real calendar date in the form YYYY-MM-DD',
  'date-time': 'must be an ISO 8601 date-time with a time zone, such as 2026-01-28T10:00:00Z',
  email: 'must be a valid email address',
  uri: 'must be an absolute URL',
};

/** "a JSON object", "a string", ... for the `type` keyword (and what was sent instead). */
function typeWords(type: unknown): string {
  const one = (t: string) => ({ object: 'a JSON object', array: 'an array', string: 'a string', integer: 'a whole number', number: 'a number', boolean: 'true or false', null: 'null' })[t] ?? t;
  return Array.isArray(type) ? type.map((t) => one(String(t))).join(' or ') : one(String(type));
}
function sentType(data: unknown): string {
  if (data === null) return 'null';
  if (Array.isArray(data)) return 'an array';
  if (typeof data === 'object') return 'an object';
  if (typeof data === 'number') return !Number.isFinite(data) ? 'a number too large to represent' : Number.isInteger(data) ? 'a whole number' : 'a number';
  if (typeof data === 'boolean') return 'a boolean';
  return `a ${typeof data}`;
}

/**
 * One clear sentence naming the field (its JSON path) and the rule, e.g.
 * "consumer.email must be a valid email address." or "coupon is not a recognised field; allowed
 * fields: consumer, transaction, order, plan_preference." A schema's `x-error` gives a field its
 * own wording of the rule. The caller's value is never echoed (it may be personal data); its JSON
 * type may be.
 */
export function describeValidationError(error: FastifyError): string {
  const first = (error.validation as unknown as AjvErrorLike[] | undefined)?.[0];
  const context = (error as FastifyError & { validationContext?: string }).validationContext ?? 'body';
  const part = PART_NAMES[context] ?? { whole: `The ${context}`, member: 'field' };
  if (!first) return `${part.whole} does not match the documented schema of this endpoint; see docs/openapi.json.`;
  const path = first.instancePath
    .split('/')
    .filter(Boolean)
    .map((segment, i) => (/^\d+$/.test(segment) ? `[${segment}]` : i === 0 ? segment : `.${segment}`))
    .join('');
  const field = path === '' ? part.whole : path;
  const custom = first.parentSchema?.['x-error'];
  if (typeof custom === 'string' && first.keyword !== 'required' && first.keyword !== 'additionalProperties') return `${field} ${custom}.`;
  const where = (name: unknown) => (path === '' ? String(name) : `${path}.${String(name)}`);
  const p = first.params;
  switch (first.keyword) {
    case 'required':
      return path === '' && context !== 'body' ? `${String(p.missingProperty)} is a required ${part.member}.` : `${where(p.missingProperty)} is required.`;
    case 'additionalProperties': {
      const known = Object.keys((first.parentSchema?.properties as Record<string, unknown> | undefined) ?? {});
      const noun = path === '' ? part.member : 'field';
      const allowed = known.length > 0 ? `; allowed ${noun}s: ${known.join(', ')}` : `; this object takes no ${noun}s`;
      return `${where(p.additionalProperty)} is not a recognised ${noun}${allowed}.`;
    }
    case 'type':
      return `${field} must be ${typeWords(p.type)}, not ${sentType(first.data)}.`;
    case 'enum':
      return `${field} must be one of: ${(p.allowedValues as unknown[]).map(String).join(', ')}.`;
    case 'const':
      return `${field} must be ${JSON.stringify(p.allowedValue)}.`;
    case 'format':
      return `${field} ${FORMAT_RULES[String(p.format)] ?? `must be a valid ${String(p.format)}`}.`;
    case 'pattern':
      return `${field} must match the pattern ${String(p.pattern)}.`;
    case 'minLength':
      return Number(p.limit) === 1 ? `${field} must not be empty.` : `${field} must be at least ${String(p.limit)} characters long.`;
    case 'maxLength':
      return `${field} must be at most ${String(p.limit)} characters long.`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum': {
      const schema = first.parentSchema ?? {};
      const min = schema.minimum ?? schema.exclusiveMinimum;
      const max = schema.maximum ?? schema.exclusiveMaximum;
      if (min !== undefined && max !== undefined) return `${field} must be from ${String(min)} to ${String(max)}.`;
      return `${field} must be ${String(p.comparison)} ${String(p.limit)}.`;
    }
    case 'minItems':
      return `${field} must have at least ${String(p.limit)} item${Number(p.limit) === 1 ? '' : 's'}.`;
    case 'maxItems':
      return `${field} must have at most ${String(p.limit)} items.`;
    case 'uniqueItems':
      return `${field} must not repeat an item (items ${String(p.j)} and ${String(p.i)} are the same).`;
    case 'minProperties':
      return `${field} must have at least ${String(p.limit)} field${Number(p.limit) === 1 ? '' : 's'}.`;
    case 'multipleOf':
      return `${field} must be a multiple of ${String(p.multipleOf)}.`;
    default:
      return `${field} ${first.message ?? `breaks the schema rule "${first.keyword}"`}.`;
  }
}
