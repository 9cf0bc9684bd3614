/**
 * A claim's cost does not grow with the endpoints that have nothing queued (ADR 0025), on SQLite
 * and PostgreSQL. The service has 304 active endpoints of 19 other lenders with nothing to deliver,
 * and one lender with four endpoints: two with due deliveries, one whose deliveries are all
 * scheduled for later, one disabled with deliveries still pending.
 * - The worker delivers exactly the due work: the two endpoints' deliveries, nothing of the other two.
 * - What the listing reads. PostgreSQL: EXPLAIN ANALYZE of both statements that list candidates
 *   (alone, and behind a cycle's results) reads the endpoints table, and sums the counts in flight,
 *   only for the endpoints that have pending deliveries; the listing this replaced read all 308
 *   endpoints and summed each one's counts. SQLite: the plan looks each endpoint up by id from the
 *   pending ones and never scans the endpoints table.
 * - Migration 0016 itself: the queue's index is partial (pending rows only), 0003's index stays;
 *   down removes the partial index, up brings it back.
 */
import { CompiledQuery, sql, type Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as m0016 from '../../../src/db/migrations/0016-webhook-pending-index.js';
import type { Database } from '../../../src/db/schema.js';
import { ManualClock } from '../../../src/lib/clock.js';
import { LISTING_STATEMENTS } from '../../../src/modules/webhooks/delivery-worker.js';
import { MAX_ENDPOINTS_PER_ENVIRONMENT, type WebhookScope } from '../../../src/modules/webhooks/webhooks.service.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';
import { appendEvents } from '../../support/webhook-events.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const IDLE_LENDERS = 19;
const CAP = 8;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

/**
 * Per relation, what its scans read over all their executions: rows produced or filtered out, and
 * how many times a scan of it ran (a lookup per endpoint is a loop, even one that finds nothing).
 */
function reads(plan: PlanNode, into = new Map<string, { rows: number; loops: number }>()): Map<string, { rows: number; loops: number }> {
  if (plan['Relation Name']) {
    const seen = into.get(plan['Relation Name']) ?? { rows: 0, loops: 0 };
    seen.rows += (plan['Actual Rows'] + (plan['Rows Removed by Filter'] ?? 0)) * plan['Actual Loops'];
    seen.loops += plan['Actual Loops'];
    into.set(plan['Relation Name'], seen);
  }
  for (const child of plan.Plans ?? []) reads(child, into);
  return into;
}

describe.each(await dialectMatrix())('a claim among many idle endpoints [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  let receiver: WebhookReceiver;
  let store: Kysely<Database>;
  const clock = new ManualClock('2026-05-05T08:00:00.000Z');
  const ids: Record<'due1' | 'due2' | 'later' | 'disabled', string> = {} as never;

  beforeAll(async () => {
    [db, receiver] = await Promise.all([createTestDatabase(dialect), startWebhookReceiver()]);
    t = await createTestApp(db, { clock, overrides: { webhookDelivery: { ca: receiver.ca, timeoutMs: 2_000, leaseMs: 30_000 } } });
    store = t.ctx.storage.db;
    for (let lender = 0; lender < IDLE_LENDERS; lender++) {
      const { tenantId } = await t.ctx.tenants.createTenant({ name: `Idle lender ${lender}` });
      for (let i = 0; i < MAX_ENDPOINTS_PER_ENVIRONMENT; i++) {
        await t.ctx.webhooks.createEndpoint({ tenantId, environment: 'sandbox' }, { url: receiver.url(`/idle-${lender}-${i}`), events: '*' });
      }
    }
    const scope: WebhookScope = { tenantId: t.tenant.tenantId, environment: 'sandbox' };
    for (const name of ['due1', 'due2', 'later', 'disabled'] as const) {
      ids[name] = (await t.ctx.webhooks.createEndpoint(scope, { url: receiver.url(`/${name}`), events: '*' })).endpoint.id;
    }
    await appendEvents(t, scope, 5);
    // Scheduled an hour from now (as a retry would be), and an endpoint disabled with work pending.
    await store.updateTable('webhook_deliveries').set({ next_attempt_at: clock.now().getTime() + 3_600_000 }).where('endpoint_id', '=', ids.later).execute();
    await store.updateTable('webhook_endpoints').set({ state: 'disabled' }).where('id', '=', ids.disabled).execute();
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await receiver?.stop();
  });

  it('the service has the endpoints this suite is about: 304 idle, 3 active of the lender with work, 20 deliveries pending', async () => {
    const active = await store.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<number | string>().as('n')).where('state', '=', 'active').executeTakeFirstOrThrow();
    expect(Number(active.n)).toBe(IDLE_LENDERS * MAX_ENDPOINTS_PER_ENVIRONMENT + 3);
    const pending = await store.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number | string>().as('n')).where('state', '=', 'pending').executeTakeFirstOrThrow();
    expect(Number(pending.n)).toBe(20);
  });

  it.runIf(dialect === 'postgres')('PostgreSQL: both listings read only the endpoints with pending deliveries, and sum only their counts in flight', async () => {
    const client = new pg.Client({ connectionString: db.databaseUrl! });
    await client.connect();
    try {
      const now = clock.now().getTime();
      const explain = async (text: string, values: unknown[]) => {
        const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`explain (analyze, format json) ${text}`, values);
        return reads(rows[0]!['QUERY PLAN'][0]!.Plan);
      };
      const alone = await explain(LISTING_STATEMENTS.postgres, [now, CAP, 64, 'worker-under-test', 2]);
      // A cycle with no results to write: empty batches ($13..$15 as JSON arrays), this worker holding nothing.
      const none = (n: number) => Array.from({ length: n }, () => []);
      const afterResults = await explain(LISTING_STATEMENTS.postgresAfterResults, [...none(12), '[]', '[]', '[]', ...none(3), 'worker-under-test', [], [], now + 30_000, now, CAP, 64, [], [], 2]);
      for (const read of [alone, afterResults]) {
        // Four endpoints have pending deliveries (due1, due2, later, disabled), plus the recursion's
        // last step, which finds none but is still a loop of the lookup (EXPLAIN's rows per loop
        // are rounded averages, so it may count as one row).
        const text = JSON.stringify([...read]);
        expect(read.get('webhook_endpoints')?.rows, text).toBeLessThanOrEqual(5);
        // (Behind results, the results' own reset of failure counts reads the endpoints once more.)
        expect(read.get('webhook_endpoints')?.loops, text).toBeLessThanOrEqual(6);
        // The sum of the counts in flight: at most once per pending endpoint in each place it is read.
        expect(read.get('webhook_in_flight')?.loops ?? 0, text).toBeLessThanOrEqual(2 * 4);
      }
    } finally {
      await client.end();
    }
  });

  it.runIf(dialect === 'sqlite')('SQLite: the listing starts from the pending endpoints and looks each up by id, never scanning the endpoints table', async () => {
    const plan = await store.executeQuery(CompiledQuery.raw(`explain query plan ${LISTING_STATEMENTS.sqlite}`, [...Array(13).fill(0), "[]", 0]));
    const details = (plan.rows as Array<{ detail: string }>).map((r) => r.detail);
    expect(details, details.join('\n')).toContain('SCAN p');
    expect(details.some((d) => /^SEARCH e USING .*\(id=\?\)$/.test(d)), details.join('\n')).toBe(true);
    expect(details.some((d) => /^SCAN e\b/.test(d)), details.join('\n')).toBe(false);
    expect(details.some((d) => /USING (COVERING )?INDEX webhook_deliveries_pending \(endpoint_id>\?\)/.test(d)), details.join('\n')).toBe(true);
  });

  it('the worker delivers exactly the due work among them: both due endpoints, nothing scheduled later, nothing for the disabled one', async () => {
    await t.ctx.webhookDelivery.deliverDue();
    const byPath = new Map<string, number>();
    for (const r of receiver.requests) byPath.set(r.path, (byPath.get(r.path) ?? 0) + 1);
    expect(Object.fromEntries(byPath)).toEqual({ '/due1': 5, '/due2': 5 });
    const states = await store
      .selectFrom('webhook_deliveries')
      .select(['endpoint_id', 'state'])
      .where('endpoint_id', 'in', [ids.later, ids.disabled])
      .execute();
    expect(states).toHaveLength(10);
    for (const s of states) expect(s.state).toBe('pending');
  });

  it("0016: the queue's index holds pending rows only, 0003's stays; down and up again", async () => {
    const definitions = async () => {
      const rows =
        dialect === 'postgres'
          ? (await sql<{ name: string; definition: string }>`select indexname as name, indexdef as definition from pg_indexes where tablename = 'webhook_deliveries'`.execute(store)).rows
          : (await sql<{ name: string; definition: string }>`select name, sql as definition from sqlite_master where type = 'index' and tbl_name = 'webhook_deliveries' and sql is not null`.execute(store)).rows;
      return new Map(rows.map((r) => [r.name, r.definition.replace(/\s+/g, ' ')]));
    };
    const migration = store as unknown as Kysely<unknown>;
    const now = await definitions();
    expect(now.get('webhook_deliveries_pending')).toMatch(/\(endpoint_id, next_attempt_at\) WHERE \(?state = 'pending'(::text)?\)?$/i);
    // 0003's index stays for the portal's lists by state, replays and deletions.
    expect(now.get('webhook_deliveries_endpoint_due')).toMatch(/\(\s*"?endpoint_id"?, "?state"?, "?next_attempt_at"?\s*\)$/);
    await m0016.down(migration);
    const before = await definitions();
    expect(before.has('webhook_deliveries_pending')).toBe(false);
    expect(before.get('webhook_deliveries_endpoint_due')).toBe(now.get('webhook_deliveries_endpoint_due'));
    await m0016.up(migration);
    expect(await definitions()).toEqual(now);
  });
});
