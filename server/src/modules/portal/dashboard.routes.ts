/**
 * The dashboard's numbers (/portal/api/dashboard/{env}?from&to), from the reporting read model:
 * decisions per UTC hour by outcome, approval rate, p50/p99 decision latency, pending
 * verifications by age, webhook success rate per endpoint. The period defaults to the last 24
 * hours and may span at most 31 days; the tenant comes from the session.
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import type { Environment } from '../../config/config.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { DASHBOARD_DEFAULT_PERIOD_MS, DASHBOARD_MAX_PERIOD_MS } from '../reporting/reporting.service.js';
import { sessionOf } from './portal-http.js';
import { presentDashboard } from './portal.presenter.js';

const environment = { type: 'string', enum: ['sandbox', 'live'] } as const;

export function registerDashboardRoutes(api: FastifyInstance, ctx: AppContext): void {
  api.get<{ Params: { environment: Environment }; Querystring: { from?: string; to?: string } }>(
    '/dashboard/:environment',
    {
      schema: {
        hide: true,
        params: { type: 'object', required: ['environment'], properties: { environment } },
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { from: { type: 'string', format: 'date-time' }, to: { type: 'string', format: 'date-time' } },
        },
      },
      config: { permission: 'dashboard:read' },
    },
    async (request) => {
      const to = request.query.to ? new Date(request.query.to) : ctx.clock.now();
      const from = request.query.from ? new Date(request.query.from) : new Date(to.getTime() - DASHBOARD_DEFAULT_PERIOD_MS);
      if (from.getTime() >= to.getTime()) throw new ApiError('invalid_request', 'from must be earlier than to.');
      if (to.getTime() - from.getTime() > DASHBOARD_MAX_PERIOD_MS) throw new ApiError('invalid_request', 'from and to may be at most 31 days apart.');
      const scope = { tenantId: sessionOf(request).tenantId, environment: request.params.environment };
      return presentDashboard(scope.environment, await ctx.reporting.dashboard(scope, { from, to }));
    },
  );
}
