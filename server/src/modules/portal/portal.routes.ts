/**
 * The lender portal at /portal: the JSON API the web app calls (/portal/api/*) and the web app
 * itself (static files, portal-static.ts). One encapsulated plugin, like the hosted verification
 * pages: its guard (session, CSRF, role: portal-http.ts) and headers exist here only, and the
 * public /v1 API is untouched. Every route is hidden from the public OpenAPI document: these are
 * not API endpoints (interface.md, What the service does, 7); docs/portal.md describes them.
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import { registerApiKeysRoutes } from './api-keys.routes.js';
import { registerAuthRoutes } from './auth.routes.js';
import { registerDealersRoutes } from './dealers.routes.js';
import { cookieSettings, registerPortalGuard } from './portal-http.js';
import { PORTAL_DIST_DIR, registerPortalStatic } from './portal-static.js';
import { registerPolicyRoutes } from './policy.routes.js';
import { registerSandboxConsumersRoutes } from './sandbox-consumers.routes.js';
import { registerUsersRoutes } from './users.routes.js';
import { registerWebhooksRoutes } from './webhooks.routes.js';
import { registerDecisionsRoutes } from './decisions.routes.js';
import { registerDashboardRoutes } from './dashboard.routes.js';
import { registerReferralsRoutes } from './referrals.routes.js';
import { registerVerificationReviewRoutes } from './verification-review.routes.js';
import { registerNoticesRoutes } from './notices.routes.js';

export async function registerPortal(app: FastifyInstance, ctx: AppContext, options: { distDir?: string } = {}): Promise<void> {
  const { secure } = cookieSettings(ctx);
  await app.register(async (portal) => {
    await portal.register(
      async (api) => {
        api.addHook('onSend', async (_request, reply, payload) => {
          reply.headers({
            'Cache-Control': 'no-store',
            'X-Content-Type-Options': 'nosniff',
            'X-Frame-Options': 'DENY',
            'Referrer-Policy': 'same-origin',
            'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
            // Strict-Transport-Security: on every response over HTTPS (http/transport-security.ts).
          });
          return payload;
        });
        registerPortalGuard(api, ctx);
        registerAuthRoutes(api, ctx, secure);
        registerUsersRoutes(api, ctx);
        registerApiKeysRoutes(api, ctx);
        registerWebhooksRoutes(api, ctx);
        registerSandboxConsumersRoutes(api, ctx);
        registerDealersRoutes(api, ctx);
        registerDecisionsRoutes(api, ctx);
        registerDashboardRoutes(api, ctx);
        registerPolicyRoutes(api, ctx);
        registerReferralsRoutes(api, ctx);
        registerVerificationReviewRoutes(api, ctx);
        registerNoticesRoutes(api, ctx);
      },
      { prefix: '/portal/api' },
    );
    registerPortalStatic(portal, options.distDir ?? PORTAL_DIST_DIR);
  });
}
