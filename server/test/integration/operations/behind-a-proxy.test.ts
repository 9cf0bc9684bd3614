/**
 * Behind a load balancer every connection comes from the balancer. Without TRUST_PROXY the service
 * believes no X-Forwarded-For (a client could forge it), so per-address limits see the balancer's
 * address: one client's failed keys then spend everyone's budget. With TRUST_PROXY naming the
 * balancer, the forwarded client address is the one limited and logged, and only when the
 * connection really comes from a trusted balancer (docs/deployment.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';

const BALANCER = '10.0.0.5';

describe.each(await dialectMatrix())('client addresses behind a load balancer [%s]', (dialect) => {
  let db: TestDatabase;
  let trusting: TestApp;
  let plain: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    trusting = await createTestApp(db, { env: { TRUST_PROXY: `${BALANCER},192.168.0.0/16` } });
    plain = await createTestApp(db);
  });
  afterAll(async () => {
    await trusting?.close();
    await plain?.close();
    await db?.drop();
  });

  /** remoteAddress of every request the app logged. */
  const loggedAddresses = (t: TestApp) =>
    t.logs.lines
      .map((l) => JSON.parse(l) as { msg?: string; req?: { remoteAddress?: string } })
      .filter((l) => l.msg === 'request completed')
      .map((l) => l.req?.remoteAddress);

  /** A request with a wrong key, from `remoteAddress`, forwarded for `client`. */
  const wrongKey = (t: TestApp, remoteAddress: string, client: string) =>
    t.app.inject({ method: 'GET', url: '/v1/x', remoteAddress, headers: { authorization: 'Bearer svc_test_wrongwrongwrongwrongwrongwrongwrong', 'x-forwarded-for': client } });

  it('with TRUST_PROXY, failed authentication is limited per forwarded client, and the log names that client', async () => {
    const statuses: number[] = [];
    // The budget is 60 failures (refilled at 1/s): 70 in a row from one client must hit 429.
    for (let i = 0; i < 70; i++) statuses.push((await wrongKey(trusting, BALANCER, '203.0.113.7')).statusCode);
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThanOrEqual(60);
    expect(statuses.at(-1)).toBe(429);
    // Another client behind the same balancer still has its own budget.
    expect((await wrongKey(trusting, BALANCER, '203.0.113.8')).statusCode).toBe(401);
    // A range entry trusts that range too.
    expect((await wrongKey(trusting, '192.168.1.20', '203.0.113.9')).statusCode).toBe(401);
    const seen = loggedAddresses(trusting);
    expect(seen).toContain('203.0.113.7');
    expect(seen).toContain('203.0.113.8');
    expect(seen).not.toContain(BALANCER);
  });

  it('a peer that is not a trusted balancer cannot pick its address by sending X-Forwarded-For', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 70; i++) statuses.push((await wrongKey(trusting, '198.51.100.1', `203.0.113.${100 + i}`)).statusCode);
    expect(statuses.at(-1)).toBe(429);
  });

  it('without TRUST_PROXY, X-Forwarded-For is ignored: every client behind the balancer shares its address', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 70; i++) statuses.push((await wrongKey(plain, BALANCER, `203.0.113.${i}`)).statusCode);
    expect(statuses.at(-1)).toBe(429);
    const seen = new Set(loggedAddresses(plain));
    expect([...seen]).toEqual([BALANCER]);
  });
});
