import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { createContext } from '../../../src/app/context.js';
import { openStorage } from '../../../src/db/database.js';
import { buildApp } from '../../../src/http/build-app.js';
import { createLogger } from '../../../src/lib/logger.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, errorOf, testConfig, type TestApp } from '../../support/test-app.js';
import { countProbes, registerProbeRoutes } from '../../support/probe-routes.js';

describe.each(await dialectMatrix())('idempotency [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  const clock = new ManualClock('2026-11-21T10:00:00.000Z');
  let keyCounter = 0;
  const newKey = () => `key-${dialect}-${++keyCounter}-${Math.random()}`;

  const post = (body: object, key?: string, apiKey = t.tenant.sandbox.apiKey) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/test-probes',
      headers: { ...bearer(apiKey), 'content-type': 'application/json', ...(key !== undefined ? { 'idempotency-key': key } : {}) },
      payload: JSON.stringify(body),
    });

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock, build: { registerExtraV1Routes: registerProbeRoutes } });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('replays the same key and body byte for byte, with Idempotent-Replayed, and writes once', async () => {
    const key = newKey();
    const first = await post({ name: 'once' }, key);
    expect(first.statusCode).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const second = await post({ name: 'once' }, key);
    expect(second.statusCode).toBe(200);
    expect(second.body).toBe(first.body);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.headers['request-id']).toBe(first.headers['request-id']);
    expect(await countProbes(t.ctx, t.tenant.tenantId, 'once')).toBe(1);
  });

  it('treats key order and white space as the same request', async () => {
    const key = newKey();
    const first = await t.app.inject({
      method: 'POST', url: '/v1/test-probes', headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json', 'idempotency-key': key },
      payload: '{"name":"order","delay_ms":0}',
    });
    const second = await t.app.inject({
      method: 'POST', url: '/v1/test-probes', headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json', 'idempotency-key': key },
      payload: '{ "delay_ms" : 0,\n "name" : "order" }',
    });
    expect(second.body).toBe(first.body);
    expect(second.headers['idempotent-replayed']).toBe('true');
  });

  it('answers 409 for the same key with a different body, and the key stays with the first request', async () => {
    const key = newKey();
    const first = await post({ name: 'first-body' }, key);
    const conflict = await post({ name: 'second-body' }, key);
    expect(conflict.statusCode).toBe(409);
    expect(errorOf(conflict).error).toBe('idempotency_conflict');
    const again = await post({ name: 'first-body' }, key);
    expect(again.body).toBe(first.body);
    expect(await countProbes(t.ctx, t.tenant.tenantId, 'second-body')).toBe(0);
  });

  it('runs ten concurrent identical requests once and gives all ten the same answer', async () => {
    const key = newKey();
    const responses = await Promise.all(Array.from({ length: 10 }, () => post({ name: 'concurrent', delay_ms: 50 }, key)));
    expect(responses.map((r) => r.statusCode)).toEqual(Array(10).fill(200));
    expect(new Set(responses.map((r) => r.body)).size).toBe(1);
    expect(responses.filter((r) => r.headers['idempotent-replayed'] === 'true')).toHaveLength(9);
    expect(await countProbes(t.ctx, t.tenant.tenantId, 'concurrent')).toBe(1);
  });

  it('gives 409 to a duplicate that waits more than 5 s for the first request', async () => {
    const key = newKey();
    const slow = post({ name: 'slow', delay_ms: 6_500 }, key);
    await new Promise((r) => setTimeout(r, 100));
    const waiting = await post({ name: 'slow', delay_ms: 6_500 }, key);
    expect(waiting.statusCode).toBe(409);
    expect(errorOf(waiting).message).toMatch(/still being processed/);
    expect((await slow).statusCode).toBe(200);
    const replay = await post({ name: 'slow', delay_ms: 6_500 }, key);
    expect(replay.headers['idempotent-replayed']).toBe('true');
  });

  it('tells a different body with the same key that it is a different request at once, without waiting for the first', async () => {
    const key = newKey();
    let firstDone = false;
    const slow = post({ name: 'slow-first', delay_ms: 1_500 }, key).then((r) => {
      firstDone = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 100));
    const other = await post({ name: 'another-body' }, key);
    expect(firstDone).toBe(false);
    expect(other.statusCode).toBe(409);
    expect(errorOf(other).message).toMatch(/already used with a different request; use a new key/);
    expect((await slow).statusCode).toBe(200);
    expect(await countProbes(t.ctx, t.tenant.tenantId, 'another-body')).toBe(0);
  });

  it('stores and replays a 422, but not a 400 or a 500 (which also rolls back)', async () => {
    const k422 = newKey();
    const refused = await post({ name: 'refused', reject: true }, k422);
    expect(refused.statusCode).toBe(422);
    expect(errorOf(refused).error).toBe('unprocessable_entity');
    const refusedAgain = await post({ name: 'refused', reject: true }, k422);
    expect(refusedAgain.body).toBe(refused.body);
    expect(refusedAgain.headers['idempotent-replayed']).toBe('true');
    expect(refusedAgain.headers['request-id']).toBe(refused.headers['request-id']);
    expect(await countProbes(t.ctx, t.tenant.tenantId, 'refused')).toBe(0);

    const k400 = newKey();
    expect((await post({ name: 'bad', unknown_field: 1 }, k400)).statusCode).toBe(400);
    const afterBad = await post({ name: 'bad-then-good' }, k400);
    expect(afterBad.statusCode).toBe(200);
    expect(afterBad.headers['idempotent-replayed']).toBeUndefined();

    const k500 = newKey();
    const failed = await post({ name: 'fails', fail: true }, k500);
    expect(failed.statusCode).toBe(500);
    expect(failed.body).not.toMatch(/secret-table-name/);
    expect(await countProbes(t.ctx, t.tenant.tenantId, 'fails')).toBe(0);
    const retried = await post({ name: 'fails' }, k500);
    expect(retried.statusCode).toBe(200);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
  });

  it('refuses keys that are empty, longer than 255 characters or not printable ASCII', async () => {
    expect((await post({ name: 'k' }, 'x'.repeat(255))).statusCode).toBe(200);
    for (const bad of ['x'.repeat(256), 'caf\u00e9', 'tab\there']) {
      const r = await post({ name: 'k' }, bad);
      expect(r.statusCode, bad).toBe(400);
      expect(errorOf(r).message).toMatch(/Idempotency-Key/);
    }
  });

  it('scopes keys by tenant and environment', async () => {
    const key = newKey();
    const sandbox = await post({ name: 'scoped' }, key);
    const live = await post({ name: 'scoped' }, key, t.tenant.live.apiKey);
    expect(live.headers['idempotent-replayed']).toBeUndefined();
    expect(live.json().id).not.toBe(sandbox.json().id);
    const other = await t.ctx.tenants.createTenant({ name: 'Other Lender' });
    const otherTenant = await post({ name: 'scoped-other' }, key, other.sandbox.apiKey);
    expect(otherTenant.statusCode).toBe(200);
    expect(otherTenant.headers['idempotent-replayed']).toBeUndefined();
  });

  it('forgets a key after 24 hours: a retry then creates anew, and the purge removes it', async () => {
    const key = newKey();
    const first = await post({ name: 'expiring' }, key);
    clock.advance(24 * 60 * 60 * 1000 - 1);
    expect((await post({ name: 'expiring' }, key)).headers['idempotent-replayed']).toBe('true');
    clock.advance(1);
    const after = await post({ name: 'expiring' }, key);
    expect(after.headers['idempotent-replayed']).toBeUndefined();
    expect(after.json().id).not.toBe(first.json().id);
    expect(await countProbes(t.ctx, t.tenant.tenantId, 'expiring')).toBe(2);

    const stale = newKey();
    await post({ name: 'purged' }, stale);
    clock.advance(24 * 60 * 60 * 1000 + 1);
    expect(await t.ctx.idempotency.purgeExpired()).toBeGreaterThanOrEqual(1);
    const rows = await t.ctx.storage.db.selectFrom('idempotency_keys').select('idempotency_key').where('idempotency_key', '=', stale).execute();
    expect(rows).toHaveLength(0);
  });

  it('the purge deletes in batches, letting other work run between them: a reader meanwhile sees it part-way', async () => {
    // 2,500 expired records and 3 live ones of a tenant of their own; batches of 1,000.
    const scope = { tenant_id: `purge-${dialect}`, environment: 'live' as const };
    const now = clock.now().getTime();
    const rows = Array.from({ length: 2_503 }, (_, i) => ({
      ...scope,
      idempotency_key: `bulk-${i}`,
      fingerprint: 'f'.repeat(64),
      status_code: 200,
      response_body: '{}',
      request_id: `req_${i}`,
      created_at: now - 2 * 24 * 3600_000,
      expires_at: i < 2_500 ? now - 1 : now + 3600_000,
    }));
    for (let i = 0; i < rows.length; i += 500) await t.ctx.storage.db.insertInto('idempotency_keys').values(rows.slice(i, i + 500)).execute();
    const remaining = async () =>
      Number((await t.ctx.storage.readDb.selectFrom('idempotency_keys').select((eb) => eb.fn.countAll<number | string>().as('n')).where('tenant_id', '=', scope.tenant_id).executeTakeFirstOrThrow()).n);
    expect(await remaining()).toBe(2_503);

    // Sample the count after each turn of the event loop while the purge runs.
    const seen = new Set<number>();
    let purging = true;
    const sampling = (async () => {
      while (purging) {
        seen.add(await remaining());
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    })();
    const purged = await t.ctx.idempotency.purgeExpired(1_000);
    purging = false;
    await sampling;
    expect(purged).toBeGreaterThanOrEqual(2_500);
    expect(await remaining()).toBe(3);
    // Some read landed between two batches (one statement would show only 2,503 and 3).
    expect([...seen].some((n) => n > 3 && n < 2_503), `counts seen: ${[...seen].join(', ')}`).toBe(true);
  });

  it.runIf(dialect === 'postgres')('holds across two processes sharing one database', async () => {
    // A second, independent application graph on the same database stands in for a second node.
    const config = testConfig(db);
    const storage2 = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
    const ctx2 = createContext(config, { storage: storage2, clock, logger: createLogger('silent') });
    const app2 = await buildApp(ctx2, { registerExtraV1Routes: registerProbeRoutes });
    try {
      const key = newKey();
      const send = (app: typeof app2) =>
        app.inject({
          method: 'POST', url: '/v1/test-probes',
          headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json', 'idempotency-key': key },
          payload: JSON.stringify({ name: 'two-nodes', delay_ms: 200 }),
        });
      const responses = await Promise.all([send(t.app), send(app2), send(t.app), send(app2)]);
      expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
      expect(new Set(responses.map((r) => r.body)).size).toBe(1);
      expect(await countProbes(t.ctx, t.tenant.tenantId, 'two-nodes')).toBe(1);
    } finally {
      await app2.close();
      await ctx2.close();
    }
  });
});
