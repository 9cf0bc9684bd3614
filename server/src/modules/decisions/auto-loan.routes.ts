/**
 * POST /v1/decisions/auto-loan and GET /v1/decisions/auto-loan/{decision_id} (decisions.md section
 * 10). Thin, as the BNPL routes: schema, the decisions service, the presenter's JSON through the
 * idempotent state-change helper.
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { errorResponses } from '../../http/openapi.js';
import { respondWithNewDecision } from './new-decision-response.js';
import type { AutoLoanCreateBody } from './auto-loan-request.js';
import { autoLoanCreateBodySchema, autoLoanDecisionResponseSchema } from './auto-loan.schemas.js';
import { decisionIdParamsSchema } from './bnpl.schemas.js';

const idempotencyKeyHeader = {
  type: 'object',
  properties: {
    'idempotency-key': { type: 'string', description: 'Optional; 1 to 255 printable ASCII characters. Retrying with the same key and body replays the first response.' },
  },
} as const;

export function registerAutoLoanRoutes(v1: FastifyInstance, ctx: AppContext): void {
  v1.post<{ Body: AutoLoanCreateBody }>(
    '/decisions/auto-loan',
    {
      schema: {
        operationId: 'createAutoLoanDecision',
        tags: ['Auto-loan decisions'],
        summary: 'Create an auto-loan decision',
        description:
          'Direct or indirect (through a dealer, with its markup) auto loan. Amount financed = `loan.amount` - `down_payment` - `trade_in_value`; ' +
          'LTV = amount financed / `vehicle.value`. KYC tier by amount financed (policy: soft below 15,000.00, enhanced below 40,000.00, hard above); ' +
          'pending decisions complete through the hosted verification page and are polled at `polling_url`. An approval carries `buy_rate`, ' +
          '`contract_rate` (buy rate + markup), `dealer_reserve` and `ltv`; `apr` is the contract rate schedule\'s Appendix J APR. ' +
          'A markup above the cap (1.25 points up to 60 months, 1.00 above), or an unknown or disabled dealer, is 422. See docs/auto-loan.md.',
        headers: idempotencyKeyHeader,
        body: autoLoanCreateBodySchema,
        response: { 200: autoLoanDecisionResponseSchema, ...errorResponses(400, 401, 409, 413, 415, 422, 429, 500, 503) },
      },
    },
    // The new decision's answer, also kept as its first poll answer once committed (ADR 0050).
    async (request, reply) => respondWithNewDecision(ctx, request, reply, () => ctx.decisions.prepareAutoLoanDecision(request.auth, request.body)),
  );

  v1.get<{ Params: { decision_id: string } }>(
    '/decisions/auto-loan/:decision_id',
    {
      schema: {
        operationId: 'getAutoLoanDecision',
        tags: ['Auto-loan decisions'],
        summary: 'Poll an auto-loan decision',
        description: 'Safe and idempotent. While verification is under way the body has the pending shape; afterwards the complete decision. Recommended interval: 2-3 s.',
        params: decisionIdParamsSchema,
        response: { 200: autoLoanDecisionResponseSchema, ...errorResponses(400, 401, 404, 429, 500, 503) },
      },
      // As the BNPL poll: started before authentication, to share its round trip (http/plugins/prefetch.ts).
      config: { prefetch: (request) => ctx.decisions.prefetchPoll((request.params as { decision_id: string }).decision_id) },
    },
    async (request, reply) => {
      const prefetched = request.prefetched as ReturnType<typeof ctx.decisions.prefetchPoll>;
      const json = await ctx.decisions.getDecisionJson(request.auth, 'auto_loan', request.params.decision_id, prefetched);
      if (json === null) throw new ApiError('not_found', 'No auto-loan decision with this decision_id exists for this API key.');
      return reply.type('application/json; charset=utf-8').send(json);
    },
  );
}
