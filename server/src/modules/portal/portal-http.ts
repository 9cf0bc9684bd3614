/**
 * The portal API's request guard, run on every `/portal/api/*` request before its body is parsed:
 *
 *   1. session   the `cds_session` cookie (HttpOnly, SameSite=Strict, Path=/portal, Secure over
 *                HTTPS) -> accounts.authenticateSession; none and the route is not public -> 401
 *   2. CSRF      every method other than GET/HEAD must send `X-CSRF-Token` equal to the
 *                `cds_csrf` cookie (double submit) AND, with a session, equal to the session's
 *                own token (an HMAC of the session value): a token from another session, or a
 *                cookie planted by a sibling subdomain, does not pass -> 403 invalid_csrf_token
 *   3. role      the route's `config.permission` against the user's role -> 403 forbidden
 *
 * So a handler runs only for a signed-in user of a known tenant whose role allows the action; it
 * takes the tenant from the session, never from the request.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app/context.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { servedOverHttps } from '../../http/transport-security.js';
import { safeEqual } from '../../lib/crypto.js';
import type { PortalSession } from './accounts.service.js';
import { can, type Permission } from './permissions.js';

export const SESSION_COOKIE = 'cds_session';
export const CSRF_COOKIE = 'cds_csrf';
export const CSRF_HEADER = 'x-csrf-token';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Portal routes open without a session (sign-up, sign-in, invitation acceptance, session probe). */
    portalPublic?: boolean;
    /** What the signed-in user's role must allow. */
    permission?: Permission;
  }
  interface FastifyRequest {
    /** The portal session, when there is one (always on non-public portal routes). */
    portalSession: PortalSession | null;
  }
}

export function cookieSettings(ctx: AppContext): { secure: boolean } {
  return { secure: servedOverHttps(ctx.config) };
}

/**
 * Sets the session cookie and its CSRF companion (readable by the page, so it can echo it). Both
 * are browser-session cookies (no Max-Age): the server enforces the idle and absolute expiry.
 */
export function setSessionCookies(reply: FastifyReply, session: PortalSession, secure: boolean): void {
  const flags = `Path=/portal; SameSite=Strict${secure ? '; Secure' : ''}`;
  reply.header('Set-Cookie', [`${SESSION_COOKIE}=${session.token}; ${flags}; HttpOnly`, `${CSRF_COOKIE}=${session.csrfToken}; ${flags}`]);
}

/** Ends the cookies and starts a fresh anonymous CSRF value (for sign-in on the same page). */
export function clearSessionCookies(reply: FastifyReply, anonymousCsrf: string, secure: boolean): void {
  const flags = `Path=/portal; SameSite=Strict${secure ? '; Secure' : ''}`;
  reply.header('Set-Cookie', [`${SESSION_COOKIE}=; ${flags}; HttpOnly; Max-Age=0`, `${CSRF_COOKIE}=${anonymousCsrf}; ${flags}`]);
}

export function setAnonymousCsrfCookie(reply: FastifyReply, token: string, secure: boolean): void {
  reply.header('Set-Cookie', `${CSRF_COOKIE}=${token}; Path=/portal; SameSite=Strict${secure ? '; Secure' : ''}`);
}

export function registerPortalGuard(api: FastifyInstance, ctx: AppContext): void {
  api.decorateRequest('portalSession', null);
  api.addHook('onRequest', async (request) => {
    const config = request.routeOptions.config;
    const cookies = parseCookies(request.headers.cookie);
    const session = await ctx.accounts.authenticateSession(cookies[SESSION_COOKIE]);
    request.portalSession = session;
    if (!session && !config.portalPublic) throw new ApiError('not_authenticated');

    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const presented = headerValue(request, CSRF_HEADER);
      const cookie = cookies[CSRF_COOKIE];
      const doubleSubmitted = presented !== undefined && cookie !== undefined && presented.length > 0 && safeEqual(presented, cookie);
      if (!doubleSubmitted || (session && !ctx.accounts.csrfValid(session, presented))) throw new ApiError('invalid_csrf_token');
    }

    if (config.permission && (!session || !can(session.user.role, config.permission))) {
      throw new ApiError('forbidden', `Your role (${session?.user.role ?? 'none'}) does not allow this action.`);
    }
  });
}

/** The session of a guarded route (the guard has already refused requests without one). */
export function sessionOf(request: FastifyRequest): PortalSession {
  if (!request.portalSession) throw new ApiError('not_authenticated');
  return request.portalSession;
}

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** Cookie header -> map (our values are base64url: no decoding needed; first occurrence wins). */
export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (!(name in out)) out[name] = part.slice(eq + 1).trim();
  }
  return out;
}

/** `?page=2&page_size=25` -> limit/offset; query values are strings (no coercion in this API). */
export function paging(query: { page?: string; page_size?: string }, defaultSize = 25): { page: number; pageSize: number; limit: number; offset: number } {
  const page = Math.max(1, Math.min(Number(query.page ?? '1') || 1, 100_000));
  const pageSize = Math.max(1, Math.min(Number(query.page_size ?? String(defaultSize)) || defaultSize, 100));
  return { page, pageSize, limit: pageSize, offset: (page - 1) * pageSize };
}

/** Query-string schema pieces: strings only (Ajv does not coerce here). */
export const PAGE_QUERY = {
  page: { type: 'string', pattern: '^[1-9][0-9]{0,5}$' },
  page_size: { type: 'string', pattern: '^[1-9][0-9]?$|^100$' },
} as const;

/**
 * `expected_version` of an edit of a row that starts at version 1 (a webhook endpoint, a dealer):
 * the version the editor loaded; an edit of one that moved on since is 409. At most one less than
 * the largest integer column value, so the bumped version still fits.
 */
export const EXPECTED_VERSION = { type: 'integer', minimum: 1, maximum: 2_147_483_646 } as const;

/**
 * An edit must change something besides `expected_version` (`fields` names what it may change).
 * Checked here rather than as the body schema's minProperties, which Ajv checks before `required`:
 * a body without expected_version is told so, not that it lacks a field.
 */
export function requireSomeChange(patch: object, fields: string): void {
  if (Object.keys(patch).length === 0) throw new ApiError('invalid_request', `The request body must give at least one of ${fields} besides expected_version.`);
}
