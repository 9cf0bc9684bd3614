/**
 * Portal accounts over HTTP: the session probe the web app starts with, sign-up, sign-in,
 * sign-out, accepting an invitation, changing one's password and using a password reset link. The
 * public ones still need the anonymous double-submit CSRF token that the session probe hands out
 * (portal-http.ts).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../app/context.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { PASSWORD_MAX_LENGTH, PASSWORD_RESET_GONE, type PortalSession } from './accounts.service.js';
import { clearSessionCookies, CSRF_COOKIE, parseCookies, sessionOf, setAnonymousCsrfCookie, setSessionCookies } from './portal-http.js';
import { presentSession } from './portal.presenter.js';

const email = { type: 'string', format: 'email', maxLength: 254 } as const;
const password = { type: 'string', minLength: 1, maxLength: PASSWORD_MAX_LENGTH } as const;
const personName = { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' } as const;
/** An invitation or reset link's token, sent in a body (never a URL). */
const linkToken = { type: 'string', minLength: 1, maxLength: 100 } as const;

export function registerAuthRoutes(api: FastifyInstance, ctx: AppContext, secure: boolean): void {
  const anonymousToken = () => ctx.random.bytes(32).toString('base64url');

  async function sendSession(reply: FastifyReply, session: PortalSession, status = 200, extra: Record<string, unknown> = {}) {
    const tenant = await ctx.tenants.getTenant(session.tenantId);
    setSessionCookies(reply, session, secure);
    return reply.code(status).send({ ...presentSession(session, { id: session.tenantId, name: tenant?.name ?? '' }), ...extra });
  }

  api.get('/session', { schema: { hide: true }, config: { portalPublic: true } }, async (request, reply) => {
    if (request.portalSession) return sendSession(reply, request.portalSession);
    // Keep a well-formed anonymous token the browser already has (several tabs, one value).
    const existing = parseCookies(request.headers.cookie)[CSRF_COOKIE];
    const token = existing && /^[A-Za-z0-9_-]{43}$/.test(existing) ? existing : anonymousToken();
    setAnonymousCsrfCookie(reply, token, secure);
    return { authenticated: false, csrf_token: token };
  });

  api.post<{ Body: { company_name: string; name: string; email: string; password: string } }>(
    '/signup',
    {
      schema: {
        hide: true,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['company_name', 'name', 'email', 'password'],
          properties: { company_name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' }, name: personName, email, password },
        },
      },
      config: { portalPublic: true },
    },
    async (request, reply) => {
      const body = request.body;
      const result = await ctx.accounts.signUp({ companyName: body.company_name, name: body.name, email: body.email, password: body.password, clientAddress: request.ip });
      if (request.portalSession) await ctx.accounts.logout(request.portalSession.token);
      return sendSession(reply, result.session, 201, { sandbox_api_key: result.sandboxApiKey });
    },
  );

  api.post<{ Body: { email: string; password: string } }>(
    '/login',
    {
      schema: {
        hide: true,
        body: { type: 'object', additionalProperties: false, required: ['email', 'password'], properties: { email: { type: 'string', minLength: 1, maxLength: 254 }, password } },
      },
      config: { portalPublic: true },
    },
    async (request, reply) => {
      const session = await ctx.accounts.login({ email: request.body.email, password: request.body.password, clientAddress: request.ip });
      if (request.portalSession) await ctx.accounts.logout(request.portalSession.token);
      return sendSession(reply, session);
    },
  );

  api.post('/logout', { schema: { hide: true } }, async (request, reply) => {
    await ctx.accounts.logout(sessionOf(request).token);
    const token = anonymousToken();
    clearSessionCookies(reply, token, secure);
    return { authenticated: false, csrf_token: token };
  });

  // A POST, so the invitation token never appears in a URL (access logs, proxies, history).
  api.post<{ Body: { token: string } }>(
    '/invitation-links/lookup',
    {
      schema: { hide: true, body: { type: 'object', additionalProperties: false, required: ['token'], properties: { token: linkToken } } },
      config: { portalPublic: true },
    },
    async (request) => {
      const invitation = await ctx.accounts.describeInvitation(request.body.token);
      if (!invitation) throw new ApiError('not_found', 'This invitation link is not valid any more (used, revoked or expired); ask for a new one.');
      return { email: invitation.email, role: invitation.role, tenant_name: invitation.tenantName, expires_at: invitation.expiresAt.toISOString() };
    },
  );

  api.post<{ Body: { token: string; name: string; password: string } }>(
    '/invitation-links/accept',
    {
      schema: {
        hide: true,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['token', 'name', 'password'],
          properties: { token: linkToken, name: personName, password },
        },
      },
      config: { portalPublic: true },
    },
    async (request, reply) => {
      const session = await ctx.accounts.acceptInvitation({ token: request.body.token, name: request.body.name, password: request.body.password, clientAddress: request.ip });
      if (request.portalSession) await ctx.accounts.logout(request.portalSession.token);
      return sendSession(reply, session, 201);
    },
  );

  // Signed in, any role: one's own password. Every session of the user ends and this browser gets a
  // new one: 200 with the session body (its new CSRF token) and new cookies, as a sign-in.
  api.post<{ Body: { current_password: string; new_password: string } }>(
    '/account/password',
    {
      schema: {
        hide: true,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['current_password', 'new_password'],
          properties: { current_password: password, new_password: password },
        },
      },
    },
    async (request, reply) => {
      const renewed = await ctx.accounts.changePassword(sessionOf(request), { currentPassword: request.body.current_password, newPassword: request.body.new_password, clientAddress: request.ip });
      return sendSession(reply, renewed);
    },
  );

  // Reset links, as invitation links: the token only ever travels in a body (never a URL).
  api.post<{ Body: { token: string } }>(
    '/password-reset-links/lookup',
    {
      schema: { hide: true, body: { type: 'object', additionalProperties: false, required: ['token'], properties: { token: linkToken } } },
      config: { portalPublic: true },
    },
    async (request) => {
      const reset = await ctx.accounts.describePasswordReset(request.body.token);
      if (!reset) throw new ApiError('not_found', PASSWORD_RESET_GONE);
      return { email: reset.email, tenant_name: reset.tenantName, expires_at: reset.expiresAt.toISOString() };
    },
  );

  api.post<{ Body: { token: string; password: string } }>(
    '/password-reset-links/accept',
    {
      schema: {
        hide: true,
        body: { type: 'object', additionalProperties: false, required: ['token', 'password'], properties: { token: linkToken, password } },
      },
      config: { portalPublic: true },
    },
    async (request, reply) => {
      const session = await ctx.accounts.acceptPasswordReset({ token: request.body.token, password: request.body.password, clientAddress: request.ip });
      if (request.portalSession) await ctx.accounts.logout(request.portalSession.token);
      return sendSession(reply, session);
    },
  );
}
