/**
 * PostgreSQL: the poll's batched read rides on the API-key listener's connection as the next
 * freshness barrier (ADR 0024, api-key-invalidation.ts `readInBarrier`), started before
 * authentication (http/plugins/prefetch.ts). What must hold: one statement carries a read and the
 * barrier of everyone who asked before it went out; a change committed before a caller asked is
 * in the cache when that statement answers; a read the listener cannot answer is read on the pool;
 * a poll by a revoked key, or for another tenant's decision, answers as it did without the
 * prefetch. Counts come from the feed's own statement counters (`cacheStats().feedStatements`).
 */
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openStorage, type Storage } from '../../../src/db/database.js';
import { ManualClock } from '../../../src/lib/clock.js';
import { sha256Hex } from '../../../src/lib/crypto.js';
import { createLogger } from '../../../src/lib/logger.js';
import { ApiKeyCache } from '../../../src/modules/api-keys/api-key-cache.js';
import { AUTH_CHANGES_CHANNEL, postgresInvalidationFeed, type InvalidationFeed } from '../../../src/modules/api-keys/api-key-invalidation.js';
import type { AuthenticatedKey } from '../../../src/modules/api-keys/api-keys.service.js';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';
import { startTcpProxy } from '../../support/server-process.js';
import { bearer, createTestApp, errorOf, LogCapture, type TestApp } from '../../support/test-app.js';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe.runIf(await isPostgresReachable())('the poll read as the API-key freshness barrier (PostgreSQL)', () => {
  let db: TestDatabase;
  let admin: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    admin = new pg.Client({ connectionString: db.databaseUrl! });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await db?.drop();
  });

  describe('the feed', () => {
    const feeds: InvalidationFeed[] = [];
    afterAll(async () => {
      for (const f of feeds) await f.close();
    });
    async function listeningFeed(options: { barrierTimeoutMs?: number; databaseUrl?: string; statementsOut?: number } = {}) {
      const cache = new ApiKeyCache(100, Infinity);
      const feed = postgresInvalidationFeed({ databaseUrl: db.databaseUrl!, cache, logger: createLogger('warn', new LogCapture()), reconnectDelayMs: 10, ...options });
      feeds.push(feed);
      await feed.start();
      return { feed, cache };
    }
    const delta = (feed: InvalidationFeed, before: { empty: number; reads: number }) => {
      const now = feed.sent!();
      return { empty: now.empty - before.empty, reads: now.reads - before.reads };
    };

    it('sends a read asked in the same turn as a barrier as that barrier: one statement, both answered', async () => {
      const { feed } = await listeningFeed();
      const before = feed.sent!();
      const ready = feed.ready();
      const read = feed.readInBarrier!('select unnest($1::text[]) as id', [['a', 'b']]);
      expect(ready).toBeInstanceOf(Promise);
      expect(read).toBeInstanceOf(Promise);
      expect(await ready).toBe(true);
      expect(await read).toEqual([['a'], ['b']]);
      expect(delta(feed, before)).toEqual({ empty: 0, reads: 1 });
    });

    it('answers with a read the callers who asked while the statement before it was out; a second read waiting is refused (it goes to the pool)', async () => {
      const { feed } = await listeningFeed();
      const before = feed.sent!();
      const first = feed.ready();
      await nextTurn(); // the empty barrier is out now
      const read = feed.readInBarrier!('select 1 as one', []);
      expect(feed.readInBarrier!('select 2 as two', [])).toBeNull();
      const second = feed.ready();
      expect(second).not.toBe(first);
      expect([await first, await second]).toEqual([true, true]);
      expect(await read).toEqual([[1]]);
      expect(delta(feed, before)).toEqual({ empty: 1, reads: 1 });
    });

    it('has applied every revocation committed before a caller asked when the read that is its barrier answers', async () => {
      const { feed, cache } = await listeningFeed();
      const key = { keyId: 'k', tenantId: 't' } as unknown as AuthenticatedKey;
      let evicted = 0;
      for (let i = 0; i < 200; i++) {
        const hash = sha256Hex(`key ${i}`);
        expect(cache.set(hash, key, cache.generation, 0)).toBe(true);
        await admin.query('select pg_notify($1, $2)', [AUTH_CHANGES_CHANNEL, `key:${hash}`]);
        // As a poll does: its read (prefetch) and its authentication's barrier in one turn.
        const read = feed.readInBarrier!('select $1::int as i', [i]);
        const ready = feed.ready();
        expect(await ready).toBe(true);
        expect(await read).toEqual([[i]]);
        if (cache.get(hash, 0) === undefined) evicted++;
      }
      expect(evicted).toBe(200);
    });

    describe('statements out at once (ADR 0052)', () => {
      // A read that waits on an advisory lock the test holds: out, and unanswered until released.
      const LOCK = 52_052;
      const held = () => feedRead('select pg_advisory_xact_lock_shared($1)::text as locked', [LOCK]); // released when its statement ends
      let feedRead: (text: string, values: unknown[]) => Promise<unknown[][]> | null;
      async function blockedFeed(statementsOut?: number) {
        const listening = await listeningFeed({ barrierTimeoutMs: 20_000, statementsOut });
        feedRead = (text, values) => listening.feed.readInBarrier!(text, values);
        await admin.query('select pg_advisory_lock($1)', [LOCK]);
        return listening;
      }
      const release = () => admin.query('select pg_advisory_unlock($1)', [LOCK]);
      // A test that failed while holding the lock must not leave the next one waiting on it.
      afterEach(() => admin.query('select pg_advisory_unlock_all()'));
      /** Turns until `feed` has sent `reads` reads (a flush is one turn away; a hundred are plenty). */
      async function untilSent(feed: InvalidationFeed, reads: number) {
        for (let turns = 0; turns < 100 && feed.sent!().reads < reads; turns++) await nextTurn();
        expect(feed.sent!().reads).toBe(reads);
      }

      it('sends a second statement while the first is still out; the answers come back in order, each the barrier of its own callers', async () => {
        const { feed } = await blockedFeed();
        const before = feed.sent!();
        const first = held()!;
        const firstReady = feed.ready();
        await untilSent(feed, before.reads + 1);
        const second = feed.readInBarrier!('select 2 as two', [])!;
        const secondReady = feed.ready();
        expect(secondReady).not.toBe(firstReady);
        await untilSent(feed, before.reads + 2); // out while the first waits on the lock
        // Both slots taken: a third read waits for one (it is not refused), a fourth goes to the pool.
        const third = feed.readInBarrier!('select 3 as three', [])!;
        expect(third).toBeInstanceOf(Promise);
        expect(feed.readInBarrier!('select 4 as four', [])).toBeNull();
        for (let i = 0; i < 5; i++) await nextTurn();
        expect(delta(feed, before)).toEqual({ empty: 0, reads: 2 });
        const order: string[] = [];
        void first.then(() => order.push('first'));
        void second.then(() => order.push('second'));
        await release();
        expect(await first).toEqual([['']]);
        expect(await second).toEqual([[2]]);
        expect(await third).toEqual([[3]]);
        expect([await firstReady, await secondReady]).toEqual([true, true]);
        expect(order).toEqual(['first', 'second']);
        expect(delta(feed, before)).toEqual({ empty: 0, reads: 3 });
      });

      it('has applied a revocation committed while the statement before was still out when the second statement answers', async () => {
        const { feed, cache } = await blockedFeed();
        const before = feed.sent!();
        const key = { keyId: 'k', tenantId: 't' } as unknown as AuthenticatedKey;
        const hash = sha256Hex('revoked while a read was out');
        expect(cache.set(hash, key, cache.generation, 0)).toBe(true);
        const first = held()!;
        await untilSent(feed, before.reads + 1);
        await admin.query('select pg_notify($1, $2)', [AUTH_CHANGES_CHANNEL, `key:${hash}`]);
        // Asked after the revocation committed: answered by a statement written after that.
        const ready = feed.ready();
        await nextTurn();
        expect(delta(feed, before)).toEqual({ empty: 1, reads: 1 });
        expect(cache.get(hash, 0)).toEqual(key); // nothing has come back yet
        await release();
        expect(await ready).toBe(true);
        expect(cache.get(hash, 0)).toBeUndefined();
        await first;
      });

      it('with statementsOut 1, sends nothing while a statement is out (one at a time, as before ADR 0052)', async () => {
        const { feed } = await blockedFeed(1);
        const before = feed.sent!();
        const first = held()!;
        await untilSent(feed, before.reads + 1);
        const ready = feed.ready();
        const second = feed.readInBarrier!('select 2 as two', [])!;
        for (let i = 0; i < 5; i++) await nextTurn();
        expect(delta(feed, before)).toEqual({ empty: 0, reads: 1 });
        await release();
        await first;
        expect(await second).toEqual([[2]]);
        expect(await ready).toBe(true);
        expect(delta(feed, before)).toEqual({ empty: 0, reads: 2 });
      });
    });

    it('a statement PostgreSQL refuses rejects its read and sends its callers to the database, and the connection keeps listening', async () => {
      const { feed } = await listeningFeed();
      const ready = feed.ready();
      const read = feed.readInBarrier!('select 1 / 0', []);
      await expect(read).rejects.toThrow(/division by zero/);
      expect(await ready).toBe(false);
      expect(feed.state()).toBe('listening');
      expect(await feed.ready()).toBe(true);
    });

    it("a read slower than the listener's statement time-out (half the barrier time-out) is cancelled by PostgreSQL: the read rejects, its callers read the database, the connection keeps listening", async () => {
      const { feed } = await listeningFeed({ barrierTimeoutMs: 400 });
      const ready = feed.ready();
      const read = feed.readInBarrier!('select pg_sleep(5)', []);
      await expect(read).rejects.toThrow(/statement timeout/);
      expect(await ready).toBe(false);
      expect(feed.state()).toBe('listening');
      expect(await feed.readInBarrier!('select 1 as one', [])).toEqual([[1]]);
    });

    it('a connection that stops answering (a partition) is given up after the barrier time-out: the read rejects, its callers read the database, and the feed listens again once the network is back', async () => {
      const proxy = await startTcpProxy(Number(new URL(db.databaseUrl!).port || 5432));
      try {
        const url = new URL(db.databaseUrl!);
        url.port = String(proxy.port);
        const { feed } = await listeningFeed({ databaseUrl: url.toString(), barrierTimeoutMs: 300 });
        proxy.freeze();
        const down = feed.whenState('down');
        const ready = feed.ready();
        const read = feed.readInBarrier!('select 1 as one', []);
        await expect(read).rejects.toThrow(/lost/);
        expect(await ready).toBe(false);
        await down;
        expect(feed.readInBarrier!('select 1', [])).toBeNull(); // not listening: read elsewhere
        expect(feed.ready()).toBe(false);
        proxy.restore();
        await feed.whenState('listening');
        expect(await feed.readInBarrier!('select 1 as one', [])).toEqual([[1]]);
      } finally {
        await proxy.close();
      }
    });

    it('sends a named read as a prepared statement of its connection: parsed once, executed as often as asked', async () => {
      const { feed } = await listeningFeed();
      const text = 'select unnest($1::text[]) as id';
      expect(await feed.readInBarrier!(text, [['a']], 'cds_test_read')).toEqual([['a']]);
      expect(await feed.readInBarrier!(text, [['b', 'c']], 'cds_test_read')).toEqual([['b'], ['c']]);
      // Asked on the same connection, so it sees that session's prepared statements.
      const prepared = await feed.readInBarrier!('select name, statement from pg_prepared_statements order by name', []);
      expect(prepared).toEqual([['cds_test_read', text]]);
    });

    it('refuses reads before it listens and after it is closed', async () => {
      const cache = new ApiKeyCache(100, Infinity);
      const feed = postgresInvalidationFeed({ databaseUrl: db.databaseUrl!, cache, logger: createLogger('warn', new LogCapture()) });
      expect(feed.readInBarrier!('select 1', [])).toBeNull();
      await feed.start();
      const read = expect(feed.readInBarrier!('select 1 as one', [])).rejects.toThrow(/lost/);
      await feed.close();
      await read;
      expect(feed.readInBarrier!('select 1', [])).toBeNull();
    });
  });

  describe('the storage read', () => {
    let storage: Storage;
    let tenantId: string;
    beforeAll(async () => {
      storage = openStorage({ databaseUrl: db.databaseUrl!, dataDir: db.dataDir, poolSize: 2 });
      await migrateToLatest(storage.db);
      tenantId = '5b0e3b1c-5f43-4c6c-9a39-0d2f8c1e7a10';
      await storage.db.insertInto('tenants').values({ id: tenantId, name: 'Reader', created_at: 0, rate_limit_live_per_s: null, rate_limit_sandbox_per_s: null, settings_json: '{}' }).execute();
    });
    afterAll(async () => {
      await storage?.close();
    });

    it('uses the rows of the connection it is given, and reads on the pool when that connection refuses or fails', async () => {
      const sent: string[] = [];
      const names: Array<string | undefined> = [];
      const answers: Array<'rows' | 'null' | 'reject'> = ['rows', 'null', 'reject'];
      const read = storage.readByIds('tenants', ['id', 'name'], {
        via: (text, _values, name) => {
          sent.push(text);
          names.push(name);
          const answer = answers.shift();
          if (answer === 'null') return null;
          if (answer === 'reject') return Promise.reject(new Error('the API-key listener connection was lost'));
          return Promise.resolve([[tenantId, 'from the other connection']]);
        },
      });
      expect(await read(tenantId)).toEqual([tenantId, 'from the other connection']);
      expect(await read(tenantId)).toEqual([tenantId, 'Reader']);
      expect(await read(tenantId)).toEqual([tenantId, 'Reader']);
      expect(sent).toHaveLength(3);
      expect(sent[0]).toMatch(/^select "id", "name" from "tenants" where "id" = any\(\$1::text\[\]\)$/);
      expect(names).toEqual([expect.stringMatching(/^cds_\d+$/), names[0], names[0]]);
    });

    it("reads on the pool as the same prepared statement (parsed once per connection)", async () => {
      const single = openStorage({ databaseUrl: db.databaseUrl!, dataDir: db.dataDir, poolSize: 1 });
      try {
        let name: string | undefined;
        const read = single.readByIds('tenants', ['id', 'name'], {
          via: (_text, _values, n) => {
            name = n;
            return null;
          },
        });
        expect(await read(tenantId)).toEqual([tenantId, 'Reader']);
        expect(await read(tenantId)).toEqual([tenantId, 'Reader']);
        expect(name).toMatch(/^cds_\d+$/);
        // The pool's only connection: its session's prepared statements.
        const prepared = await sql<{ name: string }>`select name from pg_prepared_statements`.execute(single.db);
        expect(prepared.rows.map((r) => r.name)).toContain(name);
      } finally {
        await single.close();
      }
    });
  });

  describe('polls over HTTP', () => {
    let a: TestApp;
    let b: TestApp;
    const clock = new ManualClock('2026-11-27T10:00:00.000Z');
    // The poll cache off (ADR 0050): these polls are about the read that is the barrier, which a
    // cached answer would not need (poll-cache.test.ts covers the cache's own barrier).
    const env = { RATE_LIMIT_SANDBOX_PER_S: '100000', DECISION_CACHE_MB: '0' };
    let decisionId: string;

    beforeAll(async () => {
      a = await createTestApp(db, { clock, env });
      b = await createTestApp(db, { clock, env });
      await Promise.all([a.ctx.apiKeys.startCache(), b.ctx.apiKeys.startCache()]);
      const soft = a.tenant.sandbox.consumers[0]!.consumerId;
      const created = await a.app.inject({
        method: 'POST',
        url: '/v1/decisions/bnpl',
        headers: { ...bearer(a.tenant.sandbox.apiKey), 'content-type': 'application/json' },
        payload: JSON.stringify({ consumer: { consumer_id: soft }, transaction: { amount: '149.97', currency: 'USD', merchant_name: 'Acme Furniture', merchant_category: 'furniture' } }),
      });
      expect(created.statusCode).toBe(200);
      decisionId = created.json<{ decision_id: string }>().decision_id;
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
    });

    const poll = (t: TestApp, id: string, key: string) => t.app.inject({ method: 'GET', url: `/v1/decisions/bnpl/${id}`, headers: bearer(key) });
    const statements = (t: TestApp) => t.ctx.apiKeys.cacheStats().feedStatements!;

    it('answers polls with reads that are their barriers: no empty barrier, fewer statements than polls', async () => {
      const key = a.tenant.sandbox.apiKey;
      expect((await poll(a, decisionId, key)).statusCode).toBe(200); // the key is cached from here on
      const before = statements(a);
      const hitsBefore = a.ctx.apiKeys.cacheStats().hits;
      const answers = await Promise.all(Array.from({ length: 20 }, () => poll(a, decisionId, key)));
      for (const r of answers) {
        expect(r.statusCode).toBe(200);
        expect(r.json<{ decision_id: string; outcome: string }>()).toMatchObject({ decision_id: decisionId, outcome: 'approved' });
      }
      const after = statements(a);
      expect(a.ctx.apiKeys.cacheStats().hits - hitsBefore).toBe(20);
      expect(after.empty - before.empty).toBe(0);
      expect(after.reads - before.reads).toBeGreaterThanOrEqual(1);
      expect(after.reads - before.reads).toBeLessThan(20);
    });

    it('polls that arrive while a read is out go out together in the next read, with their barrier (no empty query between)', async () => {
      const key = a.tenant.sandbox.apiKey;
      expect((await poll(a, decisionId, key)).statusCode).toBe(200);
      const before = statements(a);
      const first = Array.from({ length: 5 }, () => poll(a, decisionId, key));
      // Until the first wave's read is out: the second wave's reads are held behind it (batched-read.ts),
      // released when it answers, and must ride on the statement that carries the second wave's barrier.
      while (statements(a).reads === before.reads) await nextTurn();
      const second = Array.from({ length: 5 }, () => poll(a, decisionId, key));
      for (const r of await Promise.all([...first, ...second])) expect(r.statusCode).toBe(200);
      const after = statements(a);
      expect(after.empty - before.empty).toBe(0);
      expect(after.reads - before.reads).toBe(2);
    });

    it('a request without a read still gets its barrier (the empty query)', async () => {
      const before = statements(a);
      const r = await a.app.inject({ method: 'GET', url: '/v1/cache-probe', headers: bearer(a.tenant.sandbox.apiKey) });
      expect(r.statusCode).toBe(404);
      expect(statements(a).empty - before.empty).toBe(1);
    });

    it('refuses a poll by a key revoked in another process just before, though its read went out before authentication', async () => {
      const created = await a.ctx.apiKeys.createKey(a.ctx.storage.db, { tenantId: a.tenant.tenantId, environment: 'sandbox' });
      for (const t of [a, b]) expect((await poll(t, decisionId, created.key)).statusCode).toBe(200);
      await admin.query('update api_keys set revoked_at = $1 where key_hash = $2', [clock.now().getTime(), sha256Hex(created.key)]);
      for (const t of [a, b]) {
        const r = await poll(t, decisionId, created.key);
        expect(r.statusCode).toBe(401);
        expect(errorOf(r).error).toBe('invalid_api_key');
        expect(r.body).not.toContain(decisionId);
      }
    });

    it("answers 404 for another tenant's decision, as for one that does not exist, though its read went out", async () => {
      const other = await b.ctx.tenants.createTenant({ name: 'Other Lender' });
      const before = statements(b);
      const r = await poll(b, decisionId, other.sandbox.apiKey);
      expect(r.statusCode).toBe(404);
      expect(errorOf(r).error).toBe('not_found');
      expect(r.body).not.toContain('approved');
      expect(statements(b).reads - before.reads).toBeGreaterThanOrEqual(1);
    });
  });
});
