/**
 * WEBHOOK_RETRY_DELAYS_MS reaches the delivery worker: with "2000,3000" a failing delivery is
 * attempted at once, 2 s and then 3 s later, and is failed after its third attempt (the soak runs
 * on such a schedule; the default one is proven in delivery.test.ts). Clock driven by the test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

describe.each(await dialectMatrix())('a configured webhook retry schedule [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  let receiver: WebhookReceiver;
  const clock = new ManualClock('2026-03-03T10:00:00.000Z');

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock, env: { WEBHOOK_RETRY_DELAYS_MS: '2000,3000' }, overrides: { webhookDelivery: { ca: receiver.ca, timeoutMs: 2_000, leaseMs: 30_000 } } });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await receiver?.stop();
  });

  it('attempts at once, +2 s, +3 s, then marks the delivery failed', async () => {
    const scope = { tenantId: t.tenant.tenantId, environment: 'sandbox' as const };
    receiver.setMode('/always-500', 500);
    const { endpoint } = await t.ctx.webhooks.createEndpoint(scope, { url: receiver.url('/always-500'), events: '*', description: null });
    await t.ctx.storage.db.transaction().execute((trx) => t.ctx.outbox.append(trx, scope, [{ type: 'decision.finalized', subjectId: null, data: { decision_id: '00000000-0000-4000-8000-000000000001' } }]));

    expect(await t.ctx.webhookDelivery.deliverDue()).toBe(1);
    for (const delay of [2000, 3000]) {
      clock.advance(delay - 1);
      expect(await t.ctx.webhookDelivery.deliverDue(), `not before ${delay} ms`).toBe(0);
      clock.advance(1);
      expect(await t.ctx.webhookDelivery.deliverDue()).toBe(1);
    }
    const delivery = await t.ctx.storage.db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpoint.id).executeTakeFirstOrThrow();
    expect(delivery).toMatchObject({ state: 'failed', attempts: 3, next_attempt_at: null });
    expect(receiver.requestsTo('/always-500')).toHaveLength(3);
    clock.advance(24 * 3600_000);
    expect(await t.ctx.webhookDelivery.deliverDue()).toBe(0);
  });
});
