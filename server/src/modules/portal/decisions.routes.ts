/**
 * The decision explorer (/portal/api/decisions/{env}/...), on the reporting read model: search with
 * filters and keyset paging, one decision explained (audit record, events, webhook deliveries), and
 * the filtered list as a CSV download. The environment is part of the path, the tenant comes from
 * the session: another tenant's or environment's decision is "not found". Query values are
 * strings (no coercion here); a bad one is 400 naming the parameter.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import type { Environment } from '../../config/config.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { ADVERSE_ACTION_FILTERS, OUTCOME_FILTERS, type AdverseActionFilter, type DecisionFilters, type OutcomeFilter, type ReportingScope } from '../reporting/reporting.service.js';
import { sessionOf } from './portal-http.js';
import { presentDecisionDetail, presentDecisionListItem } from './portal.presenter.js';

const environment = { type: 'string', enum: ['sandbox', 'live'] } as const;
const uuid = { type: 'string', format: 'uuid' } as const;
const envParams = { type: 'object', required: ['environment'], properties: { environment } } as const;

const FILTER_QUERY = {
  decision_id: uuid,
  consumer_id: uuid,
  outcome: { type: 'string', enum: OUTCOME_FILTERS },
  adverse_action: { type: 'string', enum: ADVERSE_ACTION_FILTERS },
  product: { type: 'string', pattern: '^[a-z][a-z_]{0,31}$' },
  from: { type: 'string', format: 'date-time' },
  to: { type: 'string', format: 'date-time' },
} as const;

type FilterQuery = { decision_id?: string; consumer_id?: string; outcome?: OutcomeFilter; adverse_action?: AdverseActionFilter; product?: string; from?: string; to?: string };
type EnvParams = { environment: Environment };

export function filtersOf(q: FilterQuery): DecisionFilters {
  const from = q.from === undefined ? undefined : new Date(q.from);
  const to = q.to === undefined ? undefined : new Date(q.to);
  if (from && to && from.getTime() >= to.getTime()) throw new ApiError('invalid_request', 'from must be earlier than to.');
  return {
    ...(q.decision_id ? { decisionId: q.decision_id } : {}),
    ...(q.consumer_id ? { consumerId: q.consumer_id } : {}),
    ...(q.outcome ? { outcome: q.outcome } : {}),
    ...(q.adverse_action ? { adverseAction: q.adverse_action } : {}),
    ...(q.product ? { product: q.product } : {}),
    ...(from ? { from } : {}),
    ...(to ? { to } : {}),
  };
}

export function registerDecisionsRoutes(api: FastifyInstance, ctx: AppContext): void {
  const read = { permission: 'decisions:read' } as const;
  const scopeOf = (request: { params: EnvParams } & Parameters<typeof sessionOf>[0]): ReportingScope => ({
    tenantId: sessionOf(request).tenantId,
    environment: request.params.environment,
  });

  api.get<{ Params: EnvParams; Querystring: FilterQuery & { cursor?: string; limit?: string } }>(
    '/decisions/:environment',
    {
      schema: {
        hide: true,
        params: envParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { ...FILTER_QUERY, cursor: { type: 'string', minLength: 1, maxLength: 200 }, limit: { type: 'string', pattern: '^[1-9][0-9]?$|^100$', 'x-error': 'must be a whole number from 1 to 100' } },
        },
      },
      config: read,
    },
    async (request) => {
      const limit = Number(request.query.limit ?? '25');
      const page = await ctx.reporting.listDecisions(scopeOf(request), filtersOf(request.query), { limit, cursor: request.query.cursor ?? null });
      return { data: page.items.map(presentDecisionListItem), limit, next_cursor: page.nextCursor, has_more: page.nextCursor !== null };
    },
  );

  api.get<{ Params: EnvParams; Querystring: FilterQuery }>(
    '/decisions/:environment/export.csv',
    { schema: { hide: true, params: envParams, querystring: { type: 'object', additionalProperties: false, properties: FILTER_QUERY } }, config: read },
    async (request, reply) => {
      const scope = scopeOf(request);
      const filters = filtersOf(request.query);
      const day = ctx.clock.now().toISOString().slice(0, 10);
      // Streamed page by page: the whole list is never held in memory. A failure after the first
      // bytes can only cut the file short (the status line is gone), so it is logged loudly.
      const stream = Readable.from(await ctx.reporting.exportDecisionsCsv(scope, filters));
      stream.on('error', (err) => request.log.error({ err: err.message }, 'decision export failed while streaming'));
      return reply
        .header('Content-Type', 'text/csv; charset=utf-8')
        .header('Content-Disposition', `attachment; filename=decisions-${scope.environment}-${day}.csv`)
        .send(stream);
    },
  );

  api.get<{ Params: EnvParams & { id: string } }>(
    '/decisions/:environment/:id',
    { schema: { hide: true, params: { type: 'object', required: ['environment', 'id'], properties: { environment, id: uuid } } }, config: read },
    async (request) => presentDecisionDetail(await ctx.reporting.getDecisionDetail(scopeOf(request), request.params.id)),
  );
}
