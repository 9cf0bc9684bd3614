/**
 * Dealers in the portal API on SQLite and PostgreSQL: the lifecycle (add, edit, disable, enable,
 * no-op repeats) with its events in the outbox and delivered to a real HTTPS receiver, validation,
 * roles, CSRF, tenant and environment isolation, and the effect on indirect auto-loan applications.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { PortalClient } from '../../support/portal-client.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

let emailCounter = 0;
const uniqueEmail = (who: string) => `${who}.dealers.${++emailCounter}@lender.example.com`;
const DEALER_KEYS = ['id', 'environment', 'name', 'license_number', 'state', 'status', 'created_at', 'updated_at', 'disabled_at', 'version'];

describe.each(await dialectMatrix())('portal dealers [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  let receiver: WebhookReceiver;
  const clock = new ManualClock('2026-03-15T09:00:00.000Z');

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

  async function signedUp(company: string) {
    const client = new PortalClient(t.app);
    const r = await client.signUp({ company, email: uniqueEmail('admin') });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return { client, tenantId: (r.body as { tenant: { id: string } }).tenant.id, apiKey: (r.body as { sandbox_api_key: string }).sandbox_api_key };
  }

  async function member(admin: PortalClient, role: 'developer' | 'underwriter' | 'viewer') {
    const invite = await admin.post('/portal/api/invitations', { email: uniqueEmail(role), role });
    const token = String(invite.body.invite_url).split('#')[1]!;
    const client = new PortalClient(t.app);
    await client.get('/portal/api/session');
    const accepted = await client.post('/portal/api/invitation-links/accept', { token, name: `${role} person`, password: 'another long passphrase' });
    expect(accepted.status).toBe(201);
    return client;
  }

  const dealerEvents = (tenantId: string) =>
    t.ctx.storage.db.selectFrom('events').selectAll().where('tenant_id', '=', tenantId).where('type', 'in', ['dealer.added', 'dealer.removed']).orderBy('created_at').execute();

  it('adds, lists, edits, disables and re-enables a dealer; each state change writes its event once and is delivered', async () => {
    const { client, tenantId } = await signedUp('Metro Auto Finance');
    await t.ctx.webhooks.createEndpoint({ tenantId, environment: 'sandbox' }, { url: receiver.url('/dealers'), events: ['dealer.added', 'dealer.removed'] });
    const base = '/portal/api/dealers/sandbox/dealers';

    const created = await client.post(base, { name: '  Riverside Honda ', license_number: 'OH-D-1001', state: 'OH' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const dealer = created.body as Record<string, unknown>;
    expect(Object.keys(dealer).sort()).toEqual([...DEALER_KEYS].sort());
    expect(dealer).toMatchObject({ environment: 'sandbox', name: 'Riverside Honda', license_number: 'OH-D-1001', state: 'OH', status: 'active', disabled_at: null, created_at: '2026-03-15T09:00:00.000Z' });
    const id = dealer.id as string;
    // Each step a second apart: lists and events are ordered by time.
    clock.advance(1_000);
    const bare = await client.post(base, { name: 'Lakeside Motors' });
    expect(bare.body).toMatchObject({ license_number: null, state: null, status: 'active' });

    clock.advance(60_000);
    const listed = await client.get(base);
    expect((listed.body.data as Array<{ id: string }>).map((d) => d.id)).toEqual([bare.body.id, id]);

    const edited = await client.patch(`${base}/${id}`, { expected_version: 1, name: 'Riverside Honda of Dayton', license_number: null });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ name: 'Riverside Honda of Dayton', license_number: null, state: 'OH', updated_at: '2026-03-15T09:01:01.000Z', version: 2 });

    const disabled = await client.post(`${base}/${id}/disable`);
    expect(disabled.body).toMatchObject({ status: 'disabled', disabled_at: '2026-03-15T09:01:01.000Z' });
    clock.advance(1_000);
    const again = await client.post(`${base}/${id}/disable`);
    expect([again.status, again.body.status]).toEqual([200, 'disabled']);
    expect((await client.get(base)).body.data).toContainEqual(expect.objectContaining({ id, status: 'disabled' }));
    const enabled = await client.post(`${base}/${id}/enable`);
    expect(enabled.body).toMatchObject({ status: 'active', disabled_at: null });
    await client.post(`${base}/${id}/enable`);

    const events = await dealerEvents(tenantId);
    expect(events.map((e) => [e.type, JSON.parse(e.data_json)])).toEqual([
      ['dealer.added', { dealer_id: id, dealer_name: 'Riverside Honda', status: 'active' }],
      ['dealer.added', { dealer_id: bare.body.id, dealer_name: 'Lakeside Motors', status: 'active' }],
      ['dealer.removed', { dealer_id: id, dealer_name: 'Riverside Honda of Dayton', status: 'disabled' }],
      ['dealer.added', { dealer_id: id, dealer_name: 'Riverside Honda of Dayton', status: 'active' }],
    ]);
    await t.ctx.webhookDelivery.deliverDue();
    const received = receiver.requestsTo('/dealers').map((r) => JSON.parse(r.body) as { type: string; data: { dealer_id: string } });
    expect(received.map((r) => r.type).sort()).toEqual(['dealer.added', 'dealer.added', 'dealer.added', 'dealer.removed']);
  });

  it('refuses bad input with 400 naming the field', async () => {
    const { client } = await signedUp('Validation Auto');
    const base = '/portal/api/dealers/sandbox/dealers';
    for (const body of [{}, { name: '' }, { name: '   ' }, { name: 'x'.repeat(201) }, { name: 'A', state: 'ZZ' }, { name: 'A', license_number: 'x'.repeat(51) }, { name: 'A', extra: 1 }]) {
      const r = await client.post(base, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(Object.keys(r.body).sort()).toEqual(['error', 'message', 'request_id']);
    }
    const id = (await client.post(base, { name: 'Fine Motors' })).body.id as string;
    expect((await client.patch(`${base}/${id}`, {})).status).toBe(400);
    expect((await client.patch(`${base}/${id}`, { name: 'No version' })).status).toBe(400);
    expect((await client.patch(`${base}/${id}`, { expected_version: 1 })).status).toBe(400);
    expect((await client.get(`${base}/not-a-uuid`)).status).toBe(400);
  });

  it('lets every role read and only admins and developers change; CSRF is required', async () => {
    const { client: admin } = await signedUp('Roles Auto');
    const base = '/portal/api/dealers/sandbox/dealers';
    const id = (await admin.post(base, { name: 'Shared Motors' })).body.id as string;
    const developer = await member(admin, 'developer');
    expect((await developer.post(base, { name: 'Dev Motors' })).status).toBe(201);
    expect((await developer.post(`${base}/${id}/disable`)).status).toBe(200);
    for (const role of ['underwriter', 'viewer'] as const) {
      const c = await member(admin, role);
      expect((await c.get(base)).status, role).toBe(200);
      expect((await c.post(base, { name: 'No' })).body.error, role).toBe('forbidden');
      expect((await c.patch(`${base}/${id}`, { expected_version: 1, name: 'No' })).body.error, role).toBe('forbidden');
      expect((await c.post(`${base}/${id}/enable`)).body.error, role).toBe('forbidden');
    }
    const noCsrf = await admin.post(base, { name: 'Forged Motors' }, { csrf: null });
    expect([noCsrf.status, noCsrf.body.error]).toEqual([403, 'invalid_csrf_token']);
    expect(((await admin.get(base)).body.data as Array<{ name: string }>).map((d) => d.name)).not.toContain('Forged Motors');
    expect((await new PortalClient(t.app).get(base)).status).toBe(401);
  });

  it('keeps tenants and environments apart (404), and only an active dealer of the same environment takes indirect applications', async () => {
    const a = await signedUp('Tenant A Auto');
    const b = await signedUp('Tenant B Auto');
    const idA = (await a.client.post('/portal/api/dealers/sandbox/dealers', { name: 'A Motors' })).body.id as string;
    for (const [method, path] of [['GET', ''], ['PATCH', ''], ['POST', '/disable'], ['POST', '/enable']] as const) {
      const r = await b.client.request(method, `/portal/api/dealers/sandbox/dealers/${idA}${path}`, method === 'PATCH' ? { expected_version: 1, name: 'Stolen' } : method === 'POST' ? {} : undefined);
      expect([r.status, r.body.error], `${method} ${path}`).toEqual([404, 'not_found']);
      const live = await a.client.request(method, `/portal/api/dealers/live/dealers/${idA}${path}`, method === 'PATCH' ? { expected_version: 1, name: 'Wrong env' } : method === 'POST' ? {} : undefined);
      expect(live.status, `live ${method} ${path}`).toBe(404);
    }
    expect((await b.client.get('/portal/api/dealers/sandbox/dealers')).body.data).toEqual([]);
    expect((await a.client.get('/portal/api/dealers/live/dealers')).body.data).toEqual([]);
    expect((await dealerEvents(b.tenantId))).toEqual([]);

    const { id: consumerId } = await t.ctx.storage.db.selectFrom('consumers').select('id').where('tenant_id', '=', a.tenantId).where('environment', '=', 'sandbox').where('sandbox_profile', '=', 'soft').executeTakeFirstOrThrow();
    const apply = (apiKey: string) =>
      t.app.inject({
        method: 'POST', url: '/v1/decisions/auto-loan', headers: { ...bearer(apiKey), 'content-type': 'application/json' },
        payload: JSON.stringify({
          consumer: { consumer_id: consumerId },
          vehicle: { vin: 'JH4KA7561PC008269', year: 2023, make: 'Acura', model: 'Integra', mileage: 21_000, condition: 'used', value: '20000.00' },
          loan: { amount: '14000.00', down_payment: '2000.00', term_months: 48, currency: 'USD' },
          channel: 'indirect',
          dealer: { dealer_id: idA, markup_rate_pct: '1.00' },
        }),
      });
    const ok = await apply(a.apiKey);
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toMatchObject({ outcome: 'approved', ltv: '60.00' });
    await a.client.post(`/portal/api/dealers/sandbox/dealers/${idA}/disable`);
    const refused = await apply(a.apiKey);
    expect(refused.statusCode).toBe(422);
    expect(refused.json().message).toContain('unknown or disabled');
  });
});
