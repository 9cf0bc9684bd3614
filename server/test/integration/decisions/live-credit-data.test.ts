/**
 * Live decisions through the lender's credit-data gateway (a real HTTPS fake on loopback): a good
 * file approves; no file declines with AA-14; a slow, failing or broken gateway refers with AA-25
 * and `score.errored`, never a 5xx; and a live tenant without a gateway does the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayConnector } from '../../../src/modules/credit-data/gateway-connector.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { FAKE_GATEWAY_TOKEN, startFakeCreditGateway, type FakeCreditGateway } from '../../support/fake-credit-gateway.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';

const consumer = {
  first_name: 'Lena',
  last_name: 'Live',
  email: 'lena@example.com',
  dob: '1984-07-09',
  ssn_last4: '5678',
  address: { line1: '9 Elm Street', city: 'Denver', state: 'CO', zip: '80202' },
};
const transaction = { amount: '180.00', currency: 'USD', merchant_name: 'Outdoor Co', merchant_category: 'sporting_goods' };

describe('live credit data through the gateway', () => {
  let db: TestDatabase;
  let bareDb: TestDatabase;
  let t: TestApp;
  let bare: TestApp;
  let gateway: FakeCreditGateway;

  beforeAll(async () => {
    gateway = await startFakeCreditGateway();
    db = await createTestDatabase('sqlite');
    const live = createGatewayConnector({ baseUrl: gateway.url, token: FAKE_GATEWAY_TOKEN, ca: gateway.ca, timeoutMs: 400, cache: { maxEntries: 0 }, circuitBreaker: { failureThreshold: 1000 } });
    t = await createTestApp(db, { overrides: { creditData: { live } } });
    bareDb = await createTestDatabase('sqlite');
    bare = await createTestApp(bareDb);
  });
  afterAll(async () => {
    await t?.close();
    await bare?.close();
    await gateway?.stop();
    await db?.drop();
    await bareDb?.drop();
  });

  const create = (app: TestApp) =>
    app.app.inject({ method: 'POST', url: '/v1/decisions/bnpl', headers: { ...bearer(app.tenant.live.apiKey), 'content-type': 'application/json' }, payload: JSON.stringify({ consumer, transaction }) });
  const eventTypes = async (app: TestApp, id: string) => (await app.ctx.storage.db.selectFrom('events').select('type').where('subject_id', '=', id).execute()).map((e) => e.type);

  it('decides from the gateway file and never sends the sandbox a live pull', async () => {
    gateway.setMode('file');
    const r = await create(t);
    expect(r.statusCode).toBe(200);
    expect(r.json().outcome).toBe('approved');
    expect(gateway.requests.at(-1)!.body).toMatchObject({ subject: { first_name: 'Lena', ssn_last4: '5678' } });
    const audit = (await t.ctx.decisions.getAuditRecord({ tenantId: t.tenant.tenantId, environment: 'live' }, r.json().decision_id)) as { credit_data: { source: string } };
    expect(audit.credit_data.source).toMatch(/^gateway:/);
  });

  it('declines with AA-14 when the bureau has no file', async () => {
    gateway.setMode('no_file');
    const body = (await create(t)).json();
    expect(body.outcome).toBe('declined');
    expect(body.decline_reasons[0].code).toBe('AA-14');
  });

  for (const mode of [{ kind: 'file', delayMs: 3_000 }, { kind: 'server_error' }, { kind: 'reset' }, { kind: 'malformed_json' }] as const) {
    it(`refers with AA-25 and score.errored when the gateway answers ${mode.kind}${'delayMs' in mode ? ' too slowly' : ''}`, async () => {
      gateway.setMode(mode);
      const r = await create(t);
      expect(r.statusCode).toBe(200);
      const body = r.json();
      expect(body.outcome).toBe('referred');
      expect(body.decline_reasons).toEqual([{ code: 'AA-25', reason: 'Credit information temporarily unavailable' }]);
      expect(await eventTypes(t, body.decision_id)).toContain('score.errored');
    });
  }

  it('refers with AA-25 on live when no gateway is configured', async () => {
    const body = (await create(bare)).json();
    expect(body.outcome).toBe('referred');
    expect(body.decline_reasons[0].code).toBe('AA-25');
    expect(await eventTypes(bare, body.decision_id)).toContain('score.errored');
  });
});
