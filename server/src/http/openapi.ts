/**
 * The OpenAPI 3.1 document is generated from the route schemas (one source of truth) by
 * @fastify/swagger, committed as docs/openapi.json (`npm run openapi` rewrites it; a test fails
 * when the two differ) and served at GET /v1/openapi.json.
 */
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { ERROR_REGISTRY } from './errors/error-registry.js';
import { ADVERSE_ACTION_NOTICE_SCHEMA_ID, adverseActionNoticeSchema } from '../modules/notices/notice.schemas.js';

export const ERROR_SCHEMA_ID = 'Error';

export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  app.addSchema({
    $id: ERROR_SCHEMA_ID,
    type: 'object',
    description: 'Every non-2xx response has exactly these three fields.',
    properties: {
      // An open set (docs/versioning.md): a closed enum would make a strictly validating generated
      // client refuse a code added later, which it should handle by its HTTP status instead.
      error: {
        type: 'string',
        description: `Machine-readable code; see docs/errors.md. An open set: new codes may be added, so handle an unknown code by its HTTP status. Codes today: ${Object.keys(ERROR_REGISTRY).join(', ')}.`,
        examples: ['invalid_request'],
      },
      message: { type: 'string', description: 'Human-readable explanation.' },
      request_id: { type: 'string', description: 'Identifier of the request; also in the Request-Id header.' },
    },
    required: ['error', 'message', 'request_id'],
    additionalProperties: false,
  });
  // Shared by two operations (BNPL and auto loan): one component in the document, not two copies.
  app.addSchema({ $id: ADVERSE_ACTION_NOTICE_SCHEMA_ID, ...adverseActionNoticeSchema });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Credit Decisioning Service API',
        version: '1.0.0',
        description:
          'Real-time credit decisions for lenders. Authenticate with `Authorization: Bearer <API_KEY>`; ' +
          '`svc_test_` keys select the sandbox, `svc_live_` keys live. State-changing requests accept an ' +
          '`Idempotency-Key` header. Errors always have the body `{error, message, request_id}`.',
      },
      servers: [{ url: '/', description: 'The service base address ({base_url})' }],
      components: {
        securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'svc_test_... (sandbox) or svc_live_... (live)' } },
      },
      security: [{ apiKey: [] }],
    },
    transformObject: (document) =>
      'openapiObject' in document ? (withResponseHeaders(document.openapiObject as OpenApiDocument) as typeof document.openapiObject) : document.swaggerObject,
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });
}

/** Standard error responses for a /v1 route's schema, referencing the shared Error schema. */
export function errorResponses(...statuses: number[]): Record<number, unknown> {
  const out: Record<number, unknown> = {};
  for (const status of statuses) {
    const codes = Object.entries(ERROR_REGISTRY)
      // Portal-only codes are not answered under /v1, whose operations are all this document has.
      .filter(([, v]) => v.status === status && !('portal' in v))
      .map(([k]) => k);
    out[status] = { description: codes.join(' or '), $ref: `${ERROR_SCHEMA_ID}#` };
  }
  return out;
}

/** The headers every /v1 answer carries, documented once (components.headers) and referred to from each response. */
const HEADERS: Record<string, { description: string; schema: Record<string, unknown> }> = {
  'Request-Id': { description: 'Identifier of this request; on a replay, of the original request. Quote it to support.', schema: { type: 'string', examples: ['req_8ZkP2mQ7vX4nR1tY6wB3'] } },
  'RateLimit-Limit': { description: "The API key's burst: requests it may make at once (IETF draft names).", schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left in the bucket now.', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until the bucket is full again.', schema: { type: 'integer' } },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
  'Idempotent-Replayed': { description: '`true` when this is the stored answer to an earlier request with the same Idempotency-Key.', schema: { type: 'string', enum: ['true'] } },
  Allow: { description: 'The methods this path has.', schema: { type: 'string', examples: ['GET, HEAD'] } },
};

interface OpenApiResponse {
  description?: string;
  headers?: Record<string, unknown>;
  content?: unknown;
}
interface OpenApiDocument {
  paths?: Record<string, Record<string, { responses?: Record<string, OpenApiResponse> }>>;
  components?: { headers?: Record<string, unknown> };
}

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });

/**
 * Response headers, which the route schemas cannot declare: Request-Id on every answer, the
 * RateLimit-* trio on every /v1 answer (they are set once the key is known), Retry-After on 429
 * and 503, Idempotent-Replayed on what a POST stores (2xx and 422), and the 405 with Allow that
 * every /v1 path answers for a method it does not have (plugins/errors.ts `collectRoutes`).
 */
function withResponseHeaders(document: OpenApiDocument): OpenApiDocument {
  document.components = { ...document.components, headers: HEADERS };
  for (const [path, operations] of Object.entries(document.paths ?? {})) {
    if (!path.startsWith('/v1/')) continue;
    for (const [method, operation] of Object.entries(operations)) {
      const responses = operation.responses ?? {};
      const errorContent = Object.entries(responses).find(([status]) => status.startsWith('4'))?.[1].content;
      if (errorContent && !responses['405']) responses['405'] = { description: 'method_not_allowed', content: errorContent };
      for (const [status, response] of Object.entries(responses)) {
        const headers: Record<string, unknown> = { 'Request-Id': ref('Request-Id') };
        if (status !== '401') Object.assign(headers, { 'RateLimit-Limit': ref('RateLimit-Limit'), 'RateLimit-Remaining': ref('RateLimit-Remaining'), 'RateLimit-Reset': ref('RateLimit-Reset') });
        if (status === '429' || status === '503') headers['Retry-After'] = ref('Retry-After');
        if (status === '405') headers.Allow = ref('Allow');
        if (method === 'post' && (status.startsWith('2') || status === '422')) headers['Idempotent-Replayed'] = ref('Idempotent-Replayed');
        response.headers = { ...response.headers, ...headers };
      }
      operation.responses = responses;
    }
  }
  return document;
}
