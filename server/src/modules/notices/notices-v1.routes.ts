/**
 * GET /v1/decisions/bnpl/{decision_id}/adverse-action-notice and its auto-loan twin: a decision's
 * adverse-action notice for lenders that send their letters from their own systems (docs/decisions.md,
 * "Adverse-action notice"; ADR 0047). The portal's notice without the applicant's name and address:
 * the lender addresses the letter from its own records, and the API never returns them. Safe and
 * idempotent; the notice is made on request from the decision and the tenant's notice settings.
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import { errorResponses } from '../../http/openapi.js';
import { decisionIdParamsSchema } from '../decisions/bnpl.schemas.js';
import { ADVERSE_ACTION_NOTICE_SCHEMA_ID } from './notice.schemas.js';

export function registerNoticeRoutes(v1: FastifyInstance, ctx: AppContext): void {
  for (const [path, product, tag, name] of [
    ['bnpl', 'bnpl', 'BNPL decisions', 'Bnpl'],
    ['auto-loan', 'auto_loan', 'Auto-loan decisions', 'AutoLoan'],
  ] as const) {
    v1.get<{ Params: { decision_id: string } }>(
      `/decisions/${path}/:decision_id/adverse-action-notice`,
      {
        schema: {
          operationId: `get${name}AdverseActionNotice`,
          tags: [tag],
          summary: 'Get the adverse-action notice of a decision',
          description:
            'For a declined decision, or an approval for less or on other terms than requested (a counteroffer): the content of the notice you owe the applicant (Regulation B, 12 CFR 1002.9), ' +
            'with the reasons, the consumer-report disclosure when a report was used, the ECOA notice and the date it must be sent by. Safe and idempotent. ' +
            'A decision that took no adverse action (approved as requested, pending, referred) is 404 `no_adverse_action`.',
          params: decisionIdParamsSchema,
          response: { 200: { $ref: `${ADVERSE_ACTION_NOTICE_SCHEMA_ID}#` }, ...errorResponses(400, 401, 404, 429, 500, 503) },
        },
      },
      async (request) => ctx.notices.apiNoticeFor(request.auth, product, request.params.decision_id),
    );
  }
}
