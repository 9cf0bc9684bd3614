/**
 * Rolling restarts behind a load balancer (docs/deployment.md): with SHUTDOWN_DRAIN_MS set, SIGTERM
 * first drains: `/readyz` answers 503 (the balancer's signal to stop sending traffic here) while
 * requests are still served and every response closes its keep-alive connection; then the normal
 * graceful stop. A second SIGTERM ends the drain early (the test uses it, so it never waits out a
 * timer), and the process exits 0.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { cleanupProcesses, databaseEnv, pollUntil, runCli, startServer, type HttpResponse, type ServerProcess } from '../../support/server-process.js';

afterAll(cleanupProcesses);

/** A request on a kept-alive connection of `agent` (the way a balancer's upstream pool sends). */
function keepAliveGet(agent: http.Agent, url: string, headers: Record<string, string> = {}): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { agent, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: <T>() => JSON.parse(body) as T }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('graceful drain for rolling restarts (SHUTDOWN_DRAIN_MS)', () => {
  let db: TestDatabase;
  let server: ServerProcess;
  let key: string;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    // Far longer than the test: only the second SIGTERM may end the drain.
    server = await startServer({ env: { ...databaseEnv(db), SHUTDOWN_DRAIN_MS: '120000' }, args: ['--role', 'api'] });
    const r = await runCli(['tenants', 'create', '--name', 'Drain Lender', '--json'], databaseEnv(db));
    expect(r.code, r.stderr).toBe(0);
    key = (JSON.parse(r.stdout) as { sandbox: { api_key: string } }).sandbox.api_key;
  }, 60_000);

  afterAll(async () => {
    await server?.kill9();
    await db?.drop();
  });

  it('SIGTERM: /readyz turns 503 while requests are still served and connections close; a second SIGTERM stops it, exit 0', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect((await server.request('/readyz')).status).toBe(200);
      const before = await keepAliveGet(agent, `${server.baseUrl}/v1/x`, { authorization: `Bearer ${key}` });
      expect(before.status).toBe(404);
      expect(before.headers.connection).toBe('keep-alive');

      server.child.kill('SIGTERM');
      const ready = await pollUntil(
        async () => {
          const r = await server.request('/readyz');
          return r.status === 503 ? r : null;
        },
        { timeoutMs: 10_000, describe: () => server.stderrText() },
      );
      const body = ready.json();
      expect(Object.keys(body).sort()).toEqual(['error', 'message', 'request_id']);
      expect(body.error).toBe('service_unavailable');
      expect(ready.headers['retry-after']).toBe('1');
      await server.waitForLog((l) => l.includes('"draining'));

      // Still alive and still serving while the balancer takes it out of rotation.
      expect((await server.request('/healthz')).status).toBe(200);
      const during = await keepAliveGet(agent, `${server.baseUrl}/v1/x`, { authorization: `Bearer ${key}` });
      expect(during.status, during.body).toBe(404);
      // The kept-alive connection is closed after this answer: the client reconnects elsewhere.
      expect(during.headers.connection).toBe('close');
      expect(server.isRunning()).toBe(true);
      expect(server.logs().some((l) => typeof l.msg === 'string' && l.msg.startsWith('shutting down'))).toBe(false);

      server.child.kill('SIGTERM');
      const exit = await server.exited;
      expect(exit, server.stderrText()).toEqual({ code: 0, signal: null });
      const messages = server.logs().map((l) => String(l.msg));
      const drainAt = messages.findIndex((m) => m.startsWith('draining'));
      const shutdownAt = messages.findIndex((m) => m.startsWith('shutting down'));
      expect(drainAt).toBeGreaterThanOrEqual(0);
      expect(shutdownAt).toBeGreaterThan(drainAt);
      // The stop completed after the drain (on a loaded machine an access-log line written before
      // the signal can still be flushed after it, so "last line" would be the wrong question).
      expect(messages.lastIndexOf('stopped'), messages.slice(-8).join(' | ')).toBeGreaterThan(shutdownAt);
    } finally {
      agent.destroy();
    }
  });
});
