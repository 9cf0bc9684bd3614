/**
 * Errors on the wire. Every non-2xx response leaves through here and has exactly the body
 * `{error, message, request_id}` with a code from the registry. Framework errors (bad JSON, body
 * too large, wrong media type, schema validation) are translated into registry codes; database
 * outages become 503 with Retry-After; anything else is a 500 that says nothing about internals
 * while the log line (with the same request id) says everything.
 */
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
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
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return sendError(reply, 'invalid_request', 'The request body is empty; send a JSON object.');
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
        return sendError(reply, 'invalid_request', 'The request body is not valid JSON.');
      default:
        break;
    }
    if (isDatabaseUnavailable(error)) {
      request.log.error({ err: error }, 'database unavailable');
      return sendError(reply, 'service_unavailable', ERROR_REGISTRY.service_unavailable.message, { 'Retry-After': '2' });
    }
    const status = fastifyError.statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      // Remaining client errors from the framework: malformed JSON, prototype poisoning, bad headers.
      if (status === 413) return sendError(reply, 'payload_too_large', ERROR_REGISTRY.payload_too_large.message);
      if (status === 415) return sendError(reply, 'unsupported_media_type', ERROR_REGISTRY.unsupported_media_type.message);
      return sendError(reply, 'invalid_request', error instanceof SyntaxError ? 'The request body is not valid JSON.' : ERROR_REGISTRY.invalid_request.message);
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendError(reply, 'internal_error', ERROR_REGISTRY.internal_error.message);
  });

  app.setNotFoundHandler((request, reply) => sendError(reply, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}.`));
}

/**
 * A path that exists with other methods answers 405 with Allow instead of 404. Routes are
 * collected as they are declared; `addMethodNotAllowedRoutes` runs once they all are.
 */
export function collectRoutes(app: FastifyInstance): () => void {
  const methodsByUrl = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const set = methodsByUrl.get(route.url) ?? new Set<string>();
    for (const m of methods) set.add(m.toUpperCase());
    methodsByUrl.set(route.url, set);
  });
  return () => {
    for (const [url, methods] of [...methodsByUrl]) {
      if (methods.has('GET')) methods.add('HEAD');
      const missing = ALL_METHODS.filter((m) => !methods.has(m));
      if (missing.length === 0) continue;
      const allow = [...methods].sort().join(', ');
      app.route({
        method: missing,
        url,
        schema: { hide: true },
        handler: async (_request, reply) => sendError(reply, 'method_not_allowed', `Method not allowed here; allowed: ${allow}.`, { Allow: allow }),
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
}

/** One clear sentence naming the field, e.g. "consumer.email must be a valid email address." */
export function describeValidationError(error: FastifyError): string {
  const first = (error.validation as unknown as AjvErrorLike[] | undefined)?.[0];
  const context = (error as FastifyError & { validationContext?: string }).validationContext ?? 'body';
  if (!first) return ERROR_REGISTRY.invalid_request.message;
  const path = first.instancePath
    .split('/')
    .filter(Boolean)
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('');
  const field = path === '' ? (context === 'body' ? 'The request body' : context) : path;
  const custom = first.parentSchema?.['x-error'];
  if (typeof custom === 'string' && first.keyword !== 'required' && first.keyword !== 'additionalProperties') return `${field} ${custom}.`;
  const where = (name: unknown) => (path === '' ? String(name) : `${path}.${String(name)}`);
  switch (first.keyword) {
    case 'required':
      return `${where(first.params.missingProperty)} is required.`;
    case 'additionalProperties':
      return `${where(first.params.additionalProperty)} is not a recognised field.`;
    case 'type':
      return `${field} must be of type ${String(first.params.type)}.`;
    case 'enum':
      return `${field} must be one of: ${(first.params.allowedValues as unknown[]).join(', ')}.`;
    case 'format':
      return `${field} must be a valid ${String(first.params.format)}.`;
    case 'pattern':
      return `${field} has an invalid format.`;
    default:
      return `${field} ${first.message ?? 'is invalid'}.`;
  }
}
