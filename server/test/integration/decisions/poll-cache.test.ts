/**
 * PostgreSQL: the poll cache (modules/decisions/decision-cache.ts, ADR 0050, migration 0028). What
 * must hold: a cached answer is the same bytes a read would give; a change committed anywhere (the
 * service in another process, an operator's SQL) is in the very next poll of every process,
 * without waiting; a hit costs no read, only the freshness barrier it shares with the API key;
 * scope, product and a pending decision's deadline are checked as a read would check them; a
 * replayed or refused create caches nothing; the cache is off on SQLite and with
 * DECISION_CACHE_MB=0. Two processes are two apps on one database, each with its own listener.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { PENDING_TTL_MS } from '../../../src/modules/decisions/decisions.service.js';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';

const json = { 'content-type': 'application/json' };
const txn = (amount: string) => ({ amount, currency: 'USD', merchant_name: 'Acme Furniture', merchant_category: 'furniture' });

describe.runIf(await isPostgresReachable())('the poll cache (PostgreSQL)', () => {
  let db: TestDatabase;
  let admin: pg.Client;
  /** Two API processes with the cache, and one without it: what a read answers. */
  let a: TestApp;
  let b: TestApp;
  let uncached: TestApp;
  const clock = new ManualClock('2026-12-04T10:00:00.000Z');
  const env = { RATE_LIMIT_SANDBOX_PER_S: '100000' };
  let key: string;
  let soft: string;
  let enhanced: string;

  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    admin = new pg.Client({ connectionString: db.databaseUrl! });
    await admin.connect();
    a = await createTestApp(db, { clock, env });
    b = await createTestApp(db, { clock, env });
    uncached = await createTestApp(db, { clock, env: { ...env, DECISION_CACHE_MB: '0' } });
    await Promise.all([a.ctx.apiKeys.startCache(), b.ctx.apiKeys.startCache(), uncached.ctx.apiKeys.startCache()]);
    key = a.tenant.sandbox.apiKey;
    [soft, enhanced] = a.tenant.sandbox.consumers.map((c) => c.consumerId) as [string, string];
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await uncached?.close();
    await admin?.end();
    await db?.drop();
  });

  const create = async (t: TestApp, body: unknown, headers: Record<string, string> = {}) => {
    const r = await t.app.inject({ method: 'POST', url: '/v1/decisions/bnpl', headers: { ...bearer(key), ...json, ...headers }, payload: JSON.stringify(body) });
    expect(r.statusCode, r.body).toBe(200);
    return r;
  };
  const poll = (t: TestApp, id: string, k = key, product = 'bnpl') => t.app.inject({ method: 'GET', url: `/v1/decisions/${product}/${id}`, headers: bearer(k) });
  const statements = (t: TestApp) => t.ctx.apiKeys.cacheStats().feedStatements!;
  const stats = (t: TestApp) => t.ctx.decisionCache!.stats();
  const approved = async (t = a) => (await create(t, { consumer: { consumer_id: soft }, transaction: txn('149.97') })).json<{ decision_id: string }>().decision_id;
  /** A decision waiting for the consumer's verification (the seeded enhanced consumer, 1,500.00): one that can still change. */
  const pending = async (t = a) => (await create(t, { consumer: { consumer_id: enhanced }, transaction: txn('1500.00') })).json<{ decision_id: string }>().decision_id;

  it('is on for PostgreSQL API processes, off with DECISION_CACHE_MB=0', () => {
    expect(a.ctx.decisionCache).not.toBeNull();
    expect(uncached.ctx.decisionCache).toBeNull();
  });

  it("answers a pending decision's first poll from what its create kept: the same bytes as a read, no read sent, one empty barrier", async () => {
    const created = await create(a, { consumer: { consumer_id: enhanced }, transaction: txn('1500.00') });
    const id = created.json<{ decision_id: string; status: string }>().decision_id;
    expect(created.json<{ status: string }>().status).toBe('needs_consumer_action');
    const before = statements(a);
    const hits = stats(a).hits;
    const cached = await poll(a, id);
    expect(cached.statusCode).toBe(200);
    expect(stats(a).hits - hits).toBe(1);
    expect(statements(a).reads - before.reads).toBe(0);
    expect(statements(a).empty - before.empty).toBe(1);
    const read = await poll(uncached, id);
    expect(cached.body).toBe(read.body);
    expect(cached.body).toBe(created.body);
    expect(cached.headers['content-type']).toBe(read.headers['content-type']);
    expect(cached.headers['content-length']).toBe(read.headers['content-length']);
  });

  it('keeps no final decision, created here or read (it is answered by its create, polled again rarely): each poll reads', async () => {
    const id = await approved(a);
    expect(a.ctx.decisionCache!.has(id)).toBe(false);
    for (const t of [a, b]) {
      const before = statements(t);
      for (let i = 0; i < 3; i++) expect((await poll(t, id)).json<{ outcome: string }>().outcome).toBe('approved');
      expect(statements(t).reads - before.reads).toBe(3);
      expect(t.ctx.decisionCache!.has(id)).toBe(false);
    }
  });

  it('fills from a read of a pending decision in a process that did not create it; its next poll is a hit', async () => {
    const id = await pending(a);
    const before = statements(b);
    const first = await poll(b, id);
    expect(first.json<{ status: string }>().status).toBe('needs_consumer_action');
    expect(statements(b).reads - before.reads).toBe(1);
    const hits = stats(b).hits;
    const second = await poll(b, id);
    expect(stats(b).hits - hits).toBe(1);
    expect(statements(b).reads - before.reads).toBe(1);
    expect(second.body).toBe(first.body);
  });

  it('shares one barrier among concurrent hits and the API key: fewer statements than polls, none a read', async () => {
    const id = await pending(a);
    await poll(a, id);
    const before = statements(a);
    const answers = await Promise.all(Array.from({ length: 20 }, () => poll(a, id)));
    for (const r of answers) expect(r.statusCode).toBe(200);
    const after = statements(a);
    expect(after.reads - before.reads).toBe(0);
    expect(after.empty - before.empty).toBeGreaterThanOrEqual(1);
    expect(after.empty - before.empty).toBeLessThan(20);
  });

  it("shows a change another process committed in the very next poll of every process: a pending decision verified in B, polled in A (which cached it at create) and in B", async () => {
    const pending = (await create(a, { consumer: { consumer_id: enhanced }, transaction: txn('1500.00') })).json<{ decision_id: string; status: string }>();
    expect(pending.status).toBe('needs_consumer_action');
    for (const t of [a, b]) expect((await poll(t, pending.decision_id)).json<{ status: string }>().status).toBe('needs_consumer_action');
    expect(a.ctx.decisionCache!.has(pending.decision_id)).toBe(true);
    expect(b.ctx.decisionCache!.has(pending.decision_id)).toBe(true);
    const helper = await b.app.inject({ method: 'POST', url: `/v1/sandbox/decisions/${pending.decision_id}/verification`, headers: { ...bearer(key), ...json }, payload: '{"result":"pass"}' });
    expect(helper.statusCode, helper.body).toBe(200);
    // No wait: the poll's barrier is sent after the change committed, so its notification came first.
    for (const t of [a, b]) {
      const r = await poll(t, pending.decision_id);
      expect(r.json<{ status: string; outcome: string }>()).toMatchObject({ status: 'complete', outcome: 'approved' });
      expect(r.body).toBe((await poll(uncached, pending.decision_id)).body);
    }
  });

  it("shows every one of 30 operator's updates in the next poll of both processes, polled concurrently with the change", async () => {
    const id = await pending(a);
    await Promise.all([poll(a, id), poll(b, id)]);
    const { rows } = await admin.query<{ expires_at: string }>('select expires_at from decisions where id = $1', [id]);
    const deadline = Number(rows[0]!.expires_at);
    let previous = (await poll(a, id)).json<{ expires_at: string }>().expires_at;
    for (let i = 1; i <= 30; i++) {
      // Polls in flight while the update commits may show either state; the poll after it, only the new one.
      const during = [poll(a, id), poll(b, id)];
      await admin.query('update decisions set expires_at = $1 where id = $2', [deadline + i * 1000, id]);
      const expected = (await poll(uncached, id)).body;
      expect(JSON.parse(expected).expires_at).not.toBe(previous);
      previous = JSON.parse(expected).expires_at;
      for (const t of [a, b]) expect((await poll(t, id)).body).toBe(expected);
      for (const r of await Promise.all(during)) expect(r.statusCode).toBe(200);
    }
    // Polls after the last change filled both again.
    expect([a.ctx.decisionCache!.has(id), b.ctx.decisionCache!.has(id)]).toEqual([true, true]);
  });

  it("answers 404 for another tenant's key and for the other product's route, cached or not", async () => {
    const id = await pending(a);
    expect((await poll(a, id)).statusCode).toBe(200);
    expect(a.ctx.decisionCache!.has(id)).toBe(true);
    const other = await a.ctx.tenants.createTenant({ name: 'Other Lender' });
    for (const [k, product] of [[other.sandbox.apiKey, 'bnpl'], [a.tenant.live.apiKey, 'bnpl'], [key, 'auto-loan']] as const) {
      const r = await poll(a, id, k, product);
      expect(r.statusCode).toBe(404);
      expect(errorOf(r).error).toBe('not_found');
      expect(r.body).not.toContain('needs_consumer_action');
    }
  });

  it("does not serve a pending decision past its deadline: the poll shows it expired, as a read would", async () => {
    const local = new ManualClock('2026-12-04T12:00:00.000Z');
    const t = await createTestApp(db, { clock: local, env });
    try {
      await t.ctx.apiKeys.startCache();
      const r = await t.app.inject({ method: 'POST', url: '/v1/decisions/bnpl', headers: { ...bearer(t.tenant.sandbox.apiKey), ...json }, payload: JSON.stringify({ consumer: { consumer_id: t.tenant.sandbox.consumers[1]!.consumerId }, transaction: txn('1500.00') }) });
      const id = r.json<{ decision_id: string }>().decision_id;
      expect(t.ctx.decisionCache!.has(id)).toBe(true);
      local.advance(PENDING_TTL_MS.enhanced);
      // An unfinished verification past its deadline is a decline (decisions.service.ts finalizeExpired).
      const expired = await poll(t, id, t.tenant.sandbox.apiKey);
      expect(expired.json<{ status: string; outcome: string }>()).toMatchObject({ status: 'complete', outcome: 'declined' });
      expect((await poll(t, id, t.tenant.sandbox.apiKey)).body).toBe(expired.body);
    } finally {
      await t.close();
    }
  });

  it('caches nothing for a replayed create, and a replay answers the same bytes the poll does', async () => {
    const headers = { 'idempotency-key': `poll-cache-${Date.now()}` };
    // Pending: a decision the cache would keep from its create.
    const body = { consumer: { consumer_id: enhanced }, transaction: txn('1500.00') };
    const first = await create(b, body, headers);
    const id = first.json<{ decision_id: string }>().decision_id;
    a.ctx.decisionCache!.invalidate(id);
    const replay = await create(a, body, headers);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(a.ctx.decisionCache!.has(id)).toBe(false);
    expect((await poll(a, id)).body).toBe(first.body);
  });

  it('keeps only the committed decision when two processes race one Idempotency-Key: the loser, whose own decision rolled back, keeps nothing', async () => {
    const body = { consumer: { consumer_id: enhanced }, transaction: txn('1500.00') };
    for (let i = 0; i < 10; i++) {
      const headers = { 'idempotency-key': `poll-cache-race-${Date.now()}-${i}` };
      const entries = [stats(a).entries, stats(b).entries];
      // Sent together: usually both prepare and write, and one waits on the key's unique index, then replays.
      const [ra, rb] = await Promise.all([create(a, body, headers), create(b, body, headers)]);
      const id = ra.json<{ decision_id: string }>().decision_id;
      expect(rb.json<{ decision_id: string }>().decision_id).toBe(id);
      const winner = ra.headers['idempotent-replayed'] === 'true' ? b : a;
      const loser = winner === a ? b : a;
      expect(winner.ctx.decisionCache!.has(id)).toBe(true);
      expect([stats(a).entries - entries[0]!, stats(b).entries - entries[1]!]).toEqual(winner === a ? [1, 0] : [0, 1]);
      expect(loser.ctx.decisionCache!.has(id)).toBe(false);
    }
  });

  it('empties the cache when its listener is lost, serves nothing from it meanwhile, and fills again once it listens', async () => {
    const t = await createTestApp(db, { clock, env, overrides: { apiKeyInvalidation: { reconnectDelayMs: 10 } } });
    try {
      await t.ctx.apiKeys.startCache();
      const k = t.tenant.sandbox.apiKey;
      const r = await t.app.inject({ method: 'POST', url: '/v1/decisions/bnpl', headers: { ...bearer(k), ...json }, payload: JSON.stringify({ consumer: { consumer_id: t.tenant.sandbox.consumers[1]!.consumerId }, transaction: txn('1500.00') }) });
      const id = r.json<{ decision_id: string }>().decision_id;
      expect(t.ctx.decisionCache!.has(id)).toBe(true);
      // Its listener's backend ended (as a failover would): changes made meanwhile would be missed.
      const down = t.ctx.apiKeys.whenCacheFeed('down');
      // (Every listener of this database: the other apps' reconnect too; this is the file's last test.)
      await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'cds-auth-listener' and datname = current_database()`);
      await down;
      expect(t.ctx.decisionCache!.stats().entries).toBe(0);
      const hits = t.ctx.decisionCache!.stats().hits;
      expect((await poll(t, id, k)).body).toBe(r.body);
      await t.ctx.apiKeys.whenCacheFeed('listening');
      expect((await poll(t, id, k)).body).toBe(r.body); // read, and kept (pending: it can still change)
      expect((await poll(t, id, k)).body).toBe(r.body); // a hit
      expect(t.ctx.decisionCache!.stats().hits - hits).toBe(1);
    } finally {
      await t.close();
    }
  });
});
