/**
 * A refusal that has nothing left to read keeps the connection (http/lingering-close.ts). Only an
 * answer sent before a request's body was all read must close it; a GET, a DELETE or a POST with
 * no body that is refused at once (a malformed id, an unknown path) used to be answered
 * `Connection: close` too, because Node marks a bodiless request complete only after its
 * first answer may already have been written: an SDK polling with a wrong id paid a new connection
 * (a new TLS handshake) for every try.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';

interface Answer {
  status: number;
  connection: string | undefined;
  reused: boolean;
}

describe('keep-alive after refusals [sqlite]', () => {
  let db: TestDatabase;
  let t: TestApp;
  let port: number;
  let agent: http.Agent;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await createTestApp(db);
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  /** One request on the agent's connection; `reused`: it went on a connection an earlier request used. */
  function send(method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, reused: req.reusedSocket }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  it('answers bodiless refusals on a kept connection, and the next request reuses it', async () => {
    agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const key = bearer(t.tenant.sandbox.apiKey);
      const first = await send('GET', '/healthz');
      expect(first).toMatchObject({ status: 200, reused: false });
      // The key is cached from here on, so the refusals below that need it are answered in the turn their request arrived.
      expect(await send('GET', '/v1/decisions/bnpl/00000000-0000-4000-8000-000000000000', key)).toMatchObject({ status: 404, reused: true });
      const refusals: Array<[string, string, string, Record<string, string>, number]> = [
        ['a poll with a malformed id (400, answered before any await)', 'GET', '/v1/decisions/bnpl/not-a-uuid', key, 400],
        ['an unknown path with a key (404)', 'GET', '/v1/nowhere', key, 404],
        ['an unknown path outside /v1 (404)', 'GET', '/nowhere', {}, 404],
        ['a poll without a key (401)', 'GET', '/v1/decisions/bnpl/00000000-0000-4000-8000-000000000000', {}, 401],
        ['a method the path does not have (405)', 'DELETE', '/v1/decisions/bnpl', key, 405],
        ['a POST with Content-Length: 0 and no key (401)', 'POST', '/v1/decisions/bnpl', { 'content-length': '0' }, 401],
      ];
      for (const [name, method, path, headers, status] of refusals) {
        const answer = await send(method, path, headers);
        expect(answer.status, name).toBe(status);
        expect(answer.connection, name).not.toBe('close');
        expect(answer.reused, name).toBe(true);
      }
      expect(await send('GET', '/healthz')).toMatchObject({ status: 200, reused: true });
    } finally {
      agent.destroy();
    }
  });

  it('still closes, lingering, a connection whose refused request had a body still to come', async () => {
    agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      await send('GET', '/healthz');
      // A 401 for a POST whose body is sent only after the answer: the connection cannot carry another request.
      const answer = await new Promise<Answer>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/decisions/bnpl', agent, headers: { 'content-type': 'application/json', 'content-length': '10' } }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, reused: req.reusedSocket }));
        });
        req.on('error', reject);
        req.flushHeaders();
        setTimeout(() => req.end('{"a":"bc"}'), 50);
      });
      expect(answer.status).toBe(401);
      expect(answer.connection).toBe('close');
      expect(await send('GET', '/healthz')).toMatchObject({ status: 200, reused: false });
    } finally {
      agent.destroy();
    }
  });
});
