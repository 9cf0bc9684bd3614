/**
 * The isolation matrix (issue 11, item 4): EVERY route the app declares, enumerated from Fastify's
 * onRoute hook, against every kind of caller that must be refused, on SQLite and PostgreSQL.
 *
 * A route the table below does not cover fails the first test: a new route must say how it is
 * probed and what guards it. Each probe then gets the shared checks of support/security-checks.ts:
 *
 *   /v1         no key, malformed keys, an unknown key of the right shape, a revoked key and a key
 *               whose prefix names the other environment: 401 invalid_api_key. Tenant B's key and
 *               A's key of the other environment against A's resource: exactly the answer for a
 *               random id (404 not_found, or the 422 an unknown consumer/dealer id gets), and no A
 *               id, PII or secret in the body. A's own key reads it (so the id is real).
 *   /portal/api no session and an expired session: 401; a state change without the CSRF token or
 *               with another session's: 403 invalid_csrf_token; every role the route's permission
 *               (permissions.ts) excludes: 403 forbidden; B's admin, and A's admin through the
 *               other environment's path: exactly the answer for a random id. Roles it allows are
 *               let through (not 401/403).
 *   /verify     a random token is 404; a form post without its cookie-bound CSRF value, or with the
 *               value of another token's page: 403.
 *   public      health, OpenAPI, docs, the portal's static files: served without credentials and
 *               carrying none of A's ids or secrets.
 *
 * Every refused request is followed by a byte-for-byte comparison of every table: nothing written.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { LightMyRequestResponse, RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { can, type Permission } from '../../../src/modules/portal/permissions.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import type { PortalClient } from '../../support/portal-client.js';
import { changedTables, leaksOf, outcomeOf, snapshotDatabase, type Outcome } from '../../support/security-checks.js';
import { buildSecurityFixture, multipart, ROLE_NAMES, verifyForm, type ResourceIds, type SecurityFixture } from '../../support/security-fixture.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';

type Env = 'sandbox' | 'live';
type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

interface Probe {
  /** What A's resource this is, for failure messages. */
  label: string;
  env: Env;
  method: Method;
  url: string;
  body?: unknown;
  /** A's ids inside url/body: the "missing" twin replaces each with a random UUID. */
  ids?: string[];
  /** Status A's own credentials get for this probe (checked only for reads, which write nothing). */
  owner?: number;
}

type RouteCase =
  | { kind: 'v1'; probes: (ids: ResourceIds) => Probe[] }
  | { kind: 'portal'; permission: Permission; probes: (ids: ResourceIds, fx: SecurityFixture) => Probe[] }
  | { kind: 'portal-public'; probe: Probe }
  /** Any signed-in role (sign-out): refused without a live session or its CSRF token. */
  | { kind: 'portal-signed-in'; probe: Probe }
  | { kind: 'hosted'; probe: (ids: ResourceIds) => Probe }
  | { kind: 'public'; url: string };

const ENVS: Env[] = ['sandbox', 'live'];
const txn = (amount: string) => ({ amount, currency: 'USD', merchant_name: 'Acme Outdoor', merchant_category: 'sporting_goods' });
const get = (label: string, env: Env, url: string, ids: string[] = [], owner = 200): Probe => ({ label, env, method: 'GET', url, ids, owner });
const post = (label: string, env: Env, url: string, body: unknown = {}, ids: string[] = []): Probe => ({ label, env, method: 'POST', url, body, ids });
const perEnv = (make: (env: Env) => Probe): Probe[] => ENVS.map(make);
const comingSoon = (product: string): Record<string, RouteCase> => ({
  [`POST /v1/decisions/${product}`]: { kind: 'v1', probes: () => perEnv((env) => post(`${product} create`, env, `/v1/decisions/${product}`, {})) },
  [`GET /v1/decisions/${product}/:decision_id`]: { kind: 'v1', probes: (ids) => [get(`${product} poll of a BNPL id`, 'sandbox', `/v1/decisions/${product}/${ids.decisions.bnpl}`, [ids.decisions.bnpl], 404)] },
});
const AUTO_LOAN_BODY = (consumer: string, dealer: string) => ({
  consumer: { consumer_id: consumer }, channel: 'indirect', dealer: { dealer_id: dealer, markup_rate_pct: '0.50' },
  vehicle: { vin: '1HGCM8262RA004352', year: 2024, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00' },
  loan: { amount: '16000.00', down_payment: '2000.00', trade_in_value: '1000.00', term_months: 60, currency: 'USD' },
});

/** Every route of the app and how it is probed. Keys are `METHOD url` exactly as declared. */
const ROUTES: Record<string, RouteCase> = {
  // ---- public
  'GET /healthz': { kind: 'public', url: '/healthz' },
  'GET /readyz': { kind: 'public', url: '/readyz' },
  'GET /v1/openapi.json': { kind: 'public', url: '/v1/openapi.json' },
  'GET /docs': { kind: 'public', url: '/docs' },
  'GET /docs/*': { kind: 'public', url: '/docs/webhooks' },
  'GET /portal': { kind: 'public', url: '/portal' },
  'GET /portal/*': { kind: 'public', url: '/portal/sandbox/api-keys' },
  'GET /verify/assets/verify.css': { kind: 'public', url: '/verify/assets/verify.css' },

  // ---- /v1
  'POST /v1/decisions/bnpl': {
    kind: 'v1',
    probes: (ids) => [
      post('BNPL create for A\'s sandbox consumer', 'sandbox', '/v1/decisions/bnpl', { consumer: { consumer_id: ids.consumers.soft }, transaction: txn('60.00') }, [ids.consumers.soft]),
      post('BNPL create for A\'s live consumer', 'live', '/v1/decisions/bnpl', { consumer: { consumer_id: ids.consumers.live }, transaction: txn('60.00') }, [ids.consumers.live]),
    ],
  },
  'GET /v1/decisions/bnpl/:decision_id': {
    kind: 'v1',
    probes: (ids) => [
      get('approved BNPL decision', 'sandbox', `/v1/decisions/bnpl/${ids.decisions.bnpl}`, [ids.decisions.bnpl]),
      get('pending decision', 'sandbox', `/v1/decisions/bnpl/${ids.decisions.pending}`, [ids.decisions.pending]),
      get('referred decision', 'sandbox', `/v1/decisions/bnpl/${ids.decisions.referred}`, [ids.decisions.referred]),
      get('hard-tier decision with a document', 'sandbox', `/v1/decisions/bnpl/${ids.decisions.hard}`, [ids.decisions.hard]),
      get('live decision', 'live', `/v1/decisions/bnpl/${ids.decisions.live}`, [ids.decisions.live]),
    ],
  },
  'POST /v1/decisions/auto-loan': {
    kind: 'v1',
    probes: (ids) => [post('auto loan through A\'s dealer', 'sandbox', '/v1/decisions/auto-loan', AUTO_LOAN_BODY(ids.consumers.soft, ids.dealers.sandbox), [ids.consumers.soft, ids.dealers.sandbox])],
  },
  'GET /v1/decisions/auto-loan/:decision_id': { kind: 'v1', probes: (ids) => [get('auto-loan decision', 'sandbox', `/v1/decisions/auto-loan/${ids.decisions.autoLoan}`, [ids.decisions.autoLoan])] },
  // The notice of A's declines (200, with A's notice settings in it).
  'GET /v1/decisions/bnpl/:decision_id/adverse-action-notice': {
    kind: 'v1',
    probes: (ids) => [get('declined BNPL decision\'s notice', 'sandbox', `/v1/decisions/bnpl/${ids.decisions.declined}/adverse-action-notice`, [ids.decisions.declined])],
  },
  'GET /v1/decisions/auto-loan/:decision_id/adverse-action-notice': {
    kind: 'v1',
    probes: (ids) => [get('declined auto loan\'s notice', 'sandbox', `/v1/decisions/auto-loan/${ids.decisions.autoLoanDeclined}/adverse-action-notice`, [ids.decisions.autoLoanDeclined])],
  },
  ...comingSoon('mortgage'),
  ...comingSoon('personal-loan'),
  ...comingSoon('credit-card'),
  'POST /v1/sandbox/decisions/:decision_id/verification': {
    kind: 'v1',
    probes: (ids) => [post('sandbox helper on A\'s pending decision', 'sandbox', `/v1/sandbox/decisions/${ids.decisions.pending}/verification`, { result: 'pass' }, [ids.decisions.pending])],
  },
  'GET /v1/events': { kind: 'v1', probes: () => perEnv((env) => get('event history', env, '/v1/events')) },
  'GET /v1/events/:event_id': { kind: 'v1', probes: (ids) => perEnv((env) => get(`${env} event`, env, `/v1/events/${ids.events[env]}`, [ids.events[env]])) },

  // ---- hosted pages (the token is the capability)
  'GET /verify/:token': { kind: 'hosted', probe: (ids) => get('verification page', 'sandbox', `/verify/${ids.verificationToken}`) },
  'POST /verify/:token/send-code': { kind: 'hosted', probe: (ids) => post('send a code', 'sandbox', `/verify/${ids.verificationToken}/send-code`) },
  'POST /verify/:token/code': { kind: 'hosted', probe: (ids) => post('enter a code', 'sandbox', `/verify/${ids.verificationToken}/code`, { code: '000000' }) },
  'POST /verify/:token/identity': { kind: 'hosted', probe: (ids) => post('confirm identity', 'sandbox', `/verify/${ids.verificationToken}/identity`, { ssn_last4: '5820', dob: '1980-01-01' }) },
  'POST /verify/:token/document': { kind: 'hosted', probe: (ids) => post('upload an ID document', 'sandbox', `/verify/${ids.verificationToken}/document`) },
  'POST /verify/:token/documents': { kind: 'hosted', probe: (ids) => post('answer a document request', 'sandbox', `/verify/${ids.documentRequestToken}/documents`) },

  // ---- portal: open without a session (CSRF still applies)
  'GET /portal/api/session': { kind: 'portal-public', probe: get('session probe', 'sandbox', '/portal/api/session') },
  'POST /portal/api/signup': { kind: 'portal-public', probe: post('sign-up', 'sandbox', '/portal/api/signup', { company_name: 'Csrf Co', name: 'Nobody', email: 'csrf.nobody@lender.example.com', password: 'correct horse battery' }) },
  'POST /portal/api/login': { kind: 'portal-public', probe: post('sign-in', 'sandbox', '/portal/api/login', { email: 'csrf.nobody@lender.example.com', password: 'correct horse battery' }) },
  'POST /portal/api/logout': { kind: 'portal-signed-in', probe: post('sign-out', 'sandbox', '/portal/api/logout') },
  'POST /portal/api/account/password': {
    kind: 'portal-signed-in',
    probe: post('change one\'s password', 'sandbox', '/portal/api/account/password', { current_password: 'not the password at all', new_password: 'another long passphrase' }),
  },
  'POST /portal/api/password-reset-links/lookup': { kind: 'portal-public', probe: post('reset link lookup', 'sandbox', '/portal/api/password-reset-links/lookup', { token: 'A'.repeat(43) }) },
  'POST /portal/api/password-reset-links/accept': {
    kind: 'portal-public',
    probe: post('reset link use', 'sandbox', '/portal/api/password-reset-links/accept', { token: 'A'.repeat(43), password: 'another long passphrase' }),
  },
  'POST /portal/api/invitation-links/lookup': { kind: 'portal-public', probe: post('invitation lookup', 'sandbox', '/portal/api/invitation-links/lookup', { token: 'A'.repeat(43) }) },
  'POST /portal/api/invitation-links/accept': {
    kind: 'portal-public',
    probe: post('invitation accept', 'sandbox', '/portal/api/invitation-links/accept', { token: 'A'.repeat(43), name: 'Nobody', password: 'another long passphrase' }),
  },

  // ---- portal: people
  'GET /portal/api/users': { kind: 'portal', permission: 'users:read', probes: () => [get('users', 'sandbox', '/portal/api/users')] },
  'PATCH /portal/api/users/:id': {
    kind: 'portal', permission: 'users:write',
    probes: (_ids, fx) => [{ label: 'change A\'s developer\'s role', env: 'sandbox', method: 'PATCH', url: `/portal/api/users/${fx.a.userIds.developer}`, body: { role: 'viewer' }, ids: [fx.a.userIds.developer] }],
  },
  'DELETE /portal/api/users/:id': {
    kind: 'portal', permission: 'users:write',
    probes: (_ids, fx) => [{ label: 'remove A\'s viewer', env: 'sandbox', method: 'DELETE', url: `/portal/api/users/${fx.a.userIds.viewer}`, ids: [fx.a.userIds.viewer] }],
  },
  'POST /portal/api/users/:id/password-reset': {
    kind: 'portal', permission: 'users:write',
    probes: (_ids, fx) => [{ label: 'a reset link for A\'s developer', env: 'sandbox', method: 'POST', url: `/portal/api/users/${fx.a.userIds.developer}/password-reset`, body: {}, ids: [fx.a.userIds.developer] }],
  },
  'GET /portal/api/invitations': { kind: 'portal', permission: 'users:read', probes: () => [get('invitations', 'sandbox', '/portal/api/invitations')] },
  'POST /portal/api/invitations': { kind: 'portal', permission: 'users:write', probes: () => [post('invite', 'sandbox', '/portal/api/invitations', { email: 'matrix.invitee@lender.example.com', role: 'viewer' })] },
  'DELETE /portal/api/invitations/:id': {
    kind: 'portal', permission: 'users:write',
    probes: (ids) => [{ label: 'revoke A\'s invitation', env: 'sandbox', method: 'DELETE', url: `/portal/api/invitations/${ids.invitation}`, ids: [ids.invitation] }],
  },

  // ---- portal: API keys
  'GET /portal/api/api-keys': { kind: 'portal', permission: 'keys:read', probes: () => [get('API keys', 'sandbox', '/portal/api/api-keys')] },
  'POST /portal/api/api-keys': { kind: 'portal', permission: 'keys:write', probes: () => perEnv((env) => post('generate a key', env, '/portal/api/api-keys', { environment: env })) },
  'POST /portal/api/api-keys/:id/revoke': {
    kind: 'portal', permission: 'keys:write',
    probes: (_ids, fx) => [post('revoke A\'s sandbox key', 'sandbox', `/portal/api/api-keys/${fx.a.keys.sandboxId}/revoke`, {}, [fx.a.keys.sandboxId])],
  },

  // ---- portal: webhooks
  'GET /portal/api/webhooks/event-types': { kind: 'portal', permission: 'webhooks:read', probes: () => [get('event types', 'sandbox', '/portal/api/webhooks/event-types')] },
  'GET /portal/api/webhooks/:environment/endpoints': { kind: 'portal', permission: 'webhooks:read', probes: () => perEnv((env) => get('endpoints', env, `/portal/api/webhooks/${env}/endpoints`)) },
  'POST /portal/api/webhooks/:environment/endpoints': {
    kind: 'portal', permission: 'webhooks:write',
    probes: () => perEnv((env) => post('create an endpoint', env, `/portal/api/webhooks/${env}/endpoints`, { url: 'https://127.0.0.1:9/matrix' })),
  },
  'GET /portal/api/webhooks/:environment/endpoints/:id': {
    kind: 'portal', permission: 'webhooks:read',
    probes: (ids) => perEnv((env) => get('an endpoint', env, `/portal/api/webhooks/${env}/endpoints/${ids.endpoints[env]}`, [ids.endpoints[env]])),
  },
  'PATCH /portal/api/webhooks/:environment/endpoints/:id': {
    kind: 'portal', permission: 'webhooks:write',
    probes: (ids) => perEnv((env) => ({ label: 'edit an endpoint', env, method: 'PATCH', url: `/portal/api/webhooks/${env}/endpoints/${ids.endpoints[env]}`, body: { expected_version: 1, description: 'taken over' }, ids: [ids.endpoints[env]] })),
  },
  'DELETE /portal/api/webhooks/:environment/endpoints/:id': {
    kind: 'portal', permission: 'webhooks:write',
    probes: (ids) => perEnv((env) => ({ label: 'delete an endpoint', env, method: 'DELETE', url: `/portal/api/webhooks/${env}/endpoints/${ids.endpoints[env]}`, ids: [ids.endpoints[env]] })),
  },
  'POST /portal/api/webhooks/:environment/endpoints/:id/test': {
    kind: 'portal', permission: 'webhooks:write',
    probes: (ids) => perEnv((env) => post('send a test event', env, `/portal/api/webhooks/${env}/endpoints/${ids.endpoints[env]}/test`, {}, [ids.endpoints[env]])),
  },
  'POST /portal/api/webhooks/:environment/endpoints/:id/rotate-secret': {
    kind: 'portal', permission: 'webhooks:write',
    probes: (ids) => perEnv((env) => post('rotate a secret', env, `/portal/api/webhooks/${env}/endpoints/${ids.endpoints[env]}/rotate-secret`, { overlap_hours: 1 }, [ids.endpoints[env]])),
  },
  'POST /portal/api/webhooks/:environment/endpoints/:id/reenable': {
    kind: 'portal', permission: 'webhooks:write',
    probes: (ids) => perEnv((env) => post('re-enable', env, `/portal/api/webhooks/${env}/endpoints/${ids.endpoints[env]}/reenable`, {}, [ids.endpoints[env]])),
  },
  'POST /portal/api/webhooks/:environment/endpoints/:id/resend-failed': {
    kind: 'portal', permission: 'webhooks:write',
    probes: (ids) => perEnv((env) => post('resend failed', env, `/portal/api/webhooks/${env}/endpoints/${ids.endpoints[env]}/resend-failed`, { since: '2026-01-01T00:00:00Z' }, [ids.endpoints[env]])),
  },
  'GET /portal/api/webhooks/:environment/endpoints/:id/deliveries': {
    kind: 'portal', permission: 'webhooks:read',
    probes: (ids) => perEnv((env) => get('deliveries of an endpoint', env, `/portal/api/webhooks/${env}/endpoints/${ids.endpoints[env]}/deliveries`, [ids.endpoints[env]])),
  },
  'GET /portal/api/webhooks/:environment/deliveries/:deliveryId/attempts': {
    kind: 'portal', permission: 'webhooks:read',
    probes: (ids) => perEnv((env) => get('attempts of a delivery', env, `/portal/api/webhooks/${env}/deliveries/${ids.deliveries[env]}/attempts`, [ids.deliveries[env]])),
  },
  'POST /portal/api/webhooks/:environment/deliveries/:deliveryId/resend': {
    kind: 'portal', permission: 'webhooks:write',
    probes: (ids) => perEnv((env) => post('resend a delivery', env, `/portal/api/webhooks/${env}/deliveries/${ids.deliveries[env]}/resend`, {}, [ids.deliveries[env]])),
  },

  // ---- portal: sandbox consumers (sandbox only: a live consumer's id is as unknown as a random one)
  'GET /portal/api/sandbox/consumers': { kind: 'portal', permission: 'consumers:read', probes: () => [get('consumers', 'sandbox', '/portal/api/sandbox/consumers')] },
  'GET /portal/api/sandbox/consumers/:id': {
    kind: 'portal', permission: 'consumers:read',
    probes: (ids) => [get('seeded consumer', 'sandbox', `/portal/api/sandbox/consumers/${ids.consumers.soft}`, [ids.consumers.soft]), get('new consumer', 'sandbox', `/portal/api/sandbox/consumers/${ids.consumers.pending}`, [ids.consumers.pending]), get('live consumer on the sandbox page', 'live', `/portal/api/sandbox/consumers/${ids.consumers.live}`, [ids.consumers.live], 404)],
  },
  'GET /portal/api/sandbox/consumers/:id/applications': {
    kind: 'portal', permission: 'consumers:read',
    probes: (ids) => [get('a consumer\'s applications', 'sandbox', `/portal/api/sandbox/consumers/${ids.consumers.soft}/applications`, [ids.consumers.soft])],
  },
  'POST /portal/api/sandbox/consumers/:id/reset': {
    kind: 'portal', permission: 'consumers:reset',
    probes: (ids) => [post('reset a consumer', 'sandbox', `/portal/api/sandbox/consumers/${ids.consumers.soft}/reset`, {}, [ids.consumers.soft]), post('reset a live consumer', 'live', `/portal/api/sandbox/consumers/${ids.consumers.live}/reset`, {}, [ids.consumers.live])],
  },

  // ---- portal: dealers
  'GET /portal/api/dealers/:environment/dealers': { kind: 'portal', permission: 'dealers:read', probes: () => perEnv((env) => get('dealers', env, `/portal/api/dealers/${env}/dealers`)) },
  'POST /portal/api/dealers/:environment/dealers': { kind: 'portal', permission: 'dealers:write', probes: () => perEnv((env) => post('add a dealer', env, `/portal/api/dealers/${env}/dealers`, { name: 'Intruder Motors' })) },
  'GET /portal/api/dealers/:environment/dealers/:id': { kind: 'portal', permission: 'dealers:read', probes: (ids) => perEnv((env) => get('a dealer', env, `/portal/api/dealers/${env}/dealers/${ids.dealers[env]}`, [ids.dealers[env]])) },
  'PATCH /portal/api/dealers/:environment/dealers/:id': {
    kind: 'portal', permission: 'dealers:write',
    probes: (ids) => perEnv((env) => ({ label: 'edit a dealer', env, method: 'PATCH', url: `/portal/api/dealers/${env}/dealers/${ids.dealers[env]}`, body: { expected_version: 1, name: 'Renamed' }, ids: [ids.dealers[env]] })),
  },
  'POST /portal/api/dealers/:environment/dealers/:id/disable': { kind: 'portal', permission: 'dealers:write', probes: (ids) => perEnv((env) => post('disable a dealer', env, `/portal/api/dealers/${env}/dealers/${ids.dealers[env]}/disable`, {}, [ids.dealers[env]])) },
  'POST /portal/api/dealers/:environment/dealers/:id/enable': { kind: 'portal', permission: 'dealers:write', probes: (ids) => perEnv((env) => post('enable a dealer', env, `/portal/api/dealers/${env}/dealers/${ids.dealers[env]}/enable`, {}, [ids.dealers[env]])) },

  // ---- portal: decisions, dashboard
  'GET /portal/api/decisions/:environment': { kind: 'portal', permission: 'decisions:read', probes: () => perEnv((env) => get('decision explorer', env, `/portal/api/decisions/${env}`)) },
  'GET /portal/api/decisions/:environment/export.csv': { kind: 'portal', permission: 'decisions:read', probes: () => perEnv((env) => get('CSV export', env, `/portal/api/decisions/${env}/export.csv`)) },
  'GET /portal/api/decisions/:environment/:id': {
    kind: 'portal', permission: 'decisions:read',
    probes: (ids) => [
      ...(['bnpl', 'autoLoan', 'pending', 'referred', 'hard'] as const).map((k) => get(`${k} decision`, 'sandbox', `/portal/api/decisions/sandbox/${ids.decisions[k]}`, [ids.decisions[k]])),
      get('live decision', 'live', `/portal/api/decisions/live/${ids.decisions.live}`, [ids.decisions.live]),
    ],
  },
  'POST /portal/api/decisions/:environment/:id/adverse-action-notice': {
    kind: 'portal', permission: 'pii:reveal',
    probes: (ids) => [post('adverse-action notice of a declined decision', 'sandbox', `/portal/api/decisions/sandbox/${ids.decisions.declined}/adverse-action-notice`, {}, [ids.decisions.declined])],
  },
  'GET /portal/api/settings/notices': { kind: 'portal', permission: 'notices:read', probes: () => [get('notice settings', 'sandbox', '/portal/api/settings/notices')] },
  'PUT /portal/api/settings/notices': {
    kind: 'portal', permission: 'notices:write',
    probes: () => [{ label: 'notice settings', env: 'sandbox', method: 'PUT', url: '/portal/api/settings/notices', body: { expected_version: 1, creditor_name: 'Matrix Lending', creditor_address: '1 Main Street\nAustin, TX 78701', agency: 'Federal Trade Commission' } }],
  },
  'GET /portal/api/dashboard/:environment': { kind: 'portal', permission: 'dashboard:read', probes: () => perEnv((env) => get('dashboard', env, `/portal/api/dashboard/${env}`)) },

  // ---- portal: credit policy
  'GET /portal/api/policy/:environment': { kind: 'portal', permission: 'policy:read', probes: () => perEnv((env) => get('policy overview', env, `/portal/api/policy/${env}`)) },
  'GET /portal/api/policy/:environment/:product/versions': { kind: 'portal', permission: 'policy:read', probes: () => perEnv((env) => get('policy versions', env, `/portal/api/policy/${env}/bnpl/versions`)) },
  'POST /portal/api/policy/:environment/:product/versions': { kind: 'portal', permission: 'policy:write', probes: () => [post('create a draft', 'sandbox', '/portal/api/policy/sandbox/bnpl/versions', { tables: {} })] },
  'GET /portal/api/policy/:environment/:product/versions/:id': {
    kind: 'portal', permission: 'policy:read',
    probes: (ids) => [get('a policy version', 'sandbox', `/portal/api/policy/sandbox/bnpl/versions/${ids.policyVersion}`, [ids.policyVersion])],
  },
  'POST /portal/api/policy/:environment/:product/versions/:id/test': {
    kind: 'portal', permission: 'policy:write',
    probes: (ids) => [post('test a draft', 'sandbox', `/portal/api/policy/sandbox/bnpl/versions/${ids.policyVersion}/test`, {}, [ids.policyVersion])],
  },
  'POST /portal/api/policy/:environment/:product/versions/:id/promote': {
    kind: 'portal', permission: 'policy:write',
    probes: (ids) => [post('promote a draft', 'sandbox', `/portal/api/policy/sandbox/bnpl/versions/${ids.policyVersion}/promote`, {}, [ids.policyVersion])],
  },
  'POST /portal/api/policy/:environment/:product/validate': { kind: 'portal', permission: 'policy:write', probes: () => [post('validate a draft', 'sandbox', '/portal/api/policy/sandbox/bnpl/validate', { tables: {} })] },
  'GET /portal/api/policy/:environment/:product/current': { kind: 'portal', permission: 'policy:read', probes: () => perEnv((env) => get('current policy', env, `/portal/api/policy/${env}/auto_loan/current`)) },

  // ---- portal: the underwriting workplace
  'GET /portal/api/referrals/catalogue': { kind: 'portal', permission: 'referrals:read', probes: () => [get('catalogue', 'sandbox', '/portal/api/referrals/catalogue')] },
  'GET /portal/api/referrals/:environment': { kind: 'portal', permission: 'referrals:read', probes: () => perEnv((env) => get('referral queue', env, `/portal/api/referrals/${env}`)) },
  'GET /portal/api/referrals/:environment/:id': { kind: 'portal', permission: 'referrals:read', probes: (ids) => [get('a referral', 'sandbox', `/portal/api/referrals/sandbox/${ids.decisions.referred}`, [ids.decisions.referred])] },
  'POST /portal/api/referrals/:environment/:id/reveal': { kind: 'portal', permission: 'pii:reveal', probes: (ids) => [post('reveal the applicant', 'sandbox', `/portal/api/referrals/sandbox/${ids.decisions.referred}/reveal`, {}, [ids.decisions.referred])] },
  'POST /portal/api/referrals/:environment/:id/approve': {
    kind: 'portal', permission: 'referrals:act',
    probes: (ids) => [post('approve', 'sandbox', `/portal/api/referrals/sandbox/${ids.decisions.referred}/approve`, { expected_version: 2, amount: '100.00', plan: 'pay_in_4' }, [ids.decisions.referred])],
  },
  'POST /portal/api/referrals/:environment/:id/decline': {
    kind: 'portal', permission: 'referrals:act',
    probes: (ids) => [post('decline', 'sandbox', `/portal/api/referrals/sandbox/${ids.decisions.referred}/decline`, { expected_version: 2, reason_codes: ['AA-01'] }, [ids.decisions.referred])],
  },
  'POST /portal/api/referrals/:environment/:id/document-requests': {
    kind: 'portal', permission: 'referrals:act',
    probes: (ids) => [post('request documents', 'sandbox', `/portal/api/referrals/sandbox/${ids.decisions.referred}/document-requests`, { expected_version: 2, document_types: ['proof_of_address'] }, [ids.decisions.referred])],
  },
  'POST /portal/api/referrals/:environment/:id/conditions': {
    kind: 'portal', permission: 'referrals:act',
    probes: (ids) => [post('add a condition', 'sandbox', `/portal/api/referrals/sandbox/${ids.decisions.referred}/conditions`, { expected_version: 2, code: 'proof_of_income' }, [ids.decisions.referred])],
  },
  'GET /portal/api/verification-review/:environment': { kind: 'portal', permission: 'referrals:read', probes: () => perEnv((env) => get('verification review queue', env, `/portal/api/verification-review/${env}`)) },
  'GET /portal/api/verification-review/:environment/documents/:documentId': {
    kind: 'portal', permission: 'documents:read',
    probes: (ids) => [get('an uploaded ID document', 'sandbox', `/portal/api/verification-review/sandbox/documents/${ids.document}`, [ids.document])],
  },
  'POST /portal/api/verification-review/:environment/:decisionId/review': {
    kind: 'portal', permission: 'referrals:act',
    probes: (ids) => [post('review a verification', 'sandbox', `/portal/api/verification-review/sandbox/${ids.decisions.referred}/review`, { result: 'accepted', expected_version: 1 }, [ids.decisions.referred])],
  },
};

/** Route config of each declared route, keyed like ROUTES. */
interface Declared {
  key: string;
  permission: Permission | undefined;
  portalPublic: boolean;
}

const other = (env: Env): Env => (env === 'sandbox' ? 'live' : 'sandbox');
let address = 0;
/** A fresh client address per anonymous request: failed authentications are limited per address. */
const nextAddress = () => `10.201.${Math.floor(++address / 250) % 250}.${(address % 250) + 1}`;

describe.each(await dialectMatrix())('isolation matrix [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  let fx: SecurityFixture;
  const declared: Declared[] = [];
  const clock = new ManualClock('2026-05-04T08:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, {
      clock,
      env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' },
      build: {
        onRoute: (route: RouteOptions) => {
          // The 405 companions errors.ts adds are method arrays; HEAD mirrors GET.
          if (Array.isArray(route.method) || route.method === 'HEAD') return;
          const config = (route.config ?? {}) as { permission?: Permission; portalPublic?: boolean };
          declared.push({ key: `${route.method} ${route.url}`, permission: config.permission, portalPublic: config.portalPublic === true });
        },
      },
    });
    fx = await buildSecurityFixture(t, clock);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  /** Everything of A's that must never appear in an answer to someone else. */
  const secretsOfA = () => [...[fx.a.keys.sandbox, fx.a.keys.live, fx.a.keys.revoked], ...fx.sensitive.signingSecrets, ...fx.sensitive.verificationTokens, ...fx.sensitive.ssnLast4.filter((s) => s !== '1111').map((s) => `"${s}"`), ...fx.sensitive.dobs, ...fx.sensitive.phones, ...fx.sensitive.streets];
  const idsOfA = (env?: Env): string[] => {
    const ids = fx.a.ids;
    const sandbox = [ids.consumers.soft, ids.consumers.pending, ids.decisions.bnpl, ids.decisions.autoLoan, ids.decisions.pending, ids.decisions.referred, ids.decisions.hard, ids.decisions.declined, ids.decisions.autoLoanDeclined, ids.endpoints.sandbox, ids.deliveries.sandbox, ids.events.sandbox, ids.dealers.sandbox, ids.policyVersion, ids.document];
    const live = [ids.consumers.live, ids.decisions.live, ids.endpoints.live, ids.deliveries.live, ids.events.live, ids.dealers.live];
    const tenant = [fx.a.tenantId, ids.invitation, ...Object.values(fx.a.userIds), fx.a.keys.sandboxId, fx.a.keys.revokedId];
    if (env === 'sandbox') return sandbox;
    if (env === 'live') return live;
    return [...sandbox, ...live, ...tenant];
  };

  /** The probe with each of A's ids replaced by a fresh random UUID. */
  function missingTwin(p: Probe): { probe: Probe; replaced: string[] } {
    let url = p.url;
    let body = p.body === undefined ? undefined : JSON.stringify(p.body);
    const replaced: string[] = [];
    for (const id of p.ids ?? []) {
      const fresh = randomUUID();
      replaced.push(fresh);
      url = url.split(id).join(fresh);
      if (body !== undefined) body = body.split(id).join(fresh);
    }
    return { probe: { ...p, url, ...(body === undefined ? {} : { body: JSON.parse(body) as unknown }) }, replaced };
  }

  const inject = (p: Probe, headers: Record<string, string> = {}) =>
    t.app.inject({
      method: p.method,
      url: p.url,
      remoteAddress: nextAddress(),
      headers: { ...headers, ...(p.body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(p.body === undefined ? {} : { payload: JSON.stringify(p.body) }),
    });
  const portal = async (client: PortalClient, p: Probe, csrf?: string | null): Promise<LightMyRequestResponse> =>
    (await client.request(p.method, p.url, p.body, { ...(csrf === undefined ? {} : { csrf }), ip: nextAddress() })).raw;

  /** Runs `refusals`, then asserts every table is exactly as before. */
  async function withoutWrites(what: string, refusals: () => Promise<void>): Promise<void> {
    const before = await snapshotDatabase(t.ctx);
    await refusals();
    expect(changedTables(before, await snapshotDatabase(t.ctx)), `${what}: a refused request wrote to these tables`).toEqual([]);
  }

  /** The answer to A's resource and to a random id, for the same caller, must be the same. */
  async function expectSameAsMissing(what: string, p: Probe, send: (p: Probe) => Promise<LightMyRequestResponse>, notVisible: string[], problems: string[]): Promise<Outcome> {
    const real = await send(p);
    const { probe: twin, replaced } = missingTwin(p);
    const missing = await send(twin);
    const strip = [...(p.ids ?? []), ...replaced];
    const a = outcomeOf(real, strip);
    const b = outcomeOf(missing, strip);
    if (JSON.stringify(a) !== JSON.stringify(b)) problems.push(`${what}: A's resource answers ${JSON.stringify(a)} but a random id answers ${JSON.stringify(b)}`);
    if (a.status === 403 || a.status < 400) problems.push(`${what}: ${a.status} ${real.body.slice(0, 200)} (must look like a missing resource)`);
    // A route-not-found message echoes the caller's own URL: the ids it sent are not a leak.
    const leaks = leaksOf(real.body, [...notVisible.filter((id) => !(p.ids ?? []).includes(id)), ...secretsOfA(), ...fx.emailsOfA]);
    if (leaks.length > 0) problems.push(`${what}: the answer shows ${leaks.join(', ')}`);
    return a;
  }

  it('covers every declared route, and nothing the app no longer declares', () => {
    const keys = declared.map((d) => d.key).sort();
    expect(keys.length).toBeGreaterThan(80);
    expect(keys.filter((k) => !(k in ROUTES)), 'routes missing from the isolation matrix: add each to ROUTES').toEqual([]);
    expect(Object.keys(ROUTES).filter((k) => !keys.includes(k)), 'matrix entries for routes that no longer exist').toEqual([]);
    // The matrix states each portal route's permission; the route must declare the same one.
    const wrong: string[] = [];
    for (const d of declared) {
      const c = ROUTES[d.key];
      if (c?.kind === 'portal' && (d.permission !== c.permission || d.portalPublic)) wrong.push(`${d.key}: declares ${String(d.permission)}${d.portalPublic ? ' (public)' : ''}, matrix expects ${c.permission}`);
      if (c?.kind === 'portal-public' && !d.portalPublic) wrong.push(`${d.key}: matrix expects a public portal route`);
      if (c?.kind === 'portal-signed-in' && (d.portalPublic || d.permission !== undefined)) wrong.push(`${d.key}: matrix expects a route for any signed-in role`);
      if (d.key.includes(' /portal/api/') && c?.kind !== 'portal' && c?.kind !== 'portal-public' && c?.kind !== 'portal-signed-in') wrong.push(`${d.key}: a portal API route must be in the portal part of the matrix`);
      if (d.key.includes(' /v1/') && c?.kind !== 'v1' && d.key !== 'GET /v1/openapi.json') wrong.push(`${d.key}: a /v1 route must be in the /v1 part of the matrix`);
    }
    expect(wrong).toEqual([]);
  });

  it('/v1: missing, malformed, unknown, revoked and wrong-prefix keys are 401; another tenant and the other environment see a random id\'s answer; nothing written', async () => {
    const problems: string[] = [];
    const unknownKey = `svc_test_${randomBytes(30).toString('base64url').replace(/[-_]/g, 'x').slice(0, 40)}`;
    const refusedKeys: Array<[string, Record<string, string>]> = [
      ['no key', {}],
      ['empty bearer', { authorization: 'Bearer ' }],
      ['basic scheme', { authorization: `Basic ${Buffer.from(`${fx.a.keys.sandbox}:`).toString('base64')}` }],
      ['malformed key', { authorization: 'Bearer svc_test_short' }],
      ['unknown key of the right shape', { authorization: `Bearer ${unknownKey}` }],
      ['revoked key', { authorization: `Bearer ${fx.a.keys.revoked}` }],
      ['sandbox key with the live prefix', { authorization: `Bearer ${fx.a.keys.sandbox.replace('svc_test_', 'svc_live_')}` }],
      ['live key with the sandbox prefix', { authorization: `Bearer ${fx.a.keys.live.replace('svc_live_', 'svc_test_')}` }],
    ];
    const keyOf = (tenant: 'a' | 'b', env: Env) => ({ authorization: `Bearer ${fx[tenant].keys[env]}` });
    let probes = 0;
    for (const [key, c] of Object.entries(ROUTES)) {
      if (c.kind !== 'v1') continue;
      for (const p of c.probes(fx.a.ids)) {
        probes++;
        const what = `${key} (${p.label})`;
        await withoutWrites(what, async () => {
          for (const [name, headers] of refusedKeys) {
            const r = await inject(p, headers);
            const o = outcomeOf(r);
            if (o.status !== 401 || o.error !== 'invalid_api_key') problems.push(`${what}, ${name}: ${o.status} ${r.body.slice(0, 160)}`);
          }
          if (p.ids && p.ids.length > 0) {
            await expectSameAsMissing(`${what}, tenant B's ${p.env} key`, p, (q) => inject(q, keyOf('b', p.env)), idsOfA(), problems);
            await expectSameAsMissing(`${what}, A's ${other(p.env)} key`, p, (q) => inject(q, keyOf('a', other(p.env))), idsOfA(p.env), problems);
          } else {
            // Lists: B and the other environment see none of A's (or this environment's) ids.
            for (const [name, r, hidden] of [
              ['tenant B', await inject(p, keyOf('b', p.env)), idsOfA()],
              [`A's ${other(p.env)} key`, await inject(p, keyOf('a', other(p.env))), idsOfA(p.env)],
            ] as const) {
              const leaks = leaksOf(r.body, name === 'tenant B' ? [...hidden, ...secretsOfA(), ...fx.emailsOfA] : hidden);
              if (leaks.length > 0) problems.push(`${what}, ${name}: shows ${leaks.join(', ')}`);
            }
          }
        });
        if (p.method === 'GET' && p.owner !== undefined) {
          const mine = await inject(p, keyOf('a', p.env));
          if (mine.statusCode !== p.owner) problems.push(`${what}: A's own ${p.env} key gets ${mine.statusCode}, expected ${p.owner}: ${mine.body.slice(0, 160)}`);
          if (p.url === '/v1/events' && p.owner === 200) {
            const listed = JSON.stringify((mine.json() as { data: Array<{ id: string }> }).data.map((e) => e.id));
            if (!listed.includes(fx.a.ids.events[p.env])) problems.push(`${what}: A's own list lacks its ${p.env} event (the leak check would prove nothing)`);
          }
        }
      }
    }
    expect(probes).toBeGreaterThan(15);
    expect(problems).toEqual([]);
  });

  it('portal API: no session, an expired session, missing or foreign CSRF and every role permissions.ts excludes are refused; B and the other environment see a random id\'s answer; nothing written', async () => {
    const problems: string[] = [];
    const byKey = new Map(declared.map((d) => [d.key, d]));
    let probes = 0;
    for (const [key, c] of Object.entries(ROUTES)) {
      if (c.kind !== 'portal') continue;
      expect(byKey.get(key)?.permission, key).toBe(c.permission);
      for (const p of c.probes(fx.a.ids, fx)) {
        probes++;
        const what = `${key} (${p.label})`;
        const admin = fx.a.sessions.admin;
        await withoutWrites(what, async () => {
          const anonymous = await inject(p, p.method === 'GET' ? {} : { 'x-csrf-token': admin.csrf, cookie: `cds_csrf=${admin.csrf}` });
          if (outcomeOf(anonymous).error !== 'not_authenticated' || anonymous.statusCode !== 401) problems.push(`${what}, no session: ${anonymous.statusCode} ${anonymous.body.slice(0, 120)}`);
          const expired = await portal(fx.expired, p);
          if (outcomeOf(expired).error !== 'not_authenticated') problems.push(`${what}, expired session: ${expired.statusCode} ${expired.body.slice(0, 120)}`);
          if (p.method !== 'GET') {
            for (const [name, csrf] of [['no CSRF token', null], ['another session\'s CSRF token', fx.b.sessions.admin.csrf], ['a made-up CSRF token', 'A'.repeat(43)]] as const) {
              const r = await portal(admin, p, csrf);
              if (outcomeOf(r).error !== 'invalid_csrf_token' || r.statusCode !== 403) problems.push(`${what}, ${name}: ${r.statusCode} ${r.body.slice(0, 120)}`);
            }
          }
          for (const role of ROLE_NAMES) {
            if (can(role, c.permission)) continue;
            const r = await portal(fx.a.sessions[role], p);
            const o = outcomeOf(r);
            if (r.statusCode !== 403 || o.error !== 'forbidden' || o.message !== `Your role (${role}) does not allow this action.`) problems.push(`${what}, ${role}: ${r.statusCode} ${r.body.slice(0, 120)}`);
          }
          if (p.ids && p.ids.length > 0) {
            await expectSameAsMissing(`${what}, tenant B's admin`, p, (q) => portal(fx.b.sessions.admin, q), idsOfA(), problems);
            const crossEnv = p.url.replace(`/${p.env}/`, `/${other(p.env)}/`);
            if (key.includes('/:environment')) await expectSameAsMissing(`${what}, A's admin through ${other(p.env)}`, { ...p, url: crossEnv }, (q) => portal(admin, q), idsOfA(p.env), problems);
          } else {
            const r = await portal(fx.b.sessions.admin, p.method === 'GET' ? p : { ...p, body: { matrix_unknown_field: true } });
            const leaks = leaksOf(r.body, [...idsOfA(), ...secretsOfA(), ...fx.emailsOfA]);
            if (leaks.length > 0) problems.push(`${what}, tenant B: shows ${leaks.join(', ')}`);
            if (p.url.includes(`/${p.env}`) && p.method === 'GET') {
              const crossEnv = await portal(admin, { ...p, url: p.url.replace(`/${p.env}`, `/${other(p.env)}`) });
              const leaks2 = leaksOf(crossEnv.body, idsOfA(p.env));
              if (leaks2.length > 0) problems.push(`${what}, A's admin through ${other(p.env)}: shows ${leaks2.join(', ')}`);
            }
          }
          // Allowed roles pass the guard. Random ids (or an unknown field) keep this free of writes.
          for (const role of ROLE_NAMES) {
            if (!can(role, c.permission)) continue;
            const twin = p.ids && p.ids.length > 0 ? missingTwin(p).probe : p.method === 'GET' ? p : { ...p, body: { matrix_unknown_field: true } };
            const r = await portal(fx.a.sessions[role], twin);
            if (r.statusCode === 401 || r.statusCode === 403) problems.push(`${what}, ${role} is allowed by permissions.ts but got ${r.statusCode} ${r.body.slice(0, 120)}`);
          }
        });
        if (p.method === 'GET' && p.owner !== undefined && p.ids && p.ids.length > 0) {
          const mine = await portal(fx.a.sessions.admin, p);
          if (mine.statusCode !== p.owner) problems.push(`${what}: A's admin gets ${mine.statusCode}, expected ${p.owner}: ${mine.body.slice(0, 160)}`);
        }
      }
    }
    expect(probes).toBeGreaterThan(60);
    expect(problems).toEqual([]);
  });

  it('portal API routes open without a session still need the CSRF token for a state change, and write nothing without it', async () => {
    const problems: string[] = [];
    for (const [key, c] of Object.entries(ROUTES)) {
      if (c.kind !== 'portal-public') continue;
      const p = c.probe;
      if (p.method === 'GET') {
        const r = await inject(p);
        if (r.statusCode !== 200 || (r.json() as { authenticated: boolean }).authenticated !== false) problems.push(`${key}: ${r.statusCode} ${r.body}`);
        continue;
      }
      await withoutWrites(key, async () => {
        for (const [name, headers] of [
          ['no token', {}],
          ['token without its cookie', { 'x-csrf-token': 'B'.repeat(43) }],
          ['token not matching its cookie', { 'x-csrf-token': 'B'.repeat(43), cookie: `cds_csrf=${'C'.repeat(43)}` }],
        ] as const) {
          const r = await inject(p, headers);
          if (r.statusCode !== 403 || outcomeOf(r).error !== 'invalid_csrf_token') problems.push(`${key}, ${name}: ${r.statusCode} ${r.body.slice(0, 120)}`);
        }
      });
    }
    expect(problems).toEqual([]);
  });

  it('sign-out and changing one\'s password need a live session and its CSRF token; refused, they end and change nothing', async () => {
    const problems: string[] = [];
    for (const [key, c] of Object.entries(ROUTES)) {
      if (c.kind !== 'portal-signed-in') continue;
      const p = c.probe;
      const admin = fx.a.sessions.admin;
      await withoutWrites(key, async () => {
        const anonymous = await inject(p, { 'x-csrf-token': admin.csrf, cookie: `cds_csrf=${admin.csrf}` });
        if (anonymous.statusCode !== 401) problems.push(`${key}, no session: ${anonymous.statusCode}`);
        const expired = await portal(fx.expired, p);
        if (expired.statusCode !== 401) problems.push(`${key}, expired session: ${expired.statusCode}`);
        for (const [name, csrf] of [['no CSRF token', null], ['another session\'s CSRF token', fx.b.sessions.admin.csrf]] as const) {
          const r = await portal(admin, p, csrf);
          if (r.statusCode !== 403 || outcomeOf(r).error !== 'invalid_csrf_token') problems.push(`${key}, ${name}: ${r.statusCode}`);
        }
      });
      expect((await admin.get('/portal/api/session')).body.authenticated, 'the refused sign-outs left the session alive').toBe(true);
    }
    expect(problems).toEqual([]);
  });

  it('hosted pages: a random token is 404, forms need the CSRF value bound to their own token; nothing written', async () => {
    const problems: string[] = [];
    const pageOf = async (token: string) => t.app.inject({ method: 'GET', url: `/verify/${token}` });
    const own = await pageOf(fx.a.ids.verificationToken);
    expect(own.statusCode).toBe(200);
    const unknown = await pageOf(randomBytes(32).toString('base64url'));
    expect(unknown.statusCode).toBe(404);
    expect(leaksOf(unknown.body, [...idsOfA(), ...secretsOfA()])).toEqual([]);
    // A form value taken from the pending decision's page, and its cookie.
    const foreign = verifyForm(own.body, own.headers['set-cookie'], own.body.includes('/send-code') ? 'send-code' : 'code');
    for (const [key, c] of Object.entries(ROUTES)) {
      if (c.kind !== 'hosted') continue;
      const p = c.probe(fx.a.ids);
      if (p.method === 'GET') continue;
      const multipartStep = p.url.endsWith('/document') || p.url.endsWith('/documents');
      const send = (fields: Record<string, string>, cookie?: string) => {
        const headers: Record<string, string> = cookie ? { cookie } : {};
        if (multipartStep) {
          const m = multipart(fields, [{ field: p.url.endsWith('/document') ? 'document' : 'document_proof_of_income', name: 'x.png', type: 'image/png', bytes: Buffer.from('not checked') }]);
          return t.app.inject({ method: 'POST', url: p.url, headers: { ...headers, 'content-type': m.contentType }, payload: m.payload });
        }
        return t.app.inject({ method: 'POST', url: p.url, headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ ...(p.body as Record<string, string>), ...fields }).toString() });
      };
      await withoutWrites(key, async () => {
        const cases: Array<[string, Record<string, string>, string | undefined]> = [
          ['no csrf and no cookie', {}, undefined],
          ['csrf without its cookie', { csrf: foreign.csrf }, undefined],
          ['a made-up csrf with a cookie', { csrf: 'x'.repeat(43) }, foreign.cookie],
        ];
        // The value is bound to the token: the pending page's value does not work on another token's form.
        if (!p.url.startsWith(`/verify/${fx.a.ids.verificationToken}/`)) cases.push(['another token\'s csrf and cookie', { csrf: foreign.csrf }, foreign.cookie]);
        for (const [name, fields, cookie] of cases) {
          const r = await send(fields, cookie);
          if (r.statusCode !== 403) problems.push(`${key}, ${name}: ${r.statusCode}`);
        }
      });
    }
    expect(problems).toEqual([]);
  });

  it('public routes answer without credentials and carry none of A\'s ids or secrets', async () => {
    const problems: string[] = [];
    for (const [key, c] of Object.entries(ROUTES)) {
      if (c.kind !== 'public') continue;
      const r = await t.app.inject({ method: 'GET', url: c.url });
      // The portal's static files answer 503 when the web app was not built (a fresh checkout).
      if (r.statusCode !== 200 && !(c.url.startsWith('/portal') && r.statusCode === 503)) problems.push(`${key}: ${r.statusCode}`);
      const leaks = leaksOf(r.body, [...idsOfA(), ...secretsOfA()]);
      if (leaks.length > 0) problems.push(`${key}: shows ${leaks.join(', ')}`);
    }
    expect(problems).toEqual([]);
  });
});
