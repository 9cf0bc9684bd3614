/**
 * Migration 0026 (a delivery's row lighter to claim and record), on SQLite and PostgreSQL:
 * - no index on `event_id` alone; on PostgreSQL the table's fillfactor is 50; down brings back
 *   0015's 75 and the index, up takes them away again;
 * - the one reader that used the index, the deliveries of a decision's events
 *   (`listDeliveriesOfEvents`), finds them through the scope's endpoints: every delivery of the
 *   scope's events, to each of its endpoints, and nothing of another lender's events or
 *   environment, even when asked for them by id.
 */
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as m0026 from '../../../src/db/migrations/0026-delivery-rows-lighter.js';
import type { Database } from '../../../src/db/schema.js';
import type { WebhookScope } from '../../../src/modules/webhooks/webhooks.service.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';
import { appendEvents } from '../../support/webhook-events.js';

describe.each(await dialectMatrix())('delivery rows after migration 0026 [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  let store: Kysely<Database>;

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db);
    store = t.ctx.storage.db;
  });

  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const indexes = async (): Promise<string[]> =>
    dialect === 'postgres'
      ? (await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'webhook_deliveries' order by 1`.execute(store)).rows.map((r) => r.name)
      : (await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'webhook_deliveries' order by 1`.execute(store)).rows.map((r) => r.name);
  const fillfactor = async (): Promise<string | null> => {
    if (dialect !== 'postgres') return null;
    const { rows } = await sql<{ options: string[] | null }>`select reloptions as options from pg_class where relname = 'webhook_deliveries'`.execute(store);
    return rows[0]?.options?.find((o) => o.startsWith('fillfactor=')) ?? null;
  };

  it('has no index on event_id alone and, on PostgreSQL, a fillfactor of 50; down and up again', async () => {
    const now = await indexes();
    expect(now).not.toContain('webhook_deliveries_event');
    expect(now).toContain('webhook_deliveries_endpoint_due');
    expect(await fillfactor()).toBe(dialect === 'postgres' ? 'fillfactor=50' : null);
    const migration = store as unknown as Kysely<unknown>;
    await m0026.down(migration);
    expect(await indexes()).toEqual([...now, 'webhook_deliveries_event'].sort());
    expect(await fillfactor()).toBe(dialect === 'postgres' ? 'fillfactor=75' : null);
    await m0026.up(migration);
    expect(await indexes()).toEqual(now);
    expect(await fillfactor()).toBe(dialect === 'postgres' ? 'fillfactor=50' : null);
  });

  it("lists the deliveries of a scope's events to each of its endpoints, and nothing of another scope's", async () => {
    const scope: WebhookScope = { tenantId: t.tenant.tenantId, environment: 'sandbox' };
    const live: WebhookScope = { tenantId: t.tenant.tenantId, environment: 'live' };
    const other = await t.ctx.tenants.createTenant({ name: 'Another lender' });
    const otherScope: WebhookScope = { tenantId: other.tenantId, environment: 'sandbox' };
    const endpoints: string[] = [];
    for (const [s, name] of [[scope, 'a'], [scope, 'b'], [live, 'live'], [otherScope, 'other']] as const) {
      const { endpoint } = await t.ctx.webhooks.createEndpoint(s, { url: `https://hooks.example.test/${name}`, events: '*' });
      if (s === scope) endpoints.push(endpoint.id);
    }
    const mine = await appendEvents(t, scope, 3);
    const liveEvents = await appendEvents(t, live, 2);
    const theirs = await appendEvents(t, otherScope, 2);

    const listed = await t.ctx.webhooks.listDeliveriesOfEvents(scope, [...mine, ...liveEvents, ...theirs]);
    const pairs = listed.map((d) => `${d.endpointId} ${d.eventId}`).sort();
    expect(pairs).toEqual(mine.flatMap((e) => endpoints.map((ep) => `${ep} ${e}`)).sort());
    expect(await t.ctx.webhooks.listDeliveriesOfEvents(scope, theirs)).toEqual([]);
    expect(await t.ctx.webhooks.listDeliveriesOfEvents(otherScope, mine)).toEqual([]);
    expect(await t.ctx.webhooks.listDeliveriesOfEvents(live, mine)).toEqual([]);
    expect(await t.ctx.webhooks.listDeliveriesOfEvents(live, liveEvents)).toHaveLength(2);
  });
});
