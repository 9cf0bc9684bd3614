/**
 * Route validators and serialisers compiled on first use (http/lazy-compilers.ts) and the warm-up
 * that compiles the rest after `cds serve` listens (app/warm-up.ts): a request sees exactly what
 * an eagerly compiled route gives, a broken schema still fails where a test sees it, and the
 * warm-up compiles /v1 first and leaves nothing pending.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { createContext } from '../../../src/app/context.js';
import { warmUpInBackground } from '../../../src/app/warm-up.js';
import { migrateToLatest } from '../../../src/db/database.js';
import { buildAppWithCompilers } from '../../../src/http/build-app.js';
import { createLazyCompilers, type LazyCompilers } from '../../../src/http/lazy-compilers.js';
import { createLogger } from '../../../src/lib/logger.js';
import { createTestDatabase } from '../../support/databases.js';
import { testConfig } from '../../support/test-app.js';

const AJV = { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false, strict: true } } as const;

const bodySchema = {
  type: 'object',
  required: ['amount'],
  additionalProperties: false,
  properties: { amount: { type: 'integer', minimum: 1 } },
} as const;
const responseSchema = {
  200: { type: 'object', additionalProperties: false, properties: { amount: { type: 'integer' }, note: { type: 'string' } } },
} as const;

function declareRoutes(app: FastifyInstance): void {
  app.post('/v1/things', { schema: { body: bodySchema, response: responseSchema } }, async (request) => ({
    ...(request.body as { amount: number }),
    secret: 'never serialised',
  }));
  app.get<{ Params: { id: string } }>('/portal/things/:id', { schema: { params: { type: 'object', properties: { id: { type: 'string', pattern: '^t_' } } } } }, async (request) => ({ id: request.params.id }));
  app.post<{ Headers: { 'idempotency-key'?: string } }>(
    '/v1/keyed',
    { schema: { headers: { type: 'object', required: ['Idempotency-Key'], properties: { 'Idempotency-Key': { type: 'string', minLength: 3 } } } } },
    async (request) => ({ key: request.headers['idempotency-key'] }),
  );
}

async function buildPair(): Promise<{ eager: FastifyInstance; lazy: FastifyInstance; compilers: LazyCompilers }> {
  const eager = Fastify({ ajv: AJV });
  declareRoutes(eager);
  const compilers = createLazyCompilers();
  const lazy = Fastify({ ajv: AJV, schemaController: { compilersFactory: compilers.factories } });
  declareRoutes(lazy);
  await Promise.all([eager.ready(), lazy.ready()]);
  return { eager, lazy, compilers };
}

const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

describe('lazily compiled route schemas', () => {
  it('compiles nothing before a request, and then only what that request needs', async () => {
    const { eager, lazy, compilers } = await buildPair();
    apps.push(eager, lazy);
    // body + 200 serialiser of POST /v1/things, params of GET and HEAD /portal/things/:id, headers of /v1/keyed.
    const before = compilers.pending();
    expect(before).toBeGreaterThanOrEqual(5);
    const res = await lazy.inject({ method: 'POST', url: '/v1/things', payload: { amount: 5 } });
    expect(res.statusCode).toBe(200);
    expect(compilers.pending()).toBe(before - 2);
  });

  it('answers every request exactly as eagerly compiled validators and serialisers do', async () => {
    const { eager, lazy } = await buildPair();
    apps.push(eager, lazy);
    const requests = [
      { method: 'POST', url: '/v1/things', payload: { amount: 5 } },
      { method: 'POST', url: '/v1/things', payload: { amount: '5' } },
      { method: 'POST', url: '/v1/things', payload: { amount: 5, extra: true } },
      { method: 'POST', url: '/v1/things', payload: {} },
      { method: 'GET', url: '/portal/things/t_1' },
      { method: 'GET', url: '/portal/things/x_1' },
      { method: 'HEAD', url: '/portal/things/x_1' },
      // Header schemas are lower-cased as Fastify does for its own compiler.
      { method: 'POST', url: '/v1/keyed', headers: { 'Idempotency-Key': 'abc' }, payload: {} },
      { method: 'POST', url: '/v1/keyed', headers: { 'idempotency-key': 'ab' }, payload: {} },
      { method: 'POST', url: '/v1/keyed', payload: {} },
    ] as const;
    for (const request of requests) {
      const [a, b] = await Promise.all([eager.inject(request), lazy.inject(request)]);
      expect({ status: b.statusCode, body: b.body }, `${request.method} ${request.url}`).toEqual({ status: a.statusCode, body: a.body });
    }
    // The ones that must fail do (the comparison above would also pass if neither validated).
    expect((await lazy.inject(requests[2])).statusCode).toBe(400);
    expect((await lazy.inject(requests[8])).statusCode).toBe(400);
    expect((await lazy.inject(requests[0])).body).toBe('{"amount":5}');
  });

  it('compileAll compiles what is left, and a schema Ajv refuses fails there naming the route', async () => {
    const { eager, lazy, compilers } = await buildPair();
    apps.push(eager, lazy);
    compilers.compileAll();
    expect(compilers.pending()).toBe(0);

    const broken = createLazyCompilers();
    const app = Fastify({ ajv: AJV, schemaController: { compilersFactory: broken.factories } });
    apps.push(app);
    app.post('/v1/broken', { schema: { body: { type: 'object', properties: { a: { type: 'strnig' } } } } }, async () => ({}));
    await app.ready();
    expect(() => broken.compileAll()).toThrow(/POST \/v1\/broken body/);
    // Left to its request, it is a 500, never an unvalidated body reaching the handler.
    expect((await app.inject({ method: 'POST', url: '/v1/broken', payload: { a: 1 } })).statusCode).toBe(500);
  });
});

describe("the service's own routes", () => {
  it('every validator and serialiser of every route compiles', async () => {
    const db = await createTestDatabase('sqlite');
    const ctx = createContext(testConfig(db), { logger: createLogger('silent') });
    try {
      await migrateToLatest(ctx.storage.db);
      const { app, compilers } = await buildAppWithCompilers(ctx);
      apps.push(app);
      await app.ready();
      expect(compilers.pending()).toBeGreaterThan(100);
      compilers.compileAll();
      expect(compilers.pending()).toBe(0);
    } finally {
      await Promise.all(apps.splice(0).map((a) => a.close()));
      await ctx.close();
      await db.drop();
    }
  });
});

describe('warm-up after listen', () => {
  it('compiles the /v1 routes first, then the rest, then prepares argon2', async () => {
    const { eager, lazy, compilers } = await buildPair();
    apps.push(eager, lazy);
    const order: string[] = [];
    const recording: LazyCompilers = {
      ...compilers,
      compileNext: (only) => {
        const label = compilers.compileNext(only);
        if (label !== null) order.push(label);
        return label;
      },
    };
    let prepared = false;
    await new Promise<void>((resolve, reject) =>
      warmUpInBackground({ ctx: { accounts: { prepare: () => (prepared = true) } } as never, compilers: recording, server: new EventEmitter(), onError: reject, onDone: resolve }),
    );
    expect(prepared).toBe(true);
    expect(compilers.pending()).toBe(0);
    const firstPortal = order.findIndex((l) => l.includes('/portal/'));
    expect(firstPortal).toBeGreaterThan(0);
    expect(order.slice(0, firstPortal).every((l) => l.includes(' /v1/'))).toBe(true);
    expect(order.slice(firstPortal).some((l) => l.includes(' /v1/'))).toBe(false);
  });

  it('takes no step while a request is in flight, and goes on when it has finished', async () => {
    const { eager, lazy, compilers } = await buildPair();
    apps.push(eager, lazy);
    const server = new EventEmitter();
    const response = new EventEmitter();
    let done = false;
    const finished = new Promise<void>((resolve, reject) =>
      warmUpInBackground({ ctx: { accounts: { prepare: () => undefined } } as never, compilers, server, onError: reject, onDone: () => ((done = true), resolve()) }),
    );
    server.emit('request', {}, response);
    const before = compilers.pending();
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(compilers.pending()).toBe(before);
    expect(done).toBe(false);
    response.emit('close');
    await finished;
    expect(compilers.pending()).toBe(0);
    // Done: it no longer listens for requests.
    expect(server.listenerCount('request')).toBe(0);
  });
});
