import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, LogCapture, type TestApp } from '../../support/test-app.js';
import { registerProbeRoutes } from '../../support/probe-routes.js';
import { lazyRequestLogger } from '../../../src/http/request-logging.js';

type Line = { level: number; msg: string; reqId?: string; req?: { method: string; url: string; remoteAddress: string }; res?: { statusCode: number }; responseTime?: number };

/** Request logging does not depend on the database: SQLite only. */
describe('request logging (http/request-logging.ts)', () => {
  let db: TestDatabase | undefined;
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    await db?.drop();
    t = undefined;
    db = undefined;
  });
  const start = async (logLevel: string) => {
    db = await createTestDatabase('sqlite');
    t = await createTestApp(db, { logLevel, build: { registerExtraV1Routes: registerProbeRoutes } });
    t.logs.lines.length = 0;
    return t;
  };
  const lines = (app: TestApp) => app.logs.lines.map((l) => JSON.parse(l) as Line);

  it('at info, writes one line per request, when it is answered, with the request and the response; query values and the page token masked', async () => {
    const app = await start('info');
    const answers = [
      await app.app.inject({ method: 'GET', url: '/healthz', remoteAddress: '203.0.113.5' }),
      await app.app.inject({ method: 'GET', url: '/healthz?probe=Jane%20Doe&page=2' }),
      await app.app.inject({ method: 'GET', url: '/v1/decisions/bnpl/00000000-0000-4000-8000-000000000000', headers: bearer('svc_test_' + 'A'.repeat(40)) }),
      await app.app.inject({ method: 'GET', url: '/verify/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }),
    ];
    await new Promise((r) => setImmediate(r));
    const logged = lines(app);
    expect(logged.some((l) => l.msg === 'incoming request')).toBe(false);
    const completed = logged.filter((l) => l.msg === 'request completed');
    // One line per request, in order, each with its own request id.
    expect(completed.map((l) => l.reqId)).toEqual(answers.map((a) => a.headers['request-id']));
    expect(completed.map((l) => [l.level, l.req!.method, l.req!.url, l.res!.statusCode])).toEqual([
      [30, 'GET', '/healthz', 200],
      [30, 'GET', '/healthz?probe=[redacted]&page=[redacted]', 200],
      [30, 'GET', '/v1/decisions/bnpl/00000000-0000-4000-8000-000000000000', 401],
      [30, 'GET', '/verify/[token]', answers[3]!.statusCode],
    ]);
    expect(completed[0]!.req!.remoteAddress).toBe('203.0.113.5');
    for (const l of completed) expect(l.responseTime).toBeGreaterThanOrEqual(0);
    expect(app.logs.text).not.toContain('Jane');
  });

  it("a request's own log lines still carry its request id, at their own level, before its access line", async () => {
    const app = await start('info');
    const failed = await app.app.inject({
      method: 'POST',
      url: '/v1/test-probes',
      headers: { ...bearer(app.tenant.sandbox.apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'p1', fail: true }),
    });
    expect(failed.statusCode).toBe(500);
    await new Promise((r) => setImmediate(r));
    const mine = lines(app).filter((l) => l.reqId === failed.headers['request-id']);
    expect(mine.map((l) => [l.level, l.msg])).toEqual([
      [50, 'unhandled error'],
      [30, 'request completed'],
    ]);
  });

  it('at warn, writes no access line', async () => {
    const app = await start('warn');
    expect((await app.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    await new Promise((r) => setImmediate(r));
    expect(app.logs.lines).toEqual([]);
  });

  it("makes a request's child logger only when a line at an enabled level is written", () => {
    const capture = new LogCapture({ archive: false });
    const parent = pino({ level: 'info', redact: ['*.secret'] }, capture);
    let children = 0;
    const child = parent.child.bind(parent);
    parent.child = ((...args: Parameters<typeof child>) => {
      children += 1;
      return child(...args);
    }) as typeof parent.child;
    const log = lazyRequestLogger(parent, { reqId: 'req_1' }, {});
    log.debug('not written');
    log.trace({ a: 1 }, 'not written either');
    expect(children).toBe(0);
    expect(log.level).toBe('info');
    log.info({ detail: { secret: 's3cr3t' } }, 'written');
    log.warn('again');
    expect(children).toBe(1);
    const written = capture.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(written.map((l) => [l.reqId, l.msg])).toEqual([
      ['req_1', 'written'],
      ['req_1', 'again'],
    ]);
    expect(capture.text).not.toContain('s3cr3t');
  });
});
