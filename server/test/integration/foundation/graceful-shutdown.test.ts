/**
 * Shutdown finishes what it started: closing the server (what SIGTERM does in `cds serve`) lets an
 * in-flight state change complete and commit, while a request arriving afterwards is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { countProbes, probeSignals, registerProbeRoutes } from '../../support/probe-routes.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';

describe('graceful shutdown', () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await createTestApp(db, { build: { registerExtraV1Routes: registerProbeRoutes } });
  });
  afterAll(async () => {
    await t?.ctx.close();
    await db?.drop();
  });

  it('completes an in-flight request before closing', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const entered = new Promise<void>((resolve) => {
      const onEntered = (name: string) => {
        if (name !== 'in-flight') return;
        probeSignals.off('entered', onEntered);
        resolve();
      };
      probeSignals.on('entered', onEntered);
    });
    const inFlight = fetch(`${address}/v1/test-probes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.tenant.sandbox.apiKey}`, 'content-type': 'application/json', 'idempotency-key': 'shutdown-1' },
      body: JSON.stringify({ name: 'in-flight', delay_ms: 2_000 }),
    });
    // The handler holds its transaction open for 2 s; close once it is inside it (the probe route
    // signals that), so a loaded machine cannot make the request arrive after the close.
    await entered;
    const order: string[] = [];
    const closed = t.app.close().then(() => order.push('closed'));
    await new Promise((r) => setTimeout(r, 100));
    // Still inside the handler: closing has not finished.
    expect(order).toEqual([]);
    const response = await inFlight;
    expect(response.status).toBe(200);
    expect(((await response.json()) as { name: string }).name).toBe('in-flight');
    await closed;
    expect(order).toEqual(['closed']);
    expect(await countProbes(t.ctx, t.tenant.tenantId, 'in-flight')).toBe(1);
    await expect(fetch(`${address}/healthz`)).rejects.toThrow();
  });
});
