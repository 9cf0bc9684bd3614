/**
 * Sandbox consumers: the three seeded consumers (and any the tenant's sandbox calls created), their
 * ids, tier, identity status, linked accounts and application history; Reset consumer state. The
 * scope is always the session's tenant and the sandbox: live consumers are never listed here.
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { PAGE_QUERY, paging, sessionOf } from './portal-http.js';
import { presentApplication, presentConsumer } from './portal.presenter.js';

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid' } } } as const;

export function registerSandboxConsumersRoutes(api: FastifyInstance, ctx: AppContext): void {
  const sandboxOf = (request: Parameters<typeof sessionOf>[0]) => ({ tenantId: sessionOf(request).tenantId, environment: 'sandbox' as const });

  api.get<{ Querystring: { search?: string; seeded?: 'true' | 'false'; page?: string; page_size?: string } }>(
    '/sandbox/consumers',
    {
      schema: {
        hide: true,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { search: { type: 'string', maxLength: 200 }, seeded: { type: 'string', enum: ['true', 'false'] }, ...PAGE_QUERY },
        },
      },
      config: { permission: 'consumers:read' },
    },
    async (request) => {
      const { page, pageSize, limit, offset } = paging(request.query);
      const { consumers, total } = await ctx.consumers.listConsumers(sandboxOf(request), {
        ...(request.query.search ? { search: request.query.search } : {}),
        seededOnly: request.query.seeded === 'true',
        limit,
        offset,
      });
      return { data: consumers.map(presentConsumer), page, page_size: pageSize, total };
    },
  );

  api.get<{ Params: { id: string } }>('/sandbox/consumers/:id', { schema: { hide: true, params: idParams }, config: { permission: 'consumers:read' } }, async (request) => {
    const consumer = await ctx.consumers.findConsumer(sandboxOf(request), request.params.id);
    if (!consumer) throw new ApiError('not_found', 'No such sandbox consumer.');
    return { consumer: presentConsumer(consumer) };
  });

  api.get<{ Params: { id: string }; Querystring: { page?: string; page_size?: string } }>(
    '/sandbox/consumers/:id/applications',
    { schema: { hide: true, params: idParams, querystring: { type: 'object', additionalProperties: false, properties: PAGE_QUERY } }, config: { permission: 'consumers:read' } },
    async (request) => {
      const scope = sandboxOf(request);
      const consumer = await ctx.consumers.findConsumer(scope, request.params.id);
      if (!consumer) throw new ApiError('not_found', 'No such sandbox consumer.');
      const { page, pageSize, limit, offset } = paging(request.query, 10);
      const { applications, total } = await ctx.decisions.listForConsumer(scope, consumer.id, { since: consumer.historyResetAt, limit, offset });
      return { data: applications.map(presentApplication), page, page_size: pageSize, total };
    },
  );

  api.post<{ Params: { id: string } }>('/sandbox/consumers/:id/reset', { schema: { hide: true, params: idParams }, config: { permission: 'consumers:reset' } }, async (request) => {
    const session = sessionOf(request);
    const consumer = await ctx.consumers.resetSandboxConsumer({ tenantId: session.tenantId }, request.params.id);
    if (!consumer) throw new ApiError('not_found', 'No such sandbox consumer.');
    request.log.info({ consumerId: consumer.id, userId: session.user.id }, 'portal: sandbox consumer reset');
    return { consumer: presentConsumer(consumer) };
  });
}
