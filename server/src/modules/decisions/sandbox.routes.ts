/**
 * POST /v1/sandbox/decisions/{decision_id}/verification: the sandbox test helper
 * (decisions.md section 6). It completes a pending decision's (BNPL or auto loan) identity verification as if the
 * consumer had passed or failed it, so an integration can be tested without a browser. Sandbox keys
 * only: with a live key the route does not exist (404). Idempotent: on a decision that is no
 * longer pending it changes nothing and returns the decision as it is; with an Idempotency-Key the
 * first response is replayed.
 */
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { AppContext } from '../../app/context.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { errorResponses } from '../../http/openapi.js';
import { jsonResponse, respondWithStateChange } from '../../http/state-change.js';
import { autoLoanDecisionResponseSchema } from './auto-loan.schemas.js';
import { decisionIdParamsSchema } from './bnpl.schemas.js';

/**
 * With a live key the sandbox paths do not exist: 404 before the body is read or validated (no 400
 * or 415 that would say otherwise), and for every method, its 405 included (the `pathGuard` below
 * is given to the path's 405 route too, plugins/errors.ts `collectRoutes`). Runs after the key is
 * authenticated, so no key is still 401.
 */
const sandboxOnly: onRequestHookHandler = (request, _reply, done) => {
  if (request.auth.environment === 'sandbox') return done();
  done(new ApiError('not_found', `No route ${request.method} ${request.url.split('?')[0]}.`) as unknown as Parameters<typeof done>[0]);
};

export function registerSandboxRoutes(v1: FastifyInstance, ctx: AppContext): void {
  v1.post<{ Params: { decision_id: string }; Body: { result: 'pass' | 'fail' } }>(
    '/sandbox/decisions/:decision_id/verification',
    {
      onRequest: sandboxOnly,
      config: { pathGuard: sandboxOnly },
      schema: {
        operationId: 'completeSandboxVerification',
        tags: ['Sandbox'],
        summary: 'Pass or fail a pending verification (sandbox only)',
        description:
          'Completes the identity verification of a pending sandbox decision as if the consumer had done it on the hosted page. ' +
          '`pass`: the engine decides and the decision completes. `fail`: referred with AA-24. Returns the decision in its new state. ' +
          'On a decision that is not pending, nothing changes. With a live key: 404.',
        headers: {
          type: 'object',
          properties: { 'idempotency-key': { type: 'string', description: 'Optional; 1 to 255 printable ASCII characters. A retry with the same key replays the first response.' } },
        },
        params: decisionIdParamsSchema,
        body: {
          type: 'object',
          required: ['result'],
          additionalProperties: false,
          properties: { result: { type: 'string', enum: ['pass', 'fail'] } },
        },
        response: { 200: autoLoanDecisionResponseSchema, ...errorResponses(400, 401, 404, 409, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      return respondWithStateChange(ctx, request, reply, async () => {
        // Any product: BNPL and auto-loan decisions verify the same way.
        const existing = await ctx.decisions.getDecision(request.auth, null, request.params.decision_id);
        if (!existing) throw new ApiError('not_found', 'No decision with this decision_id exists for this API key.');
        await ctx.verification.applySandboxResult(existing.row.id, request.body.result);
        // The verification committed its own transaction; this one only stores the response.
        const after = await ctx.decisions.getDecision(request.auth, null, request.params.decision_id);
        return async () => jsonResponse(200, after!.body);
      });
    },
  );
}
