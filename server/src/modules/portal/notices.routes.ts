/**
 * Adverse-action notices in the portal (docs/portal.md, "Adverse-action notices"; ADR 0047):
 * the tenant's notice settings (everyone reads them, admins set them), and one decision's notice.
 * Making a notice is a POST: it reveals the applicant's name and address and is recorded as such
 * (notices.service.ts), like the referral queue's reveal.
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import type { Environment } from '../../config/config.js';
import { NOTICE_SETTING_LIMITS, type NoticeSettingsView } from '../notices/notices.service.js';
import type { NoticeSettings } from '../notices/adverse-action-notice.js';
import { sessionOf } from './portal-http.js';
import { actorOf } from './referrals.routes.js';

const environment = { type: 'string', enum: ['sandbox', 'live'] } as const;
const decisionParams = { type: 'object', required: ['environment', 'id'], properties: { environment, id: { type: 'string', format: 'uuid' } } } as const;
const text = (maxLength: number) => ({ type: 'string', maxLength }) as const;
const optionalText = (maxLength: number) => ({ type: ['string', 'null'], maxLength }) as const;

const SETTINGS_BODY = {
  type: 'object',
  additionalProperties: false,
  required: ['expected_version', 'creditor_name', 'creditor_address', 'agency'],
  properties: {
    /** The settings' version the admin loaded (0 when none were saved): a save of older settings is 409. */
    expected_version: { type: 'integer', minimum: 0, maximum: 2_147_483_646 },
    creditor_name: text(NOTICE_SETTING_LIMITS.name),
    creditor_address: text(NOTICE_SETTING_LIMITS.address),
    creditor_phone: optionalText(NOTICE_SETTING_LIMITS.phone),
    agency: text(NOTICE_SETTING_LIMITS.address),
    cra_name: optionalText(NOTICE_SETTING_LIMITS.name),
    cra_address: optionalText(NOTICE_SETTING_LIMITS.address),
    cra_phone: optionalText(NOTICE_SETTING_LIMITS.phone),
  },
} as const;

function presentSettings(s: NoticeSettingsView | null) {
  return { settings: s && { ...s, updated_at: s.updated_at.toISOString() } };
}

export function registerNoticesRoutes(api: FastifyInstance, ctx: AppContext): void {
  api.get('/settings/notices', { schema: { hide: true }, config: { permission: 'notices:read' } }, async (request) => presentSettings(await ctx.notices.getSettings(sessionOf(request).tenantId)));

  api.put<{ Body: NoticeSettings & { expected_version: number } }>('/settings/notices', { schema: { hide: true, body: SETTINGS_BODY }, config: { permission: 'notices:write' } }, async (request) => {
    const session = sessionOf(request);
    const { expected_version: expectedVersion, ...settings } = request.body;
    return presentSettings(await ctx.notices.putSettings(session.tenantId, session.user.id, settings, expectedVersion));
  });

  api.post<{ Params: { environment: Environment; id: string } }>(
    '/decisions/:environment/:id/adverse-action-notice',
    { schema: { hide: true, params: decisionParams }, config: { permission: 'pii:reveal' } },
    async (request) => ({
      notice: await ctx.notices.noticeFor({ tenantId: sessionOf(request).tenantId, environment: request.params.environment }, request.params.id, actorOf(request)),
    }),
  );
}
