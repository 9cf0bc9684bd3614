/**
 * The verification review queue reads a page's decisions, verifications and documents together
 * (three reads a page): each item must still get exactly its own decision's facts and documents,
 * in the page's order, and nothing of another tenant.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';

describe.each(await dialectMatrix())('verification review queue pages [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  const clock = new ManualClock('2026-04-04T08:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock, env: { RATE_LIMIT_SANDBOX_PER_S: '100000' } });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  async function decide(amount: string): Promise<string> {
    const consumerId = t.tenant.sandbox.consumers.find((c) => c.tier === 'soft')!.consumerId;
    const r = await t.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({ consumer: { consumer_id: consumerId }, transaction: { amount, currency: 'USD', merchant_name: 'Acme Outdoor', merchant_category: 'sporting_goods' } }),
    });
    expect(r.statusCode, r.body).toBe(200);
    return r.json<{ decision_id: string }>().decision_id;
  }

  async function queue(decisionId: string, documentTypes: string[]): Promise<void> {
    const store = t.ctx.storage.db;
    const decision = { id: decisionId, tenant_id: t.tenant.tenantId, environment: 'sandbox' as const };
    await store.transaction().execute((trx) => t.ctx.documentReview.openItem(trx, decision, 'document_uploaded'));
    for (const [i, type] of documentTypes.entries()) {
      await store
        .insertInto('verification_documents')
        .values({ id: `${decisionId.slice(0, 8)}-doc-${i}`, decision_id: decisionId, tenant_id: decision.tenant_id, environment: 'sandbox', content_type: 'application/pdf', size_bytes: 100 + i, sha256: 'ab'.repeat(32), sealed_content: 'sealed', created_at: clock.now().getTime() + i, document_request_id: null, document_type: type })
        .execute();
    }
    clock.advance(1_000);
  }

  it('each item of a page carries its own decision, verification state and documents, oldest first', async () => {
    const [a, b, c] = [await decide('100.00'), await decide('200.00'), await decide('300.00')];
    await queue(a, ['proof_of_income', 'proof_of_address']);
    await queue(b, []);
    await queue(c, ['proof_of_identity']);
    const scope = { tenantId: t.tenant.tenantId, environment: 'sandbox' as const };

    const page = await t.ctx.documentReview.list(scope, 'pending', { limit: 10, offset: 0 });
    expect(page.total).toBe(3);
    expect(page.items.map((item) => [item.decisionId, item.documents.map((d) => d.documentType)])).toEqual([
      [a, ['proof_of_income', 'proof_of_address']],
      [b, []],
      [c, ['proof_of_identity']],
    ]);
    for (const item of page.items) expect(item).toMatchObject({ kycTier: 'soft', verificationState: null, status: 'pending' });

    const second = await t.ctx.documentReview.list(scope, 'pending', { limit: 2, offset: 1 });
    expect(second.items.map((item) => item.decisionId)).toEqual([b, c]);
    expect((await t.ctx.documentReview.get(scope, c))?.documents.map((d) => d.sizeBytes)).toEqual([100]);
    expect(await t.ctx.documentReview.get({ ...scope, environment: 'live' }, a)).toBeNull();
  });
});
