/**
 * Settings -> API keys: list (paged, filtered by environment and status on the server), generate
 * (sandbox or live; the full key is in this one response and nowhere else, ever), revoke
 * (effective on the very next API request: authentication reads the key row every time).
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import type { Environment } from '../../config/config.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { PAGE_QUERY, paging, sessionOf } from './portal-http.js';
import { presentApiKey } from './portal.presenter.js';

type ListQuery = { environment?: Environment; status?: 'active' | 'revoked'; page?: string; page_size?: string };

export function registerApiKeysRoutes(api: FastifyInstance, ctx: AppContext): void {
  api.get<{ Querystring: ListQuery }>(
    '/api-keys',
    {
      schema: {
        hide: true,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { environment: { type: 'string', enum: ['sandbox', 'live'] }, status: { type: 'string', enum: ['active', 'revoked'] }, ...PAGE_QUERY },
        },
      },
      config: { permission: 'keys:read' },
    },
    async (request) => {
      const { page, pageSize, limit, offset } = paging(request.query);
      const { keys, total } = await ctx.apiKeys.listKeysPage(sessionOf(request).tenantId, {
        ...(request.query.environment ? { environment: request.query.environment } : {}),
        ...(request.query.status ? { status: request.query.status } : {}),
        limit,
        offset,
      });
      return { data: keys.map(presentApiKey), page, page_size: pageSize, total };
    },
  );

  api.post<{ Body: { environment: Environment; label?: string } }>(
    '/api-keys',
    {
      schema: {
        hide: true,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['environment'],
          properties: { environment: { type: 'string', enum: ['sandbox', 'live'] }, label: { type: 'string', maxLength: 100 } },
        },
      },
      config: { permission: 'keys:write' },
    },
    async (request, reply) => {
      const session = sessionOf(request);
      const label = request.body.label?.trim() || `${request.body.environment === 'live' ? 'Live' : 'Sandbox'} key, by ${session.user.name}`;
      const created = await ctx.apiKeys.createKey(ctx.storage.db, { tenantId: session.tenantId, environment: request.body.environment, label });
      request.log.info({ keyId: created.id, environment: created.environment, userId: session.user.id }, 'portal: API key generated');
      return reply.code(201).send({
        key: presentApiKey({ id: created.id, environment: created.environment, last4: created.last4, label, createdAt: created.createdAt, lastUsedAt: null, revokedAt: null }),
        secret: created.key,
      });
    },
  );

  api.post<{ Params: { id: string } }>(
    '/api-keys/:id/revoke',
    { schema: { hide: true, params: { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid' } } } }, config: { permission: 'keys:write' } },
    async (request) => {
      const session = sessionOf(request);
      const revoked = await ctx.apiKeys.revokeKey({ tenantId: session.tenantId, keyId: request.params.id });
      const key = (await ctx.apiKeys.listKeys(session.tenantId)).find((k) => k.id === request.params.id);
      if (!key) throw new ApiError('not_found', 'No such API key.');
      if (revoked) request.log.info({ keyId: key.id, userId: session.user.id }, 'portal: API key revoked');
      return { key: presentApiKey(key) };
    },
  );
}
