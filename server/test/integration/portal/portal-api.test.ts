/**
 * The lender portal's JSON API (/portal/api/*) on SQLite and PostgreSQL, through the real app:
 * sign-up provisioning, sessions (cookies, idle and absolute expiry on a test clock), CSRF on every
 * state change, sign-in limiting, the roles matrix, tenant isolation, API keys end to end against
 * /v1, webhook endpoints with a real HTTPS receiver, and Reset consumer state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { SESSION_ABSOLUTE_MS, SESSION_IDLE_MS } from '../../../src/modules/portal/accounts.service.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { PortalClient } from '../../support/portal-client.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const MINUTE = 60_000;
const txn = (amount: string) => ({ amount, currency: 'USD', merchant_name: 'Acme Outdoor', merchant_category: 'sporting_goods' });
let emailCounter = 0;
const uniqueEmail = (who: string) => `${who}.${++emailCounter}@lender.example.com`;

describe.each(await dialectMatrix())('portal API [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  let receiver: WebhookReceiver;
  const clock = new ManualClock('2026-03-02T09:00:00.000Z');

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, {
      clock,
      env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' },
      overrides: { webhookDelivery: { ca: receiver.ca, timeoutMs: 2_000, leaseMs: 30_000 } },
    });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await receiver?.stop();
  });

  async function signedUp(company = 'Northwind Lending') {
    const client = new PortalClient(t.app);
    const email = uniqueEmail('admin');
    const r = await client.signUp({ company, email });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return { client, email, body: r.body as { tenant: { id: string }; user: { id: string }; sandbox_api_key: string } };
  }

  /** An admin's tenant with one user of each other role, each signed in through an invitation. */
  async function team() {
    const admin = await signedUp('Team Lending');
    const members: Record<string, PortalClient> = { admin: admin.client };
    for (const role of ['developer', 'underwriter', 'viewer'] as const) {
      const invite = await admin.client.post('/portal/api/invitations', { email: uniqueEmail(role), role });
      expect(invite.status, JSON.stringify(invite.body)).toBe(201);
      const token = String(invite.body.invite_url).split('#')[1]!;
      const member = new PortalClient(t.app);
      await member.get('/portal/api/session');
      const described = await member.post('/portal/api/invitation-links/lookup', { token });
      expect(described.body).toMatchObject({ role, tenant_name: 'Team Lending' });
      const accepted = await member.post('/portal/api/invitation-links/accept', { token, name: `${role} person`, password: 'another long passphrase' });
      expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
      expect(accepted.body).toMatchObject({ user: { role }, tenant: { id: admin.body.tenant.id } });
      members[role] = member;
    }
    return { admin, members: members as Record<'admin' | 'developer' | 'underwriter' | 'viewer', PortalClient> };
  }

  describe('sign-up, sessions and cookies', () => {
    it('sign-up provisions a tenant as `cds tenants create` does, signs the admin in and sets safe cookies', async () => {
      const client = new PortalClient(t.app);
      const probe = await client.get('/portal/api/session');
      expect(probe.status).toBe(200);
      expect(probe.body).toEqual({ authenticated: false, csrf_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
      const r = await client.post('/portal/api/signup', { company_name: 'Contoso Credit', name: 'Ada Admin', email: 'Ada@Contoso.Example.com', password: 'correct horse battery' });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      expect(r.body).toMatchObject({ authenticated: true, user: { email: 'ada@contoso.example.com', role: 'admin', name: 'Ada Admin' }, tenant: { name: 'Contoso Credit' } });
      expect(r.body.permissions).toEqual(expect.arrayContaining(['keys:write', 'users:write']));
      const sessionCookie = r.setCookies.find((c) => c.startsWith('cds_session='))!;
      expect(sessionCookie).toMatch(/; Path=\/portal; SameSite=Strict; HttpOnly$/);
      expect(sessionCookie).not.toMatch(/Secure/); // plain http base URL in this test
      expect(r.setCookies.find((c) => c.startsWith('cds_csrf='))).not.toMatch(/HttpOnly/);
      expect(r.headers['cache-control']).toBe('no-store');

      // The sandbox key from sign-up works against /v1 with a seeded consumer; the live default was revoked.
      const tenantId = (r.body.tenant as { id: string }).id;
      const consumers = await client.get('/portal/api/sandbox/consumers?seeded=true');
      expect((consumers.body.data as Array<{ tier: string; identity_status: string }>).map((c) => [c.tier, c.identity_status])).toEqual([
        ['soft', 'verified'],
        ['enhanced', 'verified'],
        ['hard', 'verified'],
      ]);
      const soft = (consumers.body.data as Array<{ id: string }>)[0]!.id;
      const decision = await t.app.inject({
        method: 'POST',
        url: '/v1/decisions/bnpl',
        headers: { ...bearer(String(r.body.sandbox_api_key)), 'content-type': 'application/json' },
        payload: JSON.stringify({ consumer: { consumer_id: soft }, transaction: txn('80.00') }),
      });
      expect(decision.statusCode, decision.body).toBe(200);
      const keys = await client.get('/portal/api/api-keys');
      expect((keys.body.data as Array<{ environment: string; status: string }>).map((k) => `${k.environment}:${k.status}`).sort()).toEqual(['live:revoked', 'sandbox:active']);
      expect(JSON.stringify(keys.body)).not.toContain(String(r.body.sandbox_api_key));
      expect((await t.ctx.tenants.getTenant(tenantId))?.name).toBe('Contoso Credit');

      const me = await client.get('/portal/api/session');
      expect(me.body).toMatchObject({ authenticated: true, user: { email: 'ada@contoso.example.com' } });
    });

    it('refuses a second account for an email, short passwords and unknown fields', async () => {
      const { email } = await signedUp();
      const other = new PortalClient(t.app);
      const again = await other.signUp({ company: 'Again', email: email.toUpperCase() });
      expect(again.status).toBe(422);
      expect(errorOf(again.raw).message).toMatch(/already exists/);
      const short = await other.signUp({ company: 'Short', email: uniqueEmail('short'), password: 'tooshort' });
      expect(short.status).toBe(400);
      expect(errorOf(short.raw).message).toMatch(/password must be 12/);
      const extra = await other.post('/portal/api/signup', { company_name: 'X', name: 'Y', email: uniqueEmail('x'), password: 'correct horse battery', plan: 'gold' });
      expect(errorOf(extra.raw)).toMatchObject({ error: 'invalid_request', message: 'plan is not a recognised field; allowed fields: company_name, name, email, password.' });
    });

    it('signs out, signs in (wrong password: the same answer as an unknown email), and ends the session on sign-out', async () => {
      const { client, email } = await signedUp();
      const out = await client.post('/portal/api/logout');
      expect(out.status).toBe(200);
      expect(out.setCookies.some((c) => c.startsWith('cds_session=;') && /Max-Age=0/.test(c))).toBe(true);
      const denied = await client.get('/portal/api/api-keys');
      expect(errorOf(denied.raw).error).toBe('not_authenticated');

      const wrong = await client.login(email, 'not the password at all');
      const unknown = await client.login(uniqueEmail('nobody'), 'not the password at all');
      expect(errorOf(wrong.raw)).toMatchObject({ error: 'invalid_credentials' });
      expect(errorOf(unknown.raw).message).toBe(errorOf(wrong.raw).message);
      // An email with a NUL character: refused as input, on both databases (PostgreSQL's text cannot hold it).
      const nul = await client.login('a\u0000b', 'not the password at all');
      expect(nul.status).toBe(400);
      expect(errorOf(nul.raw).error).toBe('invalid_request');
      const ok = await client.login(email.toUpperCase());
      expect(ok.status).toBe(200);
      expect((await client.get('/portal/api/api-keys')).status).toBe(200);

      // A stolen cookie value stops working after sign-out (the session row is revoked).
      const stolen = client.cookies.get('cds_session')!;
      await client.post('/portal/api/logout');
      const thief = new PortalClient(t.app);
      thief.cookies.set('cds_session', stolen);
      expect((await thief.get('/portal/api/api-keys')).status).toBe(401);
    });

    it('ends a session after 30 idle minutes and 12 hours after sign-in whatever the activity', async () => {
      const { client } = await signedUp();
      clock.advance(SESSION_IDLE_MS - MINUTE);
      expect((await client.get('/portal/api/api-keys')).status).toBe(200); // activity moves the idle limit
      clock.advance(SESSION_IDLE_MS - MINUTE);
      expect((await client.get('/portal/api/api-keys')).status).toBe(200);
      clock.advance(SESSION_IDLE_MS + MINUTE);
      expect(errorOf((await client.get('/portal/api/api-keys')).raw).error).toBe('not_authenticated');

      const { client: busy } = await signedUp();
      let elapsed = 0;
      while (elapsed + 20 * MINUTE < SESSION_ABSOLUTE_MS) {
        clock.advance(20 * MINUTE);
        elapsed += 20 * MINUTE;
        expect((await busy.get('/portal/api/session')).body.authenticated).toBe(true);
      }
      clock.advance(SESSION_ABSOLUTE_MS - elapsed);
      expect((await busy.get('/portal/api/session')).body.authenticated).toBe(false);
      expect((await busy.get('/portal/api/users')).status).toBe(401);
    });

    it('limits sign-in attempts per email: the 11th in a row is 429 even with the right password', async () => {
      const { email } = await signedUp();
      const client = new PortalClient(t.app);
      for (let i = 0; i < 10; i++) expect((await client.login(email, `wrong password ${i}`, `10.9.0.${i}`)).status).toBe(401);
      const limited = await client.login(email, undefined, '10.9.1.1');
      expect(errorOf(limited.raw).error).toBe('rate_limited');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      clock.advance(31_000);
      expect((await client.login(email, undefined, '10.9.1.2')).status).toBe(200);
    });

    it('limits sign-in attempts per address across emails', async () => {
      const client = new PortalClient(t.app);
      const statuses: number[] = [];
      for (let i = 0; i < 31; i++) statuses.push((await client.login(uniqueEmail('guess'), 'guessing a password', '10.8.0.1')).status);
      expect(statuses.slice(0, 30).every((s) => s === 401)).toBe(true);
      expect(statuses[30]).toBe(429);
    });
  });

  describe('CSRF', () => {
    it('every state change needs the session-bound token in X-CSRF-Token; reads do not', async () => {
      const { client } = await signedUp();
      const other = await signedUp();
      const missing = await client.post('/portal/api/api-keys', { environment: 'sandbox' }, { csrf: null });
      expect(errorOf(missing.raw)).toMatchObject({ error: 'invalid_csrf_token' });
      const forged = await client.post('/portal/api/api-keys', { environment: 'sandbox' }, { csrf: 'A'.repeat(43) });
      expect(forged.status).toBe(403);
      // Another session's token, even planted in this browser's cookie too, does not pass.
      client.cookies.set('cds_csrf', other.client.csrf);
      const foreign = await client.post('/portal/api/api-keys', { environment: 'sandbox' }, { csrf: other.client.csrf });
      expect(errorOf(foreign.raw).error).toBe('invalid_csrf_token');
      client.cookies.set('cds_csrf', client.csrf);
      expect((await client.post('/portal/api/api-keys', { environment: 'sandbox' })).status).toBe(201);
      expect((await client.request('DELETE', '/portal/api/invitations/00000000-0000-4000-8000-000000000000', undefined, { csrf: null })).status).toBe(403);
    });

    it('sign-up and sign-in need the anonymous double-submit token too', async () => {
      const client = new PortalClient(t.app);
      const noProbe = await client.post('/portal/api/login', { email: 'a@b.example.com', password: 'whatever whatever' }, { csrf: 'made-up' });
      expect(errorOf(noProbe.raw).error).toBe('invalid_csrf_token');
      await client.get('/portal/api/session');
      const mismatch = await client.post('/portal/api/signup', { company_name: 'X', name: 'Y', email: uniqueEmail('x'), password: 'correct horse battery' }, { csrf: 'B'.repeat(43) });
      expect(mismatch.status).toBe(403);
    });
  });

  describe('roles', () => {
    it('each endpoint checks the role: viewer and underwriter read, developer manages keys and webhooks, admin everything', async () => {
      const { admin, members } = await team();
      const tenantId = admin.body.tenant.id;
      const consumerId = (await t.ctx.consumers.listConsumers({ tenantId, environment: 'sandbox' }, { seededOnly: true })).consumers[0]!.id;
      const keyId = (await t.ctx.apiKeys.listKeys(tenantId)).find((k) => k.environment === 'sandbox')!.id;
      const endpoint = await t.ctx.webhooks.createEndpoint({ tenantId, environment: 'sandbox' }, { url: receiver.url('/roles') });
      const userId = admin.body.user.id;
      /** A body, or how to make it when the check runs (an edit names the version as it then is). */
      type Check = [string, string, unknown?];
      const reads: Check[] = [
        ['GET', '/portal/api/api-keys'],
        ['GET', '/portal/api/webhooks/sandbox/endpoints'],
        ['GET', `/portal/api/webhooks/sandbox/endpoints/${endpoint.endpoint.id}/deliveries`],
        ['GET', '/portal/api/sandbox/consumers'],
        ['GET', `/portal/api/sandbox/consumers/${consumerId}/applications`],
        ['GET', '/portal/api/dealers/sandbox/dealers'],
        ['GET', '/portal/api/decisions/sandbox'],
        ['GET', '/portal/api/decisions/sandbox/export.csv'],
        ['GET', '/portal/api/dashboard/sandbox'],
        ['GET', '/portal/api/policy/sandbox'],
      ];
      const developerWrites: Check[] = [
        ['POST', '/portal/api/api-keys', { environment: 'sandbox' }],
        ['POST', `/portal/api/api-keys/${keyId}/revoke`],
        ['POST', '/portal/api/webhooks/sandbox/endpoints', { url: receiver.url('/new') }],
        ['PATCH', `/portal/api/webhooks/sandbox/endpoints/${endpoint.endpoint.id}`, async () => ({ expected_version: (await t.ctx.webhooks.getEndpoint({ tenantId, environment: 'sandbox' }, endpoint.endpoint.id)).version, description: 'changed' })],
        ['POST', `/portal/api/webhooks/sandbox/endpoints/${endpoint.endpoint.id}/rotate-secret`, { overlap_hours: 1 }],
        ['POST', `/portal/api/webhooks/sandbox/endpoints/${endpoint.endpoint.id}/test`],
        ['POST', `/portal/api/sandbox/consumers/${consumerId}/reset`],
        ['POST', '/portal/api/dealers/sandbox/dealers', { name: 'Matrix Motors' }],
      ];
      const adminOnly: Check[] = [
        ['GET', '/portal/api/users'],
        ['GET', '/portal/api/invitations'],
        ['POST', '/portal/api/invitations', { email: uniqueEmail('matrix'), role: 'viewer' }],
        ['PATCH', `/portal/api/users/${userId}`, { role: 'admin' }],
        ['POST', '/portal/api/policy/sandbox/bnpl/validate', { document_json: '{}' }],
      ];
      const expected: Record<string, { reads: boolean; developerWrites: boolean; adminOnly: boolean }> = {
        viewer: { reads: true, developerWrites: false, adminOnly: false },
        underwriter: { reads: true, developerWrites: false, adminOnly: false },
        developer: { reads: true, developerWrites: true, adminOnly: false },
        admin: { reads: true, developerWrites: true, adminOnly: true },
      };
      const table: string[] = [];
      for (const [role, allowed] of Object.entries(expected)) {
        const client = members[role as keyof typeof members];
        for (const [group, checks] of [['reads', reads], ['developerWrites', developerWrites], ['adminOnly', adminOnly]] as const) {
          for (const [method, url, body] of checks) {
            const r = await client.request(method, url, typeof body === 'function' ? await (body as () => Promise<unknown>)() : body);
            const ok = r.status >= 200 && r.status < 300;
            if (ok !== allowed[group]) table.push(`${role} ${method} ${url}: ${r.status} ${JSON.stringify(r.body)}`);
            if (!ok) expect(errorOf(r.raw).error).toBe('forbidden');
          }
        }
      }
      expect(table).toEqual([]);
      // The session tells the web app what to hide.
      expect((await members.viewer.get('/portal/api/session')).body.permissions).toEqual(['keys:read', 'webhooks:read', 'consumers:read', 'dealers:read', 'decisions:read', 'dashboard:read', 'policy:read', 'referrals:read', 'notices:read']);
    });

    it('a viewer cannot generate a key: 403 forbidden, and nothing is created', async () => {
      const { admin, members } = await team();
      const before = (await t.ctx.apiKeys.listKeys(admin.body.tenant.id)).length;
      const r = await members.viewer.post('/portal/api/api-keys', { environment: 'live' });
      expect(r.status).toBe(403);
      expect(errorOf(r.raw)).toMatchObject({ error: 'forbidden', message: 'Your role (viewer) does not allow this action.' });
      expect((await t.ctx.apiKeys.listKeys(admin.body.tenant.id)).length).toBe(before);
    });

    it('admins change roles and remove people (sessions end at once); the last admin stays', async () => {
      const { admin, members } = await team();
      const users = (await admin.client.get('/portal/api/users')).body.data as Array<{ id: string; role: string }>;
      expect(users.map((u) => u.role).sort()).toEqual(['admin', 'developer', 'underwriter', 'viewer']);
      const viewer = users.find((u) => u.role === 'viewer')!;
      const promoted = await admin.client.patch(`/portal/api/users/${viewer.id}`, { role: 'developer' });
      expect(promoted.body).toMatchObject({ user: { role: 'developer' } });
      expect((await members.viewer.post('/portal/api/api-keys', { environment: 'sandbox' })).status).toBe(201); // the role is read live
      const demoteSelf = await admin.client.patch(`/portal/api/users/${admin.body.user.id}`, { role: 'viewer' });
      expect(errorOf(demoteSelf.raw).message).toMatch(/at least one admin/);
      expect((await admin.client.delete(`/portal/api/users/${viewer.id}`)).status).toBe(204);
      expect((await members.viewer.get('/portal/api/api-keys')).status).toBe(401);
    });

    it('an invitation is single-use, revocable and expires', async () => {
      const { client } = await signedUp();
      const invite = await client.post('/portal/api/invitations', { email: uniqueEmail('once'), role: 'viewer' });
      const token = String(invite.body.invite_url).split('#')[1]!;
      const a = new PortalClient(t.app);
      await a.get('/portal/api/session');
      expect((await a.post('/portal/api/invitation-links/accept', { token, name: 'First', password: 'another long passphrase' })).status).toBe(201);
      const b = new PortalClient(t.app);
      await b.get('/portal/api/session');
      expect((await b.post('/portal/api/invitation-links/accept', { token, name: 'Second', password: 'another long passphrase' })).status).toBe(404);

      const revoked = await client.post('/portal/api/invitations', { email: uniqueEmail('revoked'), role: 'viewer' });
      expect((await client.delete(`/portal/api/invitations/${(revoked.body.invitation as { id: string }).id}`)).status).toBe(204);
      expect((await b.post('/portal/api/invitation-links/lookup', { token: String(revoked.body.invite_url).split('#')[1] })).status).toBe(404);

      const late = await client.post('/portal/api/invitations', { email: uniqueEmail('late'), role: 'viewer' });
      clock.advance(8 * 24 * 3600_000);
      expect((await b.post('/portal/api/invitation-links/lookup', { token: String(late.body.invite_url).split('#')[1] })).status).toBe(404);
    });

    it("an invitation does not tell whether an address has an account with another lender, and a team's invitations are limited", async () => {
      const other = await signedUp('Other Lender');
      const { client, email: ownEmail } = await signedUp('Inviting Lender');
      // Another lender's user: invited like anyone (201); accepting is refused, to the address's owner.
      const foreign = await client.post('/portal/api/invitations', { email: other.email, role: 'viewer' });
      expect(foreign.status, JSON.stringify(foreign.body)).toBe(201);
      const stranger = new PortalClient(t.app);
      await stranger.get('/portal/api/session');
      const accept = await stranger.post('/portal/api/invitation-links/accept', { token: String(foreign.body.invite_url).split('#')[1], name: 'Other', password: 'another long passphrase' });
      expect(accept.status).toBe(422);
      expect(errorOf(accept.raw).message).toMatch(/already exists; sign in instead/);
      // The team's own member is told apart: the team can see its members anyway.
      const own = await client.post('/portal/api/invitations', { email: ownEmail, role: 'viewer' });
      expect(own.status).toBe(422);
      expect(errorOf(own.raw).message).toMatch(/already a member of your team/);
      // 20 at once (two made above), then 429 with Retry-After.
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) statuses.push((await client.post('/portal/api/invitations', { email: uniqueEmail(`burst${i}`), role: 'viewer' })).status);
      expect(statuses.slice(0, 18)).toEqual(Array(18).fill(201));
      expect(statuses.slice(18)).toEqual([429, 429]);
    });
  });

  describe('tenant isolation', () => {
    it("one tenant cannot see or change another tenant's keys, endpoints, deliveries or consumers", async () => {
      const a = await signedUp('Tenant A');
      const b = await signedUp('Tenant B');
      const aTenant = a.body.tenant.id;
      const aKey = (await t.ctx.apiKeys.listKeys(aTenant)).find((k) => k.revokedAt === null)!;
      const aEndpoint = await t.ctx.webhooks.createEndpoint({ tenantId: aTenant, environment: 'sandbox' }, { url: receiver.url('/tenant-a') });
      const aTest = await t.ctx.webhooks.sendTestEvent({ tenantId: aTenant, environment: 'sandbox' }, aEndpoint.endpoint.id);
      const aConsumer = (await t.ctx.consumers.listConsumers({ tenantId: aTenant, environment: 'sandbox' })).consumers[0]!;

      const keys = (await b.client.get('/portal/api/api-keys')).body.data as Array<{ id: string }>;
      expect(keys.map((k) => k.id)).not.toContain(aKey.id);
      expect((await b.client.get('/portal/api/webhooks/sandbox/endpoints')).body.data).toEqual([]);
      const consumers = (await b.client.get('/portal/api/sandbox/consumers')).body.data as Array<{ id: string }>;
      expect(consumers.map((c) => c.id)).not.toContain(aConsumer.id);
      for (const [method, url] of [
        ['POST', `/portal/api/api-keys/${aKey.id}/revoke`],
        ['GET', `/portal/api/webhooks/sandbox/endpoints/${aEndpoint.endpoint.id}`],
        ['GET', `/portal/api/webhooks/sandbox/endpoints/${aEndpoint.endpoint.id}/deliveries`],
        ['POST', `/portal/api/webhooks/sandbox/endpoints/${aEndpoint.endpoint.id}/rotate-secret`],
        ['DELETE', `/portal/api/webhooks/sandbox/endpoints/${aEndpoint.endpoint.id}`],
        ['GET', `/portal/api/webhooks/sandbox/deliveries/${aTest.deliveryId}/attempts`],
        ['POST', `/portal/api/webhooks/sandbox/deliveries/${aTest.deliveryId}/resend`],
        ['GET', `/portal/api/sandbox/consumers/${aConsumer.id}`],
        ['POST', `/portal/api/sandbox/consumers/${aConsumer.id}/reset`],
      ] as const) {
        const r = await b.client.request(method, url, method === 'GET' || method === 'DELETE' ? undefined : {});
        expect(r.status, `${method} ${url}`).toBe(404);
      }
      expect((await t.ctx.apiKeys.listKeys(aTenant)).find((k) => k.id === aKey.id)?.revokedAt).toBeNull();
      expect((await t.ctx.webhooks.getEndpoint({ tenantId: aTenant, environment: 'sandbox' }, aEndpoint.endpoint.id)).state).toBe('active');
    });
  });

  describe('API keys', () => {
    it('a generated key is shown once, works against /v1 at once, and stops at once when revoked', async () => {
      const { client, body } = await signedUp();
      clock.advance(1_000); // newest first: after the default key
      const created = await client.post('/portal/api/api-keys', { environment: 'sandbox', label: 'checkout service' });
      expect(created.status).toBe(201);
      const secret = String(created.body.secret);
      expect(secret).toMatch(/^svc_test_[0-9A-Za-z]{40}$/);
      expect(created.body.key).toMatchObject({ environment: 'sandbox', label: 'checkout service', last4: secret.slice(-4), status: 'active', last_used_at: null });
      const soft = (await t.ctx.consumers.listConsumers({ tenantId: body.tenant.id, environment: 'sandbox' }, { seededOnly: true })).consumers[0]!.id;
      const call = () =>
        t.app.inject({ method: 'POST', url: '/v1/decisions/bnpl', headers: { ...bearer(secret), 'content-type': 'application/json' }, payload: JSON.stringify({ consumer: { consumer_id: soft }, transaction: txn('60.00') }) });
      expect((await call()).statusCode).toBe(200);
      // last-used is written off the request path: wait until it lands (a deadline, not a sleep).
      let listed = await client.get('/portal/api/api-keys?environment=sandbox&status=active&page_size=1');
      for (const deadline = Date.now() + 10_000; (listed.body.data as Array<{ last_used_at: unknown }>)[0]!.last_used_at === null && Date.now() < deadline; ) {
        await new Promise((r) => setImmediate(r));
        listed = await client.get('/portal/api/api-keys?environment=sandbox&status=active&page_size=1');
      }
      expect(listed.body).toMatchObject({ page: 1, page_size: 1, total: 2 });
      const mine = (listed.body.data as Array<Record<string, unknown>>)[0]!;
      expect(mine).toMatchObject({ id: (created.body.key as { id: string }).id, last_used_at: clock.now().toISOString() });
      expect(JSON.stringify(listed.body)).not.toContain(secret);

      const live = await client.post('/portal/api/api-keys', { environment: 'live' });
      expect(String(live.body.secret)).toMatch(/^svc_live_/);
      expect((await client.get('/portal/api/api-keys?environment=live&status=active')).body.total).toBe(1);

      const revoked = await client.post(`/portal/api/api-keys/${mine.id as string}/revoke`);
      expect(revoked.body).toMatchObject({ key: { status: 'revoked', revoked_at: clock.now().toISOString() } });
      expect((await call()).statusCode).toBe(401);
      expect((await client.get('/portal/api/api-keys?status=bogus')).status).toBe(400);
    });
  });

  describe('webhook endpoints', () => {
    it('create (secret once), test event delivered and in the history, rotate, edit, auto-disabled -> re-enable with resend, delete', async () => {
      const { client, body } = await signedUp();
      const scope = { tenantId: body.tenant.id, environment: 'sandbox' as const };
      for (const events of [[], 'decision.finalized', 5]) {
        const bad = await client.post('/portal/api/webhooks/sandbox/endpoints', { url: receiver.url('/bad-events'), events });
        expect(bad.status).toBe(400);
        expect(errorOf(bad.raw).message).toBe('events must be "*" (every event type) or a list of 1 to 50 event types.');
      }
      const http = await client.post('/portal/api/webhooks/sandbox/endpoints', { url: 'http://127.0.0.1/hook' });
      expect(errorOf(http.raw).error).toBe('invalid_request');
      const created = await client.post('/portal/api/webhooks/sandbox/endpoints', { url: receiver.url('/portal-hook'), description: 'Orders service', events: ['decision.finalized'] });
      expect(created.status).toBe(201);
      expect(String(created.body.secret)).toMatch(/^whsec_/);
      const id = (created.body.endpoint as { id: string }).id;
      expect(created.body.endpoint).toMatchObject({ environment: 'sandbox', state: 'active', events: ['decision.finalized'], description: 'Orders service' });
      expect((await client.get('/portal/api/webhooks/live/endpoints')).body.data).toEqual([]);
      expect((await client.get(`/portal/api/webhooks/live/endpoints/${id}`)).status).toBe(404);

      const test = await client.post(`/portal/api/webhooks/sandbox/endpoints/${id}/test`);
      expect(test.status).toBe(202);
      await t.ctx.webhookDelivery.deliverDue();
      expect(receiver.requestsTo('/portal-hook').map((r) => r.headers['svc-webhook-type'])).toEqual(['webhook.test']);
      const history = await client.get(`/portal/api/webhooks/sandbox/endpoints/${id}/deliveries`);
      expect(history.body).toMatchObject({ page: 1, has_more: false, data: [{ event_type: 'webhook.test', state: 'delivered', attempts: 1, last_response_status: 200 }] });
      const attempts = await client.get(`/portal/api/webhooks/sandbox/deliveries/${String(test.body.delivery_id)}/attempts`);
      expect(attempts.body.data).toMatchObject([{ attempt: 1, response_status: 200, error_kind: null, request_headers: { 'Svc-Webhook-Type': 'webhook.test' } }]);
      const byEvent = await client.get(`/portal/api/webhooks/sandbox/endpoints/${id}/deliveries?event_id=${String(test.body.event_id)}`);
      expect((byEvent.body.data as unknown[]).length).toBe(1);

      const rotated = await client.post(`/portal/api/webhooks/sandbox/endpoints/${id}/rotate-secret`, { overlap_hours: 2 });
      expect(rotated.body).toMatchObject({ secret: expect.stringMatching(/^whsec_/), previous_secret_expires_at: new Date(clock.now().getTime() + 2 * 3600_000).toISOString() });
      // The rotation changed nothing the edit form shows: the endpoint is still at the version it was created with.
      expect((await client.get(`/portal/api/webhooks/sandbox/endpoints/${id}`)).body).toMatchObject({ endpoint: { version: 1 } });
      const edited = await client.patch(`/portal/api/webhooks/sandbox/endpoints/${id}`, { expected_version: 1, events: '*', description: null });
      expect(edited.body).toMatchObject({ endpoint: { events: ['*'], description: null, version: 2 } });

      // Auto-disabled (as the worker leaves it after 50 failed deliveries), then re-enabled with a resend of what it missed.
      await t.ctx.storage.db.updateTable('webhook_endpoints').set({ state: 'disabled', disabled_reason: '50 consecutive failed deliveries', disabled_at: clock.now().getTime() }).where('id', '=', id).execute();
      const disabledView = await client.get(`/portal/api/webhooks/sandbox/endpoints/${id}`);
      expect(disabledView.body).toMatchObject({ endpoint: { state: 'disabled', disabled_reason: '50 consecutive failed deliveries' } });
      expect(errorOf((await client.post(`/portal/api/webhooks/sandbox/endpoints/${id}/test`)).raw).error).toBe('unprocessable_entity');
      await t.ctx.storage.db.transaction().execute((trx) => t.ctx.outbox.append(trx, scope, [{ type: 'decision.finalized', subjectId: null, data: { outcome: 'approved' } }]));
      const since = new Date(clock.now().getTime() - 3600_000).toISOString();
      const reenabled = await client.post(`/portal/api/webhooks/sandbox/endpoints/${id}/reenable`, { resend_missed_since: since });
      expect(reenabled.body).toMatchObject({ endpoint: { state: 'active', consecutive_failures: 0, version: 2 }, resent: { recovered: 1 } });
      await t.ctx.webhookDelivery.deliverDue();
      expect(receiver.requestsTo('/portal-hook').map((r) => r.headers['svc-webhook-type'])).toEqual(['webhook.test', 'decision.finalized']);

      const resent = await client.post(`/portal/api/webhooks/sandbox/deliveries/${String(test.body.delivery_id)}/resend`);
      expect(resent.body).toMatchObject({ delivery: { state: 'pending', attempts: 0 } });
      expect((await client.delete(`/portal/api/webhooks/sandbox/endpoints/${id}`)).status).toBe(204);
      expect((await client.get('/portal/api/webhooks/sandbox/endpoints')).body.data).toEqual([]);
    });
  });

  describe('sandbox consumers', () => {
    it('lists with server-side search and paging; Reset consumer state restores the seed and hides earlier history', async () => {
      const { client, body } = await signedUp();
      const tenantId = body.tenant.id;
      const page = await client.get('/portal/api/sandbox/consumers?page_size=2');
      expect(page.body).toMatchObject({ page: 1, page_size: 2, total: 3 });
      const found = await client.get('/portal/api/sandbox/consumers?search=harper');
      expect((found.body.data as Array<{ name: string; tier: string; linked_accounts: unknown[] }>).map((c) => [c.name, c.tier, c.linked_accounts.length])).toEqual([['Harper Hardcase', 'hard', 2]]);
      expect((await client.get('/portal/api/sandbox/consumers?search=%25')).body.total).toBe(0); // LIKE wildcards are literal

      const soft = (await t.ctx.consumers.listConsumers({ tenantId, environment: 'sandbox' }, { seededOnly: true })).consumers[0]!;
      for (const amount of ['50.00', '70.00']) {
        const r = await t.app.inject({ method: 'POST', url: '/v1/decisions/bnpl', headers: { ...bearer(body.sandbox_api_key), 'content-type': 'application/json' }, payload: JSON.stringify({ consumer: { consumer_id: soft.id }, transaction: txn(amount) }) });
        expect(r.statusCode).toBe(200);
        clock.advance(1_000);
      }
      const before = await client.get(`/portal/api/sandbox/consumers/${soft.id}/applications`);
      expect(before.body).toMatchObject({ total: 2, data: [{ requested_amount: '70.00', outcome: 'approved' }, { requested_amount: '50.00' }] });
      expect((await t.ctx.consumers.history(soft.id)).priorApplications).toBe(2);
      await t.ctx.storage.db.updateTable('consumers').set({ identity_status: 'failed', linked_accounts_json: '[]' }).where('id', '=', soft.id).execute();

      const reset = await client.post(`/portal/api/sandbox/consumers/${soft.id}/reset`);
      expect(reset.body).toMatchObject({ consumer: { id: soft.id, identity_status: 'verified', tier: 'soft', history_reset_at: clock.now().toISOString(), linked_accounts: [{ institution: 'Sandbox Federal Bank' }] } });
      expect((await client.get(`/portal/api/sandbox/consumers/${soft.id}/applications`)).body).toMatchObject({ total: 0, data: [] });
      expect((await t.ctx.consumers.history(soft.id)).priorApplications).toBe(0);
      // Decisions themselves are kept (records, events and webhooks already sent).
      expect((await t.ctx.storage.db.selectFrom('decisions').select('id').where('consumer_id', '=', soft.id).execute()).length).toBe(2);
      expect((await client.post(`/portal/api/sandbox/consumers/${crypto.randomUUID()}/reset`)).status).toBe(404);
    });
  });

  describe('served web app', () => {
    it('unknown API paths are JSON 404s; /portal pages carry a strict CSP without inline script', async () => {
      const unknown = await t.app.inject({ method: 'GET', url: '/portal/api/nothing-here' });
      expect(errorOf(unknown).error).toBe('not_found');
      const page = await t.app.inject({ method: 'GET', url: '/portal/sandbox/api-keys' });
      expect([200, 503]).toContain(page.statusCode);
      expect(page.headers['content-type']).toMatch(/text\/html/);
      expect(String(page.headers['content-security-policy'])).toMatch(/script-src 'self';/);
      expect(String(page.headers['content-security-policy'])).not.toMatch(/unsafe-inline/);
      expect(page.headers['x-frame-options']).toBe('DENY');
      if (page.statusCode === 200) {
        expect(page.headers['cache-control']).toBe('no-cache');
        expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
        const asset = /src="(\/portal\/assets\/[^"]+\.js)"/.exec(page.body)![1]!;
        const js = await t.app.inject({ method: 'GET', url: asset });
        expect(js.statusCode).toBe(200);
        expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      }
      expect((await t.app.inject({ method: 'GET', url: '/portal/assets/missing-abc.js' })).statusCode).toBe(404);
    });
  });
});
