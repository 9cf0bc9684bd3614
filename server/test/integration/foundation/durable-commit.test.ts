/**
 * SQLite's commits are made durable off the event loop (db/wal-sync.ts, ADR 0017): the writer
 * commits with synchronous=NORMAL and the WAL is fdatasync'ed on libuv's thread pool. The rule this
 * test holds the server to, through the real HTTP routes, the real group commit and the real
 * delivery worker: nothing committed reaches anyone (a create's 200, a poll, an idempotent replay,
 * a webhook, a write's caller) before the WAL holding it is on disk; and while a sync runs, the
 * next batch is written (the event loop is not waiting for the disk).
 *
 * The test replaces the fdatasync with a gate it can hold. While it is held, commits still happen
 * (a plain connection of the test's own, outside the server's, sees them), but every answer that
 * would show them waits; released, everything goes out.
 */
import SqliteDatabase from 'better-sqlite3';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { ManualClock } from '../../../src/lib/clock.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';
import { settledState, until, walGate } from '../../support/wal-gate.js';

/**
 * With the gate held, lets held syncs return one at a time until `committed` holds. A batch stays
 * open while a sync is in flight, so an earlier write's sync (an API key's last-used time, say)
 * must return before the commit the test waits for can happen. Every sync released here started
 * before that commit, so none of them makes it durable.
 */
async function commitThrough(gate: ReturnType<typeof walGate>, committed: () => boolean, what: string): Promise<void> {
  await until(() => {
    if (committed()) return true;
    gate.releaseOne();
    return false;
  }, what);
}

describe('durable commits off the event loop [sqlite]', () => {
  let db: TestDatabase;
  let t: TestApp;
  let receiver: WebhookReceiver;
  let outside: SqliteDatabase.Database;
  const gate = walGate();
  const clock = new ManualClock('2026-03-03T10:00:00.000Z');

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    db = await createTestDatabase('sqlite');
    t = await createTestApp(db, {
      clock,
      syncWal: gate.sync,
      // Every write on the writer connection, so what is tested here is the wait for its
      // positions: with `auto`, a busy moment of the suite's start-up could send a create to the
      // writer thread, whose own commits are waited for apart (sqlite-writer-thread.test.ts).
      env: { RATE_LIMIT_SANDBOX_PER_S: '100000', CDS_SQLITE_WRITER_THREAD: 'off' },
      overrides: { webhookDelivery: { ca: receiver.ca, timeoutMs: 5_000, leaseMs: 30_000 } },
    });
    // A reader of the file that is not the server's: it sees what is committed, durable or not.
    outside = new SqliteDatabase(path.join(db.dataDir, 'cds.sqlite'), { readonly: true });
  });
  // A failed test must not leave the next one behind a held sync.
  afterEach(() => gate.release());
  afterAll(async () => {
    gate.release();
    outside?.close();
    await t?.close();
    await db?.drop();
    await receiver?.stop();
  });

  const count = (table: string) => (outside.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;
  const softConsumer = () => t.tenant.sandbox.consumers.find((c) => c.tier === 'soft')!.consumerId;
  const create = (key?: string) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
      payload: JSON.stringify({ consumer: { consumer_id: softConsumer() }, transaction: { amount: '150.00', currency: 'USD', merchant_name: 'Acme', merchant_category: 'electronics' } }),
    });

  it('the writer leaves the fsync to the WAL sync: synchronous=NORMAL in WAL mode', async () => {
    const { rows } = await sql<{ synchronous: number }>`pragma synchronous`.execute(t.ctx.storage.db);
    expect(rows[0]!.synchronous).toBe(1);
    expect(t.ctx.storage.walSync).not.toBeNull();
    expect(gate.syncs).toBeGreaterThan(0); // the tenant's provisioning already waited for it
  });

  it('an empty transaction (the delivery worker finding nothing due) is not a write to sync', async () => {
    const wal = t.ctx.storage.walSync!;
    const before = wal.position();
    expect(await t.ctx.webhookDelivery.deliverDue()).toBe(0);
    expect(wal.position()).toBe(before);
    await t.ctx.storage.db.updateTable('tenants').set({ name: 'Test Lender' }).where('id', '=', t.tenant.tenantId).execute();
    expect(wal.position()).toBe(before + 1);
  });

  it('a create is committed but not answered, polled, replayed or sent as a webhook until its WAL sync returns', async () => {
    await t.ctx.webhooks.createEndpoint({ tenantId: t.tenant.tenantId, environment: 'sandbox' }, { url: receiver.url('/durable'), events: '*', description: 'durability' });
    const decisionsBefore = count('decisions');
    gate.hold();

    const first = create('durable-1');
    await commitThrough(gate, () => count('decisions') === decisionsBefore + 1, 'the create committed');
    expect(await settledState(first)).toBe('pending');
    const id = (outside.prepare('select id from decisions order by created_at desc, rowid desc limit 1').get() as { id: string }).id;

    // Everything that could show the committed decision waits for the same sync.
    const poll = t.app.inject({ method: 'GET', url: `/v1/decisions/bnpl/${id}`, headers: bearer(t.tenant.sandbox.apiKey) });
    const replay = create('durable-1');
    const delivering = t.ctx.webhookDelivery.deliverDue();
    // The worker claims the decision's deliveries (its own commit need not wait) and then holds them.
    await until(() => (outside.prepare("select count(*) as n from webhook_deliveries where lease_token is not null").get() as { n: number }).n > 0, 'the worker claimed');
    for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
    expect(await settledState(poll)).toBe('pending');
    expect(await settledState(replay)).toBe('pending');
    expect(await settledState(delivering)).toBe('pending');
    expect(receiver.requests).toHaveLength(0);
    expect(gate.waiting).toBeGreaterThan(0);

    gate.release();
    const answered = await first;
    expect(answered.statusCode, answered.body).toBe(200);
    expect(answered.json<{ decision_id: string }>().decision_id).toBe(id);
    expect((await poll).statusCode).toBe(200);
    const replayed = await replay;
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.body).toBe(answered.body);
    expect(await delivering).toBeGreaterThan(0);
    expect(receiver.requestsTo('/durable').some((r) => r.body.includes(id))).toBe(true);
  });

  it("the delivery worker waits for the API's commits, not for the syncs of its own bookkeeping", async () => {
    await t.ctx.webhooks.createEndpoint({ tenantId: t.tenant.tenantId, environment: 'sandbox' }, { url: receiver.url('/bookkeeping'), events: '*', description: 'bookkeeping' });
    // Answered, so durable: what the worker claims from here needs no sync.
    const answered = await create();
    expect(answered.statusCode, answered.body).toBe(200);
    const id = answered.json<{ decision_id: string }>().decision_id;
    gate.hold();
    // Cycles that claim, then record results and claim again: each commits its own bookkeeping and
    // starts a sync, held here. Were a cycle to wait for the one before it, this would never end.
    let finished = false;
    const delivering = t.ctx.webhookDelivery.deliverDue().then((n) => {
      finished = true;
      return n;
    });
    await until(() => finished, 'the worker delivered and recorded with every sync held');
    expect(await delivering).toBeGreaterThan(0);
    expect(receiver.requestsTo('/bookkeeping').some((r) => r.body.includes(id))).toBe(true);
    // Its results are committed (a reader sees them) but not yet durable: the syncs it started wait.
    const delivered = outside.prepare("select count(*) as n from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id where e.url = ? and d.state = 'delivered'").get(receiver.url('/bookkeeping')) as { n: number };
    expect(delivered.n).toBeGreaterThan(0);
    expect(gate.waiting).toBeGreaterThan(0);
    const wal = t.ctx.storage.walSync!;
    expect(wal.requiredPosition()).toBeLessThan(wal.position());
    expect(wal.whenDurable()).not.toBeNull();
    gate.release();
  });

  it('a write outside the group commit (a key revocation) returns only after the sync', async () => {
    const key = await t.ctx.apiKeys.createKey(t.ctx.storage.db, { tenantId: t.tenant.tenantId, environment: 'sandbox', label: 'to revoke' });
    gate.hold();
    const revoking = t.ctx.apiKeys.revokeKey({ tenantId: t.tenant.tenantId, keyId: key.id });
    await commitThrough(gate, () => (outside.prepare('select revoked_at from api_keys where id = ?').get(key.id) as { revoked_at: number | null }).revoked_at !== null, 'the revocation committed');
    expect(await settledState(revoking)).toBe('pending');
    gate.release();
    expect(await revoking).toBe(true);
  });

  it('concurrent creates while a sync runs are written into one open batch, which commits when the sync returns', async () => {
    const wal = t.ctx.storage.walSync!;
    const units = () => t.ctx.idempotency.transactionStats().units;
    gate.hold();
    const decisionsBefore = count('decisions');
    const lead = create();
    await commitThrough(gate, () => count('decisions') === decisionsBefore + 1, 'the first create committed');
    await until(() => gate.waiting === 1, 'the first batch is syncing');
    const before = count('decisions');
    // Commits of the writer connection and of the writer thread (where a create's writes run).
    const commits = () => wal.position() + wal.stats().commitsElsewhere;
    const commitsBefore = commits();
    const unitsBefore = units();
    const group = Array.from({ length: 8 }, () => create());
    // Decided and written into the open batch while the sync runs, but not committed.
    await until(() => units() === unitsBefore + 8, 'the eight are in the open batch');
    expect(count('decisions')).toBe(before);
    expect(commits()).toBe(commitsBefore);
    expect(gate.waiting).toBe(1);
    gate.release();
    expect((await lead).statusCode).toBe(200);
    for (const r of await Promise.all(group)) expect(r.statusCode, r.body).toBe(200);
    expect(count('decisions')).toBe(before + 8);
    expect(commits() - commitsBefore).toBe(1);
  });

  it('a create whose WAL sync fails is a 503 with the stable error body; its retry replays what was committed', async () => {
    gate.failNext();
    const failed = await create('durable-fails');
    expect(failed.statusCode, failed.body).toBe(503);
    expect(Object.keys(failed.json<Record<string, unknown>>()).sort()).toEqual(['error', 'message', 'request_id']);
    expect(failed.json<{ error: string }>().error).toBe('service_unavailable');
    expect(failed.headers['retry-after']).toBe('2');
    // The decision was committed before the sync failed; the next sync made it durable, and the
    // idempotent retry answers with it instead of deciding again.
    const retried = await create('durable-fails');
    expect(retried.statusCode, retried.body).toBe(200);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    const id = retried.json<{ decision_id: string }>().decision_id;
    expect((outside.prepare('select count(*) as n from decisions where id = ?').get(id) as { n: number }).n).toBe(1);
    expect(t.ctx.storage.walSync!.stats().failedSyncs).toBe(1);
  });
});
