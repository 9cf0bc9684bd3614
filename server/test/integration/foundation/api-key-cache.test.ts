/**
 * The API-key cache (modules/api-keys): successful lookups are served from memory, and a revoked
 * key or a changed tenant limit is honoured on the very next request, in the process that made the
 * change and in a second process on the same database. Two app instances on one database stand in
 * for two processes: each has its own cache and, on PostgreSQL, its own listener connection.
 * SQLite's documented bound for changes written by another process (SQLITE_MAX_AGE_MS) is checked
 * with the test clock, never by waiting.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { SQLITE_MAX_AGE_MS } from '../../../src/modules/api-keys/api-keys.service.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';

describe.each(await dialectMatrix())('API-key cache [%s]', (dialect) => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  const clock = new ManualClock('2026-11-24T10:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    a = await createTestApp(db, { clock });
    b = await createTestApp(db, { clock });
    await Promise.all([a.ctx.apiKeys.startCache(), b.ctx.apiKeys.startCache()]);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
  });

  // An unknown /v1 path: authenticated and limited like any route, 404 once through.
  const hit = (t: TestApp, key: string) => t.app.inject({ method: 'GET', url: '/v1/cache-probe', headers: bearer(key) });
  const newKey = (t: TestApp, tenantId = a.tenant.tenantId) => t.ctx.apiKeys.createKey(t.ctx.storage.db, { tenantId, environment: 'sandbox' });

  /** A change written straight into the database, as an operator (or another process) would. */
  async function outOfBand(statement: { sqlite: string; postgres: string }, params: unknown[]): Promise<number> {
    if (dialect === 'sqlite') {
      const file = new Database(path.join(db.dataDir, 'cds.sqlite'));
      try {
        return file.prepare(statement.sqlite).run(...params).changes;
      } finally {
        file.close();
      }
    }
    const client = new pg.Client({ connectionString: db.databaseUrl! });
    await client.connect();
    try {
      return (await client.query(statement.postgres, params)).rowCount ?? 0;
    } finally {
      await client.end();
    }
  }
  const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

  async function expectRefused(t: TestApp, key: string): Promise<void> {
    const r = await hit(t, key);
    expect(r.statusCode).toBe(401);
    expect(errorOf(r).error).toBe('invalid_api_key');
  }

  it('serves repeated requests for a key from the cache', async () => {
    const key = (await newKey(a)).key;
    expect((await hit(a, key)).statusCode).toBe(404);
    const before = a.ctx.apiKeys.cacheStats();
    for (let i = 0; i < 5; i++) expect((await hit(a, key)).statusCode).toBe(404);
    const after = a.ctx.apiKeys.cacheStats();
    expect(after.enabled).toBe(true);
    expect(after.feed).toBe(dialect === 'sqlite' ? 'local' : 'listening');
    expect(after.hits - before.hits).toBe(5);
    expect(after.misses).toBe(before.misses);
  });

  it('refuses a key revoked in this process on the very next request', async () => {
    const created = await newKey(a);
    for (let i = 0; i < 2; i++) expect((await hit(a, created.key)).statusCode).toBe(404);
    expect(await a.ctx.apiKeys.revokeKey({ tenantId: a.tenant.tenantId, keyId: created.id })).toBe(true);
    await expectRefused(a, created.key);
  });

  it('refuses a key revoked by another process: at once on PostgreSQL, within the maximum age on SQLite', async () => {
    const created = await newKey(a);
    for (const t of [a, b]) for (let i = 0; i < 2; i++) expect((await hit(t, created.key)).statusCode).toBe(404);
    const hitsBefore = b.ctx.apiKeys.cacheStats().hits;
    expect(await a.ctx.apiKeys.revokeKey({ tenantId: a.tenant.tenantId, keyId: created.id })).toBe(true);
    await expectRefused(a, created.key);
    if (dialect === 'sqlite') {
      // The documented bound: b still holds its entry, and drops it once it is SQLITE_MAX_AGE_MS old.
      expect((await hit(b, created.key)).statusCode).toBe(404);
      expect(b.ctx.apiKeys.cacheStats().hits).toBe(hitsBefore + 1);
      clock.advance(SQLITE_MAX_AGE_MS);
    }
    await expectRefused(b, created.key);
  });

  it('refuses a key revoked by hand in SQL (no service involved) in every process', async () => {
    const created = await newKey(a);
    for (const t of [a, b]) for (let i = 0; i < 2; i++) expect((await hit(t, created.key)).statusCode).toBe(404);
    const changed = await outOfBand(
      { sqlite: 'update api_keys set revoked_at = ? where key_hash = ?', postgres: 'update api_keys set revoked_at = $1 where key_hash = $2' },
      [clock.now().getTime(), sha256(created.key)],
    );
    expect(changed).toBe(1);
    if (dialect === 'sqlite') clock.advance(SQLITE_MAX_AGE_MS);
    for (const t of [a, b]) await expectRefused(t, created.key);
  });

  it('applies a tenant rate-limit change on the next request, here and (PostgreSQL) in the other process', async () => {
    const tenant = await a.ctx.tenants.createTenant({ name: 'Limits Lender' });
    const key = tenant.sandbox.apiKey;
    for (const t of [a, b]) expect((await hit(t, key)).headers['ratelimit-limit']).toBe('50'); // default 25/s, burst 50
    await a.ctx.tenants.setRateLimits(tenant.tenantId, { sandboxPerSecond: 7 });
    expect((await hit(a, key)).headers['ratelimit-limit']).toBe('14');
    if (dialect === 'sqlite') clock.advance(SQLITE_MAX_AGE_MS);
    expect((await hit(b, key)).headers['ratelimit-limit']).toBe('14');
    // And by hand in SQL.
    await outOfBand(
      { sqlite: 'update tenants set rate_limit_sandbox_per_s = ? where id = ?', postgres: 'update tenants set rate_limit_sandbox_per_s = $1 where id = $2' },
      [9, tenant.tenantId],
    );
    if (dialect === 'sqlite') clock.advance(SQLITE_MAX_AGE_MS);
    for (const t of [a, b]) expect((await hit(t, key)).headers['ratelimit-limit']).toBe('18');
  });

  it('keeps at most API_KEY_CACHE_SIZE entries and still answers every key', async () => {
    const small = await createTestApp(db, { clock, env: { API_KEY_CACHE_SIZE: '2' } });
    try {
      await small.ctx.apiKeys.startCache();
      const keys = await Promise.all([1, 2, 3, 4].map(() => newKey(small, small.tenant.tenantId)));
      for (const round of [1, 2]) {
        for (const k of keys) expect((await hit(small, k.key)).statusCode, `round ${round}`).toBe(404);
        expect(small.ctx.apiKeys.cacheStats().entries).toBe(2);
      }
    } finally {
      await small.close();
    }
  });

  it('uses no cache at all when API_KEY_CACHE_SIZE is 0', async () => {
    const none = await createTestApp(db, { clock, env: { API_KEY_CACHE_SIZE: '0' } });
    try {
      for (let i = 0; i < 3; i++) expect((await hit(none, none.tenant.sandbox.apiKey)).statusCode).toBe(404);
      expect(none.ctx.apiKeys.cacheStats()).toMatchObject({ enabled: false, entries: 0, hits: 0 });
    } finally {
      await none.close();
    }
  });

  it.runIf(dialect === 'postgres')('reads the database for every request while its listener is down, so a revocation it missed still counts', async () => {
    // Reconnection held back far beyond the test, so "down" lasts as long as the test needs.
    const c = await createTestApp(db, { clock, overrides: { apiKeyInvalidation: { reconnectDelayMs: 10 * 60_000 } } });
    try {
      await c.ctx.apiKeys.startCache();
      const created = await newKey(c, c.tenant.tenantId);
      for (let i = 0; i < 2; i++) expect((await hit(c, created.key)).statusCode).toBe(404);
      expect(c.ctx.apiKeys.cacheStats().entries).toBeGreaterThan(0);

      const down = c.ctx.apiKeys.cacheStats().feed === 'down' ? Promise.resolve() : waitForDown(c);
      const admin = new pg.Client({ connectionString: db.databaseUrl! });
      await admin.connect();
      try {
        const killed = await admin.query(
          "select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = 'cds-auth-listener'",
        );
        expect(killed.rowCount).toBeGreaterThanOrEqual(1);
      } finally {
        await admin.end();
      }
      await down;
      expect(c.ctx.apiKeys.cacheStats()).toMatchObject({ feed: 'down', entries: 0 });

      // Nobody in c hears this revocation; c must still refuse the key.
      const before = c.ctx.apiKeys.cacheStats();
      expect((await hit(c, c.tenant.sandbox.apiKey)).statusCode).toBe(404);
      await outOfBand({ sqlite: '', postgres: 'update api_keys set revoked_at = $1 where key_hash = $2' }, [clock.now().getTime(), sha256(created.key)]);
      await expectRefused(c, created.key);
      const after = c.ctx.apiKeys.cacheStats();
      expect(after.hits).toBe(before.hits);
      expect(after.bypassed - before.bypassed).toBe(2);
      expect(after.entries).toBe(0);
    } finally {
      await c.close();
    }
  });
});

/** The feed's own state-change signal: resolves when the listener is seen as lost. */
function waitForDown(t: TestApp): Promise<void> {
  return t.ctx.apiKeys.whenCacheFeed('down');
}
