/**
 * Hostile input against a real `cds serve` process (issue 11, item 3), for what inject() cannot
 * express: bytes on a raw socket (invalid UTF-8 in the request line and headers, duplicate and
 * conflicting headers, chunked bodies past 64 KiB, wrong Content-Length, slowloris-style partial
 * requests that must not stall other clients), then the same generated requests as the in-process
 * suite over HTTP/1.1, with row counts read directly from the database file. The child must still
 * be alive and healthy at the end, and its log must hold no generated PII.
 *
 * The soak (`npm run soak:fuzz`) is this file with FUZZ_RUNS=100000: the count spreads over every
 * route of the catalogue. FUZZ_SEED reproduces a run.
 */
import net from 'node:net';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage, type Storage } from '../../../src/db/database.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { buildFuzzEnv, fuzzSeed, httpTarget, piiInLogs, runFuzz, tableCounter, type FuzzRunReport } from '../../support/fuzz/fuzz-harness.js';
import { ROUTE_CATALOGUE, type FuzzEnv } from '../../support/fuzz/route-catalogue.js';
import { cleanupProcesses, databaseEnv, runCli, startServer, type ServerProcess } from '../../support/server-process.js';

const SEED = fuzzSeed();
const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
const ROUTES = Object.keys(ROUTE_CATALOGUE);

interface RawAnswer {
  statuses: number[];
  text: string;
}

/** Write raw bytes on a fresh connection (every request says Connection: close) and read until the server closes it. */
function rawExchange(port: number, chunks: Buffer[], options: { endAfterWrite?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (c: Buffer) => received.push(c));
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? undefined : reject(err)));
    socket.on('close', () => {
      const text = Buffer.concat(received).toString('latin1');
      resolve({ statuses: [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1])), text });
    });
    socket.on('connect', () => {
      for (const c of chunks) socket.write(c);
      if (options.endAfterWrite) socket.end();
    });
  });
}

/** Every error body in a raw answer is the stable one, with the Request-Id header beside it. */
function expectStableErrors(answer: RawAnswer, label: string): void {
  expect(answer.statuses.length, `${label}: no answer at all\n${answer.text.slice(0, 300)}`).toBeGreaterThan(0);
  for (const s of answer.statuses) expect(s, label).toBeLessThan(500);
  const responses = answer.text.split(/(?=HTTP\/1\.1 \d{3} )/).filter((r) => r.startsWith('HTTP/1.1'));
  for (const r of responses) {
    const status = Number(r.slice(9, 12));
    if (status < 400) continue;
    const [head, body] = r.split('\r\n\r\n');
    const requestId = /\r\nrequest-id: (\S+)/i.exec(head!)?.[1];
    expect(requestId, `${label}: Request-Id`).toMatch(/^req_/);
    if (label.startsWith('HEAD')) {
      expect(body, `${label}: an answer to HEAD has no body`).toBe('');
      continue;
    }
    const parsed = JSON.parse(body!.slice(0, body!.lastIndexOf('}') + 1)) as Record<string, unknown>;
    expect(Object.keys(parsed), label).toEqual(['error', 'message', 'request_id']);
    expect(parsed.request_id, label).toBe(requestId);
  }
}

describe('hostile input against a real server process [sqlite]', () => {
  let db: TestDatabase;
  let server: ServerProcess;
  let storage: Storage;
  let env: FuzzEnv;
  let target: ReturnType<typeof httpTarget>;
  const report: FuzzRunReport = { requests: 0, byStatus: {}, writesByStatus: {} };

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    server = await startServer({
      env: { ...databaseEnv(db), RATE_LIMIT_SANDBOX_PER_S: '1000000', RATE_LIMIT_LIVE_PER_S: '1000000', PUBLIC_BASE_URL: 'http://127.0.0.1:3000', LOG_LEVEL: 'info' },
    });
    target = httpTarget(server.baseUrl);
    env = await buildFuzzEnv(target);
    storage = openStorage({ databaseUrl: null, dataDir: db.dataDir, poolSize: 1 });
  });
  afterAll(async () => {
    console.log(`hostile input [process]: ${report.requests} requests; statuses ${JSON.stringify(report.byStatus)}; writes by status ${JSON.stringify(report.writesByStatus)}`);
    target?.close();
    await storage?.close();
    await cleanupProcesses();
    await db?.drop();
  });

  const key = () => `Bearer ${env.keys.sandbox}`;
  const bnpl = () => JSON.stringify({ consumer: { consumer_id: env.softConsumerId }, transaction: { amount: '149.97', currency: 'USD', merchant_name: 'Acme', merchant_category: 'furniture' } });

  it('answers invalid UTF-8 and control bytes in the request line and headers with the stable 400', async () => {
    const cases: Array<[string, Buffer]> = [
      ['overlong UTF-8 in the path', Buffer.concat([Buffer.from('GET /v1/decisions/bnpl/'), Buffer.from([0xc0, 0xaf]), Buffer.from(' HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')])],
      ['0xFF in the path', Buffer.concat([Buffer.from('GET /verify/'), Buffer.from([0xff, 0xfe]), Buffer.from(' HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')])],
      ['invalid UTF-8 in a header value', Buffer.concat([Buffer.from(`GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: ${key()}\r\nIdempotency-Key: `), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('\r\nConnection: close\r\n\r\n')])],
      ['NUL in a header value', Buffer.from(`GET /v1/events HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\nConnection: close\r\n\r\n`, 'latin1')],
      ['space in the header name', Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\nConnection: close\r\n\r\n')],
      ['bare LF line ends', Buffer.from('GET /healthz HTTP/1.1\nHost: x\nConnection: close\n\n')],
      ['garbage request line', Buffer.from('\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003 not http\r\n\r\n', 'latin1')],
      ['HTTP/2 preface', Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')],
      ['headers over the limit', Buffer.from(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100_000)}\r\nConnection: close\r\n\r\n`)],
      ['invalid UTF-8 in a JSON body', Buffer.concat([Buffer.from(`POST /v1/decisions/bnpl HTTP/1.1\r\nHost: x\r\nAuthorization: ${key()}\r\nContent-Type: application/json\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{"a":"`), Buffer.from([0xc3, 0x28, 0xa0, 0xa1]), Buffer.from('"}')])],
      ['HEAD with a request line over the header limit', Buffer.from(`HEAD /healthz?x=${'q'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)],
    ];
    for (const [label, bytes] of cases) expectStableErrors(await rawExchange(server.port, [bytes]), label);
  });

  it('handles duplicate, conflicting and wrong framing headers: never a 5xx, the stable body on every refusal', async () => {
    const body = bnpl();
    const len = Buffer.byteLength(body);
    const head = (extra: string) => `POST /v1/decisions/bnpl HTTP/1.1\r\nHost: x\r\nAuthorization: ${key()}\r\n${extra}Connection: close\r\n\r\n`;
    const cases: Array<[string, Buffer[]]> = [
      ['two Content-Types', [Buffer.from(head(`Content-Type: application/json\r\nContent-Type: text/plain\r\nContent-Length: ${len}\r\n`) + body)]],
      ['two Authorization headers', [Buffer.from(head(`Authorization: Bearer ${env.keys.live}\r\nContent-Type: application/json\r\nContent-Length: ${len}\r\n`) + body)]],
      ['two Idempotency-Keys', [Buffer.from(head(`Idempotency-Key: a\r\nIdempotency-Key: b\r\nContent-Type: application/json\r\nContent-Length: ${len}\r\n`) + body)]],
      ['two different Content-Lengths', [Buffer.from(head(`Content-Type: application/json\r\nContent-Length: ${len}\r\nContent-Length: ${len + 1}\r\n`) + body)]],
      ['Content-Length and chunked', [Buffer.from(head(`Content-Type: application/json\r\nContent-Length: ${len}\r\nTransfer-Encoding: chunked\r\n`) + `${len.toString(16)}\r\n${body}\r\n0\r\n\r\n`)]],
      ['Content-Length shorter than the body', [Buffer.from(head(`Content-Type: application/json\r\nContent-Length: ${len - 10}\r\n`) + body)]],
      ['Content-Length longer than the body, then the client stops', [Buffer.from(head(`Content-Type: application/json\r\nContent-Length: ${len + 500}\r\n`) + body)]],
      ['negative Content-Length', [Buffer.from(head(`Content-Type: application/json\r\nContent-Length: -1\r\n`) + body)]],
      ['Content-Length of 2^64', [Buffer.from(head(`Content-Type: application/json\r\nContent-Length: 18446744073709551616\r\n`) + body)]],
      ['a bad chunk size', [Buffer.from(head(`Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n`) + `zz\r\n${body}\r\n0\r\n\r\n`)]],
      ['charset latin1 with UTF-8 bytes', [Buffer.from(head(`Content-Type: application/json; charset=latin1\r\nContent-Length: ${len}\r\n`) + body)]],
    ];
    for (const [label, chunks] of cases) {
      const answer = await rawExchange(server.port, chunks, { endAfterWrite: label.includes('then the client stops') });
      // A request whose body never completes may be dropped without an answer; anything said is stable.
      if (label.includes('then the client stops') && answer.statuses.length === 0) continue;
      expectStableErrors(answer, label);
    }
  });

  it('refuses a chunked body past 64 KiB with 413, whatever the chunking', async () => {
    const piece = `"${'p'.repeat(8_190)}",`;
    for (const chunkCount of [9, 40]) {
      const chunks: Buffer[] = [Buffer.from(`POST /v1/decisions/bnpl HTTP/1.1\r\nHost: x\r\nAuthorization: ${key()}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`)];
      chunks.push(Buffer.from(`1\r\n[\r\n`));
      for (let i = 0; i < chunkCount; i++) chunks.push(Buffer.from(`${Buffer.byteLength(piece).toString(16)}\r\n${piece}\r\n`));
      chunks.push(Buffer.from('1\r\n]\r\n0\r\n\r\n'));
      // Keep-alive and chunk by chunk, done once a whole answer is in: a server closing on bytes it
      // never read resets the connection, and the reset could discard the answer before we read it.
      const answer = await new Promise<RawAnswer>((resolve, reject) => {
        const socket = net.connect(server.port, '127.0.0.1');
        let received = Buffer.alloc(0);
        let done = false;
        const finish = () => {
          if (done) return;
          done = true;
          socket.destroy();
          const text = received.toString('latin1');
          resolve({ statuses: [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1])), text });
        };
        socket.on('data', (c: Buffer) => {
          received = Buffer.concat([received, c]);
          const text = received.toString('latin1');
          const headEnd = text.indexOf('\r\n\r\n');
          const length = /\r\ncontent-length: (\d+)/i.exec(text)?.[1];
          if (headEnd >= 0 && length !== undefined && received.length >= headEnd + 4 + Number(length)) finish();
        });
        socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? undefined : reject(err)));
        socket.on('close', finish);
        socket.on('connect', async () => {
          for (const c of chunks) {
            if (done || socket.destroyed) return;
            await new Promise<void>((written) => socket.write(c, () => written()));
          }
        });
      });
      expectStableErrors(answer, `${chunkCount} chunks`);
      expect(answer.statuses[0]).toBe(413);
    }
  });

  it('keeps answering other clients while slowloris connections hold partial requests open', async () => {
    const held: net.Socket[] = [];
    for (let i = 0; i < 50; i++) {
      const s = net.connect(server.port, '127.0.0.1');
      s.on('error', () => undefined);
      await new Promise<void>((resolve) => s.once('connect', () => resolve()));
      // Half a request line, half a header block, or a body that never completes.
      s.write(i % 3 === 0 ? 'GET /v1/ev' : i % 3 === 1 ? `GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bea` : `POST /v1/decisions/bnpl HTTP/1.1\r\nHost: x\r\nAuthorization: ${key()}\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"consumer":`);
      held.push(s);
    }
    try {
      for (let i = 0; i < 5; i++) {
        expect((await server.request('/healthz')).status).toBe(200);
        const r = await server.request('/v1/decisions/bnpl', { method: 'POST', headers: { authorization: key(), 'content-type': 'application/json' }, body: bnpl() });
        expect(r.status).toBe(200);
      }
    } finally {
      for (const s of held) s.destroy();
    }
  });

  it('keeps every property over generated requests, writes only for 2xx and the stored 422, and stays alive', async () => {
    const countRows = await tableCounter(storage.readDb as unknown as Kysely<unknown>, 'sqlite');
    const perRoute = Math.max(2, Math.round(RUNS / ROUTES.length));
    const r = await runFuzz({ target, env, runsPerRoute: perRoute, seed: SEED, countRows });
    Object.assign(report, r);
    expect(r.requests).toBeGreaterThanOrEqual(perRoute * ROUTES.length);
    expect(server.isRunning()).toBe(true);
    expect((await server.request('/healthz')).status).toBe(200);
    expect(server.logs().length).toBeGreaterThan(0);
    expect(piiInLogs(server.stderrText(), env.pii)).toEqual([]);
  }, Math.max(300_000, RUNS * 60));
});

describe('a request that never arrives in full [sqlite]', () => {
  /** HTTP_REQUEST_TIMEOUT_MS for this server: short, so the test waits seconds, not the default 5 minutes. */
  const REQUEST_TIMEOUT_MS = 2_000;
  let db: TestDatabase;
  let server: ServerProcess;

  let apiKey: string;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    const env = { ...databaseEnv(db), HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) };
    server = await startServer({ env });
    const created = await runCli(['tenants', 'create', '--name', 'Slow Client Lender', '--json'], env);
    expect(created.code, created.stderr).toBe(0);
    apiKey = (JSON.parse(created.stdout) as { sandbox: { api_key: string } }).sandbox.api_key;
  });
  afterAll(async () => {
    await server?.stop();
    await db?.drop();
  });

  it('is answered 400 "not completed in time" and its connection closed after HTTP_REQUEST_TIMEOUT_MS, whatever part is missing; answered early, it is closed too; the server goes on', async () => {
    const body = (key: string) => `POST /v1/decisions/bnpl HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"consumer":`;
    const partial: Record<string, [text: string, status: number, says: string]> = {
      'half a request line': ['GET /v1/ev', 400, 'The request was not completed in time'],
      'half the headers': ['GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bea', 400, 'The request was not completed in time'],
      // Headers complete: the request is routed and waits for a body that never comes. Without
      // the time-out (Fastify's default: none) this connection stays open for ever.
      'a body that never completes': [body(apiKey), 400, 'The request was not completed in time'],
      // Answered before its body (an unknown key): kept alive, Node would wait for the rest of the
      // body for ever; the answer closes the connection instead.
      'a body that never completes, answered early': [body('svc_test_unknown'), 401, 'invalid_api_key'],
    };
    const TEST_BOUND_MS = 15_000;
    const outcomes = await Promise.all(
      Object.entries(partial).map(
        ([what, [text]]) =>
          new Promise<{ what: string; closedAfterMs: number; answer: string }>((resolve) => {
            const started = performance.now();
            const socket = net.connect(server.port, '127.0.0.1');
            let answer = '';
            const bound = setTimeout(() => socket.destroy(), TEST_BOUND_MS);
            socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
            socket.on('error', () => undefined);
            socket.on('close', () => {
              clearTimeout(bound);
              resolve({ what, closedAfterMs: performance.now() - started, answer });
            });
            socket.write(text);
          }),
      ),
    );
    for (const o of outcomes) {
      const [, status, says] = partial[o.what]!;
      expect(o.closedAfterMs, o.what).toBeLessThan(TEST_BOUND_MS - 1_000);
      expect(o.answer, o.what).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(o.answer, o.what).toContain(says);
    }
    expect(server.isRunning()).toBe(true);
    expect((await server.request('/healthz')).status).toBe(200);
    expect(server.stderrText()).not.toMatch(/"level":(50|60)/);
  });
});
