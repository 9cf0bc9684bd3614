/**
 * The portal's list of an endpoint's deliveries (webhooks.service.ts `listDeliveries`), on SQLite and
 * PostgreSQL: newest first (created_at, then id), by state or across every state, in pages, before
 * a time, by event type, checked against the same rows sorted here (migrations 0016 and 0017 added
 * indexes to the table; this pins what the list returns). On SQLite, which index each filter reads
 * (`deliveryListQuery` names it, migration 0017): the list runs on the event loop there, so a sort
 * of an endpoint's whole history would hold every request behind an operator's page.
 */
import { CompiledQuery, sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, WebhookDeliveriesTable } from '../../../src/db/schema.js';
import { ManualClock } from '../../../src/lib/clock.js';
import * as m0017 from '../../../src/db/migrations/0017-delivery-list-index.js';
import { deliveryListQuery, type DeliveryListOptions, type WebhookScope } from '../../../src/modules/webhooks/webhooks.service.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';
import { appendEvents } from '../../support/webhook-events.js';

type State = WebhookDeliveriesTable['state'];
const STATES: State[] = ['pending', 'delivered', 'failed', 'cancelled'];

describe.each(await dialectMatrix())("an endpoint's delivery list [%s]", (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  let store: Kysely<Database>;
  let scope: WebhookScope;
  let endpointId: string;
  /** Every delivery of the endpoint, newest first, as the list must order them. */
  let expected: Array<{ id: string; state: State; createdAt: number; eventType: string }>;
  const clock = new ManualClock('2026-06-06T06:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock });
    store = t.ctx.storage.db;
    scope = { tenantId: t.tenant.tenantId, environment: 'sandbox' };
    endpointId = (await t.ctx.webhooks.createEndpoint(scope, { url: 'https://127.0.0.1:9/list', events: '*' })).endpoint.id;
    // Five bursts a minute apart, each of several deliveries created in the same millisecond (ties
    // broken by id), two event types; then every state, dealt out so that each burst has several.
    for (let burst = 0; burst < 5; burst++) {
      await appendEvents(t, scope, 6, 'decision.created');
      await appendEvents(t, scope, 3, 'decision.finalized');
      clock.advance(60_000);
    }
    const rows = await store.selectFrom('webhook_deliveries').select(['id', 'created_at', 'event_type']).where('endpoint_id', '=', endpointId).orderBy('id').execute();
    expect(rows).toHaveLength(45);
    for (const [i, r] of rows.entries()) {
      const state = STATES[(i * 7) % 4]!;
      if (state !== 'pending') await store.updateTable('webhook_deliveries').set({ state, next_attempt_at: null }).where('id', '=', r.id).execute();
    }
    const all = await store.selectFrom('webhook_deliveries').select(['id', 'state', 'created_at', 'event_type']).where('endpoint_id', '=', endpointId).execute();
    expected = all
      .map((r) => ({ id: r.id, state: r.state, createdAt: Number(r.created_at), eventType: r.event_type }))
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const ids = (rows: Array<{ id: string }>) => rows.map((r) => r.id);

  it('across every state: newest first, ties by id, in pages that add up to the whole history', async () => {
    const pages: string[] = [];
    for (let offset = 0; offset < 50; offset += 7) pages.push(...ids(await t.ctx.webhooks.listDeliveries(scope, endpointId, { limit: 7, offset })));
    expect(pages).toEqual(ids(expected));
    expect(ids(await t.ctx.webhooks.listDeliveries(scope, endpointId))).toEqual(ids(expected));
  });

  it('by state, before a time and by event type, alone and together', async () => {
    for (const state of STATES) {
      const ofState = expected.filter((d) => d.state === state);
      expect(ofState.length).toBeGreaterThan(5);
      expect(ids(await t.ctx.webhooks.listDeliveries(scope, endpointId, { state }))).toEqual(ids(ofState));
      expect(ids(await t.ctx.webhooks.listDeliveries(scope, endpointId, { state, limit: 3, offset: 2 }))).toEqual(ids(ofState.slice(2, 5)));
    }
    const before = new Date(expected[20]!.createdAt);
    expect(ids(await t.ctx.webhooks.listDeliveries(scope, endpointId, { before, limit: 10 }))).toEqual(ids(expected.filter((d) => d.createdAt < before.getTime()).slice(0, 10)));
    const finalized = expected.filter((d) => d.eventType === 'decision.finalized');
    expect(ids(await t.ctx.webhooks.listDeliveries(scope, endpointId, { eventType: 'decision.finalized' }))).toEqual(ids(finalized));
    expect(ids(await t.ctx.webhooks.listDeliveries(scope, endpointId, { eventType: 'decision.finalized', state: 'failed', before }))).toEqual(
      ids(finalized.filter((d) => d.state === 'failed' && d.createdAt < before.getTime())),
    );
  });
  it('SQLite reads each filter through the index named for it: pages in index order, rare states sorted from their own index', async () => {
    const planOf = async (options: DeliveryListOptions) => {
      const query = deliveryListQuery(store, dialect, endpointId, options);
      const { rows } = await store.executeQuery(CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]));
      return (rows as Array<{ detail: string }>).map((r) => r.detail).join('; ');
    };
    if (dialect === 'postgres') {
      // PostgreSQL plans from its statistics: nothing is named.
      expect(deliveryListQuery(store, dialect, endpointId, { state: 'pending' }).sql).not.toMatch(/indexed by/i);
      return;
    }
    const before = new Date(expected[20]!.createdAt);
    const inOrder: DeliveryListOptions[] = [{}, { offset: 20, limit: 7 }, { state: 'delivered' }, { eventType: 'decision.finalized' }, { before }, { state: 'delivered', eventType: 'decision.created', before }];
    for (const options of inOrder) {
      const plan = await planOf(options);
      expect(plan, JSON.stringify(options)).toMatch(/USING INDEX webhook_deliveries_endpoint_created \(endpoint_id=\?/);
      expect(plan, JSON.stringify(options)).not.toMatch(/TEMP B-TREE/);
    }
    expect(await planOf({ state: 'pending' })).toMatch(/USING INDEX webhook_deliveries_pending \(endpoint_id=\?\)/);
    for (const state of ['failed', 'cancelled'] as const) expect(await planOf({ state })).toMatch(/USING INDEX webhook_deliveries_endpoint_due \(endpoint_id=\? AND state=\?\)/);
    expect(await planOf({ eventId: expected[3]!.id })).toMatch(/USING INDEX sqlite_autoindex_webhook_deliveries_\d \(endpoint_id=\? AND event_id=\?\)/);
  });

  it('0017: the list\'s index exists on SQLite only; down and up again', async () => {
    const names = async () =>
      dialect === 'postgres'
        ? (await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'webhook_deliveries'`.execute(store)).rows.map((r) => r.name)
        : (await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'webhook_deliveries'`.execute(store)).rows.map((r) => r.name);
    const migration = store as unknown as Kysely<unknown>;
    const now = (await names()).sort();
    expect(now.includes('webhook_deliveries_endpoint_created')).toBe(dialect === 'sqlite');
    await m0017.down(migration);
    expect((await names()).includes('webhook_deliveries_endpoint_created')).toBe(false);
    await m0017.up(migration);
    expect((await names()).sort()).toEqual(now);
    // The list still answers in order once the index is back.
    expect(ids(await t.ctx.webhooks.listDeliveries(scope, endpointId))).toEqual(ids(expected));
  });
});
