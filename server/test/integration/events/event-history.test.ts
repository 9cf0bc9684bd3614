/**
 * The event history API (GET /v1/events, GET /v1/events/{id}) on SQLite and PostgreSQL, with a
 * ManualClock: the envelope is the webhook's (without `attempt`) byte for byte; newest first with a
 * stable tie-break across pages; filters by type and time; the 30-day window; scoping by tenant and
 * environment; every bad parameter is a 400 naming it. Then the recovery path the issue asks for:
 * a receiver outage while decisions happen, and reconciliation through the API finds every event
 * the receiver missed.
 */
import type { Kysely } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../../src/db/schema.js';
import { ManualClock } from '../../../src/lib/clock.js';
import { EVENT_TYPES, type EventType, type NewEvent } from '../../../src/modules/events/outbox.js';
import type { WebhookScope } from '../../../src/modules/webhooks/webhooks.service.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

interface Envelope {
  id: string;
  type: string;
  created: number;
  data: Record<string, unknown>;
}
interface EventList {
  object: 'list';
  data: Envelope[];
  has_more: boolean;
  next_cursor: string | null;
}

const DAY = 24 * 3600_000;

describe.each(await dialectMatrix())('event history API [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  let receiver: WebhookReceiver;
  let store: Kysely<Database>;
  let sandbox: WebhookScope;
  const clock = new ManualClock('2026-03-02T10:00:00.000Z');

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, {
      clock,
      env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' },
      overrides: { webhookDelivery: { ca: receiver.ca, timeoutMs: 2_000, leaseMs: 30_000 } },
    });
    store = t.ctx.storage.db;
    sandbox = { tenantId: t.tenant.tenantId, environment: 'sandbox' };
  });
  afterEach(async () => {
    await store.updateTable('webhook_deliveries').set({ state: 'cancelled', next_attempt_at: null, lease_token: null, leased_until: null }).where('state', '=', 'pending').execute();
    await store.updateTable('webhook_endpoints').set({ state: 'deleted' }).where('state', '<>', 'deleted').execute();
    receiver.clear();
    receiver.setMode('*', 200);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await receiver?.stop();
  });

  const key = () => t.tenant.sandbox.apiKey;
  const get = (url: string, apiKey = key()) => t.app.inject({ method: 'GET', url, headers: bearer(apiKey) });
  async function list(query: string, apiKey = key()): Promise<EventList> {
    const r = await get(`/v1/events${query}`, apiKey);
    expect(r.statusCode, r.body).toBe(200);
    return r.json<EventList>();
  }
  /** Every page, following next_cursor. */
  async function listAll(query: string, apiKey = key()): Promise<Envelope[]> {
    const out: Envelope[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 1000; pages++) {
      const params = new URLSearchParams(query.replace(/^\?/, ''));
      if (cursor) params.set('starting_after', cursor);
      const page = await list(`?${params.toString()}`, apiKey);
      out.push(...page.data);
      if (!page.has_more) {
        expect(page.next_cursor).toBeNull();
        return out;
      }
      expect(page.next_cursor).toBe(page.data[page.data.length - 1]!.id);
      cursor = page.next_cursor;
    }
    throw new Error('pagination did not end');
  }
  async function append(types: EventType[], scope = sandbox): Promise<string[]> {
    const events: NewEvent[] = types.map((type, i) => ({ type, subjectId: null, data: { n: i, amount: '12.50', nested: { ok: true } } }));
    const stored = await store.transaction().execute((trx) => t.ctx.outbox.append(trx, scope, events));
    return stored.map((e) => e.id);
  }
  const createDecision = (amount: string, apiKey = key()) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { ...bearer(apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({
        consumer: { consumer_id: t.tenant.sandbox.consumers.find((c) => c.tier === 'soft')!.consumerId },
        transaction: { amount, currency: 'USD', merchant_name: 'Acme Outdoor', merchant_category: 'sporting_goods' },
      }),
    });
  const isOrderedNewestFirst = (events: Envelope[], rows: Map<string, number>) =>
    events.every((e, i) => {
      if (i === 0) return true;
      const prev = events[i - 1]!;
      const a = rows.get(prev.id)!;
      const b = rows.get(e.id)!;
      return a > b || (a === b && prev.id > e.id);
    });
  const createdAtOf = async (ids: string[]) =>
    new Map((await store.selectFrom('events').select(['id', 'created_at']).where('id', 'in', ids).execute()).map((r) => [r.id, r.created_at]));

  it('pages newest first with a stable tie-break: no event skipped or repeated, whatever the page size', async () => {
    clock.advance(DAY);
    const since = Math.floor(clock.now().getTime() / 1000);
    const ids: string[] = [];
    // Batches share one millisecond, so (created_at, id) must break the ties.
    for (let batch = 0; batch < 6; batch++) {
      ids.push(...(await append(['decision.created', 'application.created', 'score.completed', 'decision.finalized'])));
      clock.advance(batch % 2 === 0 ? 0 : 1500);
    }
    const rows = await createdAtOf(ids);
    for (const limit of [1, 3, 7, 24, 100]) {
      const all = await listAll(`?created_gte=${since}&limit=${limit}`);
      expect(all.map((e) => e.id).sort()).toEqual([...ids].sort());
      expect(new Set(all.map((e) => e.id)).size).toBe(ids.length);
      expect(isOrderedNewestFirst(all, rows)).toBe(true);
    }
    const first = await list(`?created_gte=${since}`);
    expect(first.data).toHaveLength(20); // the default page size
    expect(first.has_more).toBe(true);
    expect(Object.keys(first)).toEqual(['object', 'data', 'has_more', 'next_cursor']);
    expect(first.object).toBe('list');
    expect(Object.keys(first.data[0]!)).toEqual(['id', 'type', 'created', 'data']);
  });

  it('filters by one or several types (comma-separated or repeated) and by a [created_gte, created_lt) window', async () => {
    clock.advance(DAY);
    const t0 = Math.floor(clock.now().getTime() / 1000);
    const a = await append(['decision.created', 'decision.finalized']);
    clock.advance(10_000);
    const b = await append(['decision.adjusted', 'decision.finalized', 'score.errored']);
    clock.advance(10_000);
    const c = await append(['decision.finalized']);
    const ids = (events: Envelope[]) => events.map((e) => e.id).sort();

    expect(ids(await listAll(`?created_gte=${t0}&type=decision.finalized`))).toEqual([a[1]!, b[1]!, c[0]!].sort());
    expect(ids(await listAll(`?created_gte=${t0}&type=decision.adjusted,score.errored`))).toEqual([b[0]!, b[2]!].sort());
    expect(ids(await listAll(`?created_gte=${t0}&type=decision.adjusted&type=decision.created`))).toEqual([a[0]!, b[0]!].sort());
    // created_gte inclusive, created_lt exclusive, both in unix seconds like the envelope's `created`.
    expect(ids(await listAll(`?created_gte=${t0 + 10}&created_lt=${t0 + 20}`))).toEqual([...b].sort());
    expect(ids(await listAll(`?created_gte=${t0}&created_lt=${t0 + 10}`))).toEqual([...a].sort());
    const window = await listAll(`?created_gte=${t0 + 10}`);
    expect(window.every((e) => e.created >= t0 + 10)).toBe(true);
    expect(ids(window)).toEqual([...b, ...c].sort());
  });

  it('returns exactly the envelope the webhook carried, without attempt; retrieve by id gives the same', async () => {
    clock.advance(DAY);
    const since = Math.floor(clock.now().getTime() / 1000);
    await t.ctx.webhooks.createEndpoint(sandbox, { url: receiver.url('/hooks'), events: '*', description: 'envelope' });
    const r = await createDecision('88.00');
    expect(r.statusCode, r.body).toBe(200);
    await t.ctx.webhookDelivery.deliverDue();
    const delivered = receiver.requestsTo('/hooks');
    expect(delivered.length).toBeGreaterThanOrEqual(4);
    const listed = await listAll(`?created_gte=${since}`);
    expect(listed.map((e) => e.id).sort()).toEqual(delivered.map((d) => d.headers['svc-webhook-id']).sort());
    for (const d of delivered) {
      const body = JSON.parse(d.body) as Envelope & { attempt: number };
      const { attempt, ...withoutAttempt } = body;
      expect(attempt).toBe(1);
      const one = await get(`/v1/events/${body.id}`);
      expect(one.statusCode).toBe(200);
      // Byte for byte: the delivery body with `"attempt":1,` taken out.
      expect(one.body).toBe(d.body.replace('"attempt":1,', ''));
      expect(one.json()).toEqual(withoutAttempt);
      expect(listed.find((e) => e.id === body.id)).toEqual(withoutAttempt);
      expect(d.headers['svc-webhook-type']).toBe(body.type);
    }
    // An uppercase id is the same event.
    expect((await get(`/v1/events/${delivered[0]!.headers['svc-webhook-id']!.toUpperCase()}`)).statusCode).toBe(200);
  });

  it('is scoped by tenant and environment: another tenant\'s or the live environment\'s events are invisible (404, and a 400 cursor)', async () => {
    clock.advance(DAY);
    const since = Math.floor(clock.now().getTime() / 1000);
    const other = await t.ctx.tenants.createTenant({ name: 'Other Lender' });
    const [mine] = await append(['decision.created']);
    const [theirs] = await append(['decision.created'], { tenantId: other.tenantId, environment: 'sandbox' });
    const [myLive] = await append(['decision.created'], { ...sandbox, environment: 'live' });

    expect((await listAll(`?created_gte=${since}`)).map((e) => e.id)).toEqual([mine]);
    expect((await listAll(`?created_gte=${since}`, t.tenant.live.apiKey)).map((e) => e.id)).toEqual([myLive]);
    expect((await listAll(`?created_gte=${since}`, other.sandbox.apiKey)).map((e) => e.id)).toEqual([theirs]);

    for (const [id, apiKey] of [[theirs!, key()], [myLive!, key()], [mine!, t.tenant.live.apiKey], [mine!, other.sandbox.apiKey]] as const) {
      const r = await get(`/v1/events/${id}`, apiKey);
      expect(r.statusCode).toBe(404);
      expect(errorOf(r)).toMatchObject({ error: 'not_found', message: expect.stringContaining('event_id') });
      const cursor = await get(`/v1/events?starting_after=${id}`, apiKey);
      expect(cursor.statusCode).toBe(400);
      expect(errorOf(cursor).message).toMatch(/^starting_after names no event/);
    }
    // The same answer for a well-formed id nobody has: nothing tells the cases apart.
    const unknown = await get('/v1/events/6f1c2c7e-9a54-4f0e-8d3b-1a2b3c4d5e6f');
    expect(errorOf(unknown).message).toBe(errorOf(await get(`/v1/events/${theirs}`)).message);
  });

  it('shows only the last 30 days', async () => {
    clock.advance(DAY);
    const [old] = await append(['decision.finalized']);
    const oldCreated = Math.floor(clock.now().getTime() / 1000);
    clock.advance(29 * DAY);
    expect((await get(`/v1/events/${old}`)).statusCode).toBe(200);
    expect((await listAll(`?created_gte=${oldCreated}`)).map((e) => e.id)).toContain(old);
    clock.advance(DAY + 1000);
    const [fresh] = await append(['decision.finalized']);
    expect((await get(`/v1/events/${old}`)).statusCode).toBe(404);
    // An older created_gte is clamped to 30 days ago, not refused.
    const all = await listAll(`?created_gte=0`);
    expect(all.map((e) => e.id)).toContain(fresh);
    expect(all.map((e) => e.id)).not.toContain(old);
    const cutoff = clock.now().getTime() / 1000 - 30 * 24 * 3600;
    expect(all.every((e) => e.created >= Math.floor(cutoff))).toBe(true);
  });

  it('refuses every bad parameter with a 400 that names it and its rule', async () => {
    const cases: Array<[string, RegExp]> = [
      ['limit=0', /^limit must be a whole number from 1 to 100\.$/],
      ['limit=101', /^limit must be a whole number from 1 to 100\.$/],
      ['limit=ten', /^limit must be a whole number from 1 to 100\.$/],
      ['type=decision.finalised', /^type "decision\.finalised" is not an event type; allowed: decision\.finalized, decision\.adjusted, .*webhook\.test\.$/],
      ['type=decision.finalized,', /^type has an empty entry/],
      ['created_gte=yesterday', /^created_gte must be a time in unix seconds/],
      ['created_lt=1769428800.5', /^created_lt must be a time in unix seconds/],
      ['created_gte=1769428800&created_lt=1769428800', /^created_lt \(1769428800\) must be later than created_gte \(1769428800\)/],
      ['starting_after=evt_123', /^starting_after must be an event id \(a UUID\)/],
      ['starting_after=6f1c2c7e-9a54-4f0e-8d3b-1a2b3c4d5e6f', /^starting_after names no event of this API key's tenant and environment/],
      ['cursor=abc', /^cursor is not a recognised query parameter/],
    ];
    for (const [query, message] of cases) {
      const r = await get(`/v1/events?${query}`);
      expect(r.statusCode, query).toBe(400);
      const body = errorOf(r);
      expect(body.error).toBe('invalid_request');
      expect(body.message, query).toMatch(message);
    }
    const badId = await get('/v1/events/not-a-uuid');
    expect(errorOf(badId).message).toBe('event_id must be an event id (a UUID).');
    expect(EVENT_TYPES.length).toBeGreaterThan(10);
  });

  it('needs an API key like every /v1 route', async () => {
    for (const url of ['/v1/events', '/v1/events/6f1c2c7e-9a54-4f0e-8d3b-1a2b3c4d5e6f']) {
      const r = await t.app.inject({ method: 'GET', url });
      expect(r.statusCode).toBe(401);
      expect(errorOf(r).error).toBe('invalid_api_key');
    }
    expect((await t.app.inject({ method: 'POST', url: '/v1/events', headers: bearer(key()) })).statusCode).toBe(405);
  });

  it('recovers every event a receiver missed during an outage by paging through the outage window', async () => {
    clock.advance(DAY);
    const { endpoint } = await t.ctx.webhooks.createEndpoint(sandbox, { url: receiver.url('/outage'), events: '*', description: 'outage' });
    // Before the outage: delivered.
    expect((await createDecision('60.00')).statusCode).toBe(200);
    await t.ctx.webhookDelivery.deliverDue();
    const before = new Set(receiver.requestsTo('/outage').map((r) => r.headers['svc-webhook-id']));
    expect(before.size).toBeGreaterThan(0);

    // The outage: the receiver answers 503 while decisions keep coming, and stays down past the retries we run.
    clock.advance(5_000);
    const outageStart = Math.floor(clock.now().getTime() / 1000);
    receiver.setMode('/outage', 503);
    const decisionIds: string[] = [];
    for (let i = 0; i < 7; i++) {
      const r = await createDecision(`${70 + i}.00`);
      expect(r.statusCode, r.body).toBe(200);
      decisionIds.push(r.json<{ decision_id: string }>().decision_id);
      clock.advance(700);
    }
    await t.ctx.webhookDelivery.deliverDue();
    clock.advance(61_000); // attempt 2 is due after 1 minute: it fails too
    await t.ctx.webhookDelivery.deliverDue();
    const outageEnd = Math.floor(clock.now().getTime() / 1000) + 1;
    receiver.setMode('/outage', 200);

    // What the receiver acknowledged with a 2xx: only the events from before the outage.
    const attempts = await store
      .selectFrom('webhook_attempts as a')
      .innerJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
      .select(['d.event_id', 'a.response_status'])
      .where('d.endpoint_id', '=', endpoint.id)
      .execute();
    const acknowledged = new Set(attempts.filter((a) => a.response_status !== null && a.response_status < 300).map((a) => a.event_id));
    const sentDuringOutage = new Set(attempts.filter((a) => a.response_status === 503).map((a) => a.event_id));
    expect(sentDuringOutage.size).toBeGreaterThanOrEqual(7 * 4); // application.created, decision.created, score.completed, decision.finalized per decision
    // Reconcile: page through the outage window, 5 at a time.
    const recovered = await listAll(`?created_gte=${outageStart}&created_lt=${outageEnd}&limit=5`);
    const recoveredIds = new Set(recovered.map((e) => e.id));
    for (const id of sentDuringOutage) expect(recoveredIds.has(id), `missed event ${id} recovered`).toBe(true);
    const missed = [...recoveredIds].filter((id) => !acknowledged.has(id));
    expect(missed.length).toBe(recoveredIds.size);
    // Every decision made during the outage has its decision.finalized in the recovered set.
    const finalized = recovered.filter((e) => e.type === 'decision.finalized').map((e) => e.data.decision_id);
    expect(new Set(finalized)).toEqual(new Set(decisionIds));
    // Nothing outside the window and nothing acknowledged before it.
    for (const id of before) expect(recoveredIds.has(id!)).toBe(false);
    // The recovered envelopes are what the failed attempts carried, minus `attempt`.
    for (const req of receiver.requestsTo('/outage').filter((r) => sentDuringOutage.has(r.headers['svc-webhook-id'] ?? ''))) {
      const { attempt: _attempt, ...env } = JSON.parse(req.body) as Envelope & { attempt: number };
      expect(recovered.find((e) => e.id === env.id)).toEqual(env);
    }
  });
});
