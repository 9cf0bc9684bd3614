/**
 * POST /v1/decisions/bnpl and GET /v1/decisions/bnpl/{decision_id}. Thin: schema, then the
 * decisions service, then the presenter's JSON through the idempotent state-change helper.
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { errorResponses } from '../../http/openapi.js';
import { respondWithNewDecision } from './new-decision-response.js';
import type { BnplCreateBody } from './bnpl-request.js';
import { bnplCreateBodySchema, decisionIdParamsSchema, decisionResponseSchema } from './bnpl.schemas.js';

const idempotencyKeyHeader = {
  type: 'object',
  properties: {
    'idempotency-key': { type: 'string', description: 'Optional; 1 to 255 printable ASCII characters. Retrying with the same key and body replays the first response.' },
  },
} as const;

export function registerBnplRoutes(v1: FastifyInstance, ctx: AppContext): void {
  v1.post<{ Body: BnplCreateBody }>(
    '/decisions/bnpl',
    {
      schema: {
        operationId: 'createBnplDecision',
        tags: ['BNPL decisions'],
        summary: 'Create a BNPL decision',
        description:
          'Soft tier (below 500.00 by default): the decision completes in this response (approved, declined or referred). ' +
          'Enhanced and hard tiers: `needs_consumer_action` with `consumer_complete_url`; poll `polling_url` every 2-3 s. ' +
          'A decline is HTTP 200 with `outcome: "declined"`.',
        headers: idempotencyKeyHeader,
        body: bnplCreateBodySchema,
        response: { 200: decisionResponseSchema, ...errorResponses(400, 401, 409, 413, 415, 422, 429, 500, 503) },
      },
    },
    // The new decision's answer, also kept as its first poll answer once committed (ADR 0050).
    async (request, reply) => respondWithNewDecision(ctx, request, reply, () => ctx.decisions.prepareBnplDecision(request.auth, request.body)),
  );

  v1.get<{ Params: { decision_id: string } }>(
    '/decisions/bnpl/:decision_id',
    {
      schema: {
        operationId: 'getBnplDecision',
        tags: ['BNPL decisions'],
        summary: 'Poll a BNPL decision',
        description: 'Safe and idempotent. While verification is under way the body has the pending shape; afterwards the complete decision. Recommended interval: 2-3 s.',
        params: decisionIdParamsSchema,
        response: { 200: decisionResponseSchema, ...errorResponses(400, 401, 404, 429, 500, 503) },
      },
      // Started before authentication, to share its round trip (http/plugins/prefetch.ts); the
      // handler reads the same params object, so the id is the one prefetched.
      config: { prefetch: (request) => ctx.decisions.prefetchPoll((request.params as { decision_id: string }).decision_id) },
    },
    async (request, reply) => {
      const prefetched = request.prefetched as ReturnType<typeof ctx.decisions.prefetchPoll>;
      const json = await ctx.decisions.getDecisionJson(request.auth, 'bnpl', request.params.decision_id, prefetched);
      if (json === null) throw new ApiError('not_found', 'No BNPL decision with this decision_id exists for this API key.');
      return reply.type('application/json; charset=utf-8').send(json);
    },
  );
}
