/**
 * The OpenAPI 3.1 document is generated from the route schemas (one source of truth) by
 * @fastify/swagger, committed as docs/openapi.json (`npm run openapi` rewrites it; a test fails
 * when the two differ) and served at GET /v1/openapi.json.
 */
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { ERROR_REGISTRY } from './errors/error-registry.js';

export const ERROR_SCHEMA_ID = 'Error';

export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  app.addSchema({
    $id: ERROR_SCHEMA_ID,
    type: 'object',
    description: 'Every non-2xx response has exactly these three fields.',
    properties: {
      error: { type: 'string', enum: Object.keys(ERROR_REGISTRY), description: 'Machine-readable code; see docs/errors.md.' },
      message: { type: 'string', description: 'Human-readable explanation.' },
      request_id: { type: 'string', description: 'Identifier of the request; also in the Request-Id header.' },
    },
    required: ['error', 'message', 'request_id'],
    additionalProperties: false,
  });
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
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });
}

/** Standard error responses for a route's schema, referencing the shared Error schema. */
export function errorResponses(...statuses: number[]): Record<number, unknown> {
  const out: Record<number, unknown> = {};
  for (const status of statuses) {
    const codes = Object.entries(ERROR_REGISTRY)
      .filter(([, v]) => v.status === status)
      .map(([k]) => k);
    out[status] = { description: codes.join(' or '), $ref: `${ERROR_SCHEMA_ID}#` };
  }
  return out;
}
