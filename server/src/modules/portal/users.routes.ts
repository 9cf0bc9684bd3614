/** Settings -> Users: the tenant's people and invitations (admins only). */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import type { PortalRole } from '../../db/schema.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { passwordResetUrl } from './accounts.service.js';
import { PAGE_QUERY, paging, sessionOf } from './portal-http.js';
import { presentInvitation, presentUser } from './portal.presenter.js';
import { ROLES } from './permissions.js';

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid' } } } as const;
const role = { type: 'string', enum: ROLES } as const;

export function registerUsersRoutes(api: FastifyInstance, ctx: AppContext): void {
  api.get<{ Querystring: { page?: string; page_size?: string } }>(
    '/users',
    { schema: { hide: true, querystring: { type: 'object', additionalProperties: false, properties: PAGE_QUERY } }, config: { permission: 'users:read' } },
    async (request) => {
      const { page, pageSize, limit, offset } = paging(request.query);
      const { users, total } = await ctx.accounts.listUsers(sessionOf(request).tenantId, { limit, offset });
      return { data: users.map(presentUser), page, page_size: pageSize, total };
    },
  );

  api.patch<{ Params: { id: string }; Body: { role: PortalRole } }>(
    '/users/:id',
    { schema: { hide: true, params: idParams, body: { type: 'object', additionalProperties: false, required: ['role'], properties: { role } } }, config: { permission: 'users:write' } },
    async (request) => ({ user: presentUser(await ctx.accounts.changeRole(sessionOf(request).tenantId, request.params.id, request.body.role)) }),
  );

  api.delete<{ Params: { id: string } }>('/users/:id', { schema: { hide: true, params: idParams }, config: { permission: 'users:write' } }, async (request, reply) => {
    const session = sessionOf(request);
    if (request.params.id === session.user.id) throw new ApiError('unprocessable_entity', 'You cannot remove yourself; ask another admin.');
    await ctx.accounts.removeUser(session.tenantId, request.params.id);
    return reply.code(204).send();
  });

  // A one-time link for the member to set a new password (shown once, like an invitation link).
  api.post<{ Params: { id: string } }>(
    '/users/:id/password-reset',
    { schema: { hide: true, params: idParams }, config: { permission: 'users:write' } },
    async (request, reply) => {
      const session = sessionOf(request);
      const { user, token, expiresAt } = await ctx.accounts.createPasswordReset(session.user, session.tenantId, request.params.id);
      return reply.code(201).send({ reset_url: passwordResetUrl(ctx.config.publicBaseUrl, token), expires_at: expiresAt.toISOString(), user: presentUser(user) });
    },
  );

  api.get('/invitations', { schema: { hide: true }, config: { permission: 'users:read' } }, async (request) => ({
    data: (await ctx.accounts.listInvitations(sessionOf(request).tenantId)).map(presentInvitation),
  }));

  api.post<{ Body: { email: string; role: PortalRole } }>(
    '/invitations',
    {
      schema: {
        hide: true,
        body: { type: 'object', additionalProperties: false, required: ['email', 'role'], properties: { email: { type: 'string', format: 'email', maxLength: 254 }, role } },
      },
      config: { permission: 'users:write' },
    },
    async (request, reply) => {
      const { invitation, token } = await ctx.accounts.inviteUser(sessionOf(request).user, request.body);
      // The token travels in the fragment: browsers never send it to a server or in a Referer.
      const inviteUrl = `${ctx.config.publicBaseUrl}/portal/invitation#${token}`;
      return reply.code(201).send({ invitation: presentInvitation(invitation), invite_url: inviteUrl });
    },
  );

  api.delete<{ Params: { id: string } }>('/invitations/:id', { schema: { hide: true, params: idParams }, config: { permission: 'users:write' } }, async (request, reply) => {
    await ctx.accounts.revokeInvitation(sessionOf(request).tenantId, request.params.id);
    return reply.code(204).send();
  });
}
