import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';

describe.each(await dialectMatrix())('rate limits [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  const clock = new ManualClock('2026-11-21T10:00:00.000Z');
  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock, env: { RATE_LIMIT_SANDBOX_PER_S: '5', RATE_LIMIT_LIVE_PER_S: '20' } });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const hit = (key: string) => t.app.inject({ method: 'GET', url: '/v1/ping-nothing', headers: bearer(key) });

  async function burst(key: string, n: number) {
    const out = [];
    for (let i = 0; i < n; i++) out.push(await hit(key));
    return out;
  }

  it('allows the burst (twice the rate), then answers 429 with Retry-After and RateLimit headers', async () => {
    const responses = await burst(t.tenant.sandbox.apiKey, 11);
    expect(responses.slice(0, 10).map((r) => r.statusCode)).toEqual(Array(10).fill(404));
    expect(responses[0]!.headers['ratelimit-limit']).toBe('10');
    expect(responses[0]!.headers['ratelimit-remaining']).toBe('9');
    const refused = responses[10]!;
    expect(refused.statusCode).toBe(429);
    expect(errorOf(refused).error).toBe('rate_limited');
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['ratelimit-limit']).toBe('10');
    expect(refused.headers['ratelimit-remaining']).toBe('0');
    expect(Number(refused.headers['ratelimit-reset'])).toBe(2);
  });

  it('refills at the configured rate as time passes', async () => {
    clock.advance(1_000);
    const after = await burst(t.tenant.sandbox.apiKey, 6);
    expect(after.map((r) => r.statusCode)).toEqual([404, 404, 404, 404, 404, 429]);
  });

  it('gives each key its own bucket and live its own default', async () => {
    const live = await burst(t.tenant.live.apiKey, 41);
    expect(live.filter((r) => r.statusCode === 404)).toHaveLength(40);
    expect(live[40]!.statusCode).toBe(429);
  });

  it('honours a per-tenant override', async () => {
    const other = await t.ctx.tenants.createTenant({ name: 'Big Lender' });
    await t.ctx.tenants.setRateLimits(other.tenantId, { sandboxPerSecond: 50 });
    const responses = await burst(other.sandbox.apiKey, 101);
    expect(responses.filter((r) => r.statusCode === 404)).toHaveLength(100);
    expect(responses[100]!.statusCode).toBe(429);
    expect(responses[0]!.headers['ratelimit-limit']).toBe('100');
  });
});
