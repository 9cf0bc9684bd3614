/**
 * A webhook receiver for tests: a real HTTPS server on 127.0.0.1 with a certificate from a test CA
 * made at start-up. Tests trust the CA through the delivery worker's `ca` option, or as a process
 * would, through NODE_EXTRA_CA_CERTS (`writeCaFile`). Every request is recorded raw (header names
 * as sent, body bytes as text) and the answer is switched at runtime, per path or for all paths:
 * a status (2xx, 500, ...), a delay, a hang (never answer), a TCP reset, a redirect. A receiver
 * started with `certificate: 'untrusted'` presents a certificate from another CA (a TLS failure).
 */
import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import path from 'node:path';
import { generate } from 'selfsigned';
import { makeTempDir } from './server-process.js';

export type ReceiverMode =
  /** `delaysMs`: the answer's delay for each request to the path in turn (the last for the rest), instead of `delayMs`. */
  | { kind: 'status'; status: number; body?: string; delayMs?: number; delaysMs?: number[] }
  /** Accept the request and never answer (the sender must time out). */
  | { kind: 'hang' }
  /** Hold the answer (200) until the test releases it (`release`), oldest first. */
  | { kind: 'held' }
  /** Destroy the connection with a TCP reset instead of answering. */
  | { kind: 'reset' }
  /** 3xx with a Location pointing at `/redirected` on this receiver (which must never be hit). */
  | { kind: 'redirect'; status?: number };

export interface ReceivedWebhook {
  path: string;
  method: string;
  /** Header names in the case they were sent, values as sent. */
  rawHeaders: Array<[string, string]>;
  /** Lower-cased header map. */
  headers: Record<string, string>;
  body: string;
  receivedAt: number;
}

export interface WebhookReceiver {
  /** `https://127.0.0.1:<port>` */
  origin: string;
  port: number;
  /** PEM of the CA that issued the receiver's certificate. */
  ca: string;
  url(pathname: string): string;
  requests: ReceivedWebhook[];
  requestsTo(pathname: string): ReceivedWebhook[];
  /** Set the answer for one path, or for every path without its own ('*'). */
  setMode(pathname: string | '*', mode: ReceiverMode | number): void;
  /** Most requests in flight at once on a path. */
  maxConcurrent(pathname: string): number;
  /** Answers the oldest `count` requests a `held` mode is holding on a path (all of them by default); returns how many. */
  release(pathname: string, count?: number): number;
  /** Resolves once predicate holds; on time-out the error says how many arrived and, if given, describe()'s text (say, the server's log tail). */
  waitFor(predicate: (requests: ReceivedWebhook[]) => boolean, timeoutMs?: number, describe?: () => string): Promise<void>;
  clear(): void;
  stop(): Promise<void>;
}

export interface Authority {
  cert: string;
  key: string;
}

let trustedCa: Promise<Authority> | null = null;
let otherCa: Promise<Authority> | null = null;

async function makeCa(name: string): Promise<Authority> {
  const pems = await generate([{ name: 'commonName', value: name }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 7 * 24 * 3600_000),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}

/** The CA the tests trust (one per test process). */
export function testCa(): Promise<Authority> {
  trustedCa ??= makeCa('cds test webhook CA');
  return trustedCa;
}

/** A server certificate for 127.0.0.1 and localhost issued by `ca` (for other HTTPS test servers). */
export async function leafFrom(ca: Authority): Promise<{ cert: string; key: string }> {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 7 * 24 * 3600_000),
    ca: { cert: ca.cert, key: ca.key },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }] },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}

/** Write the trusted CA to a PEM file (for NODE_EXTRA_CA_CERTS of a child process). */
export async function writeCaFile(): Promise<string> {
  const file = path.join(makeTempDir('cds-ca-'), 'webhook-ca.pem');
  writeFileSync(file, (await testCa()).cert);
  return file;
}

export async function startWebhookReceiver(options: { certificate?: 'trusted' | 'untrusted' } = {}): Promise<WebhookReceiver> {
  const ca = options.certificate === 'untrusted' ? await (otherCa ??= makeCa('some other CA')) : await testCa();
  const leaf = await leafFrom(ca);
  const requests: ReceivedWebhook[] = [];
  const modes = new Map<string, ReceiverMode>([['*', { kind: 'status', status: 200, body: '{"received":true}' }]]);
  const inFlight = new Map<string, number>();
  const maxInFlight = new Map<string, number>();
  const sockets = new Set<Socket>();
  const waiters = new Set<() => void>();
  /** Per path, the answers a `held` mode is holding, oldest first. */
  const holding = new Map<string, Array<() => void>>();

  const server: Server = createServer({ cert: leaf.cert, key: leaf.key }, (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const pathname = (req.url ?? '/').split('?')[0]!;
      const rawHeaders: Array<[string, string]> = [];
      for (let i = 0; i < req.rawHeaders.length; i += 2) rawHeaders.push([req.rawHeaders[i]!, req.rawHeaders[i + 1]!]);
      requests.push({
        path: pathname,
        method: req.method ?? '',
        rawHeaders,
        headers: Object.fromEntries(rawHeaders.map(([k, v]) => [k.toLowerCase(), v])),
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      });
      const now = (inFlight.get(pathname) ?? 0) + 1;
      inFlight.set(pathname, now);
      maxInFlight.set(pathname, Math.max(maxInFlight.get(pathname) ?? 0, now));
      // A request stops counting when its answer is written: 'close' alone comes only after the
      // write's completion callback, which a busy event loop can run after the client has already
      // read the answer and sent its next request (an over-count of what was really in flight).
      // Likewise when the client gives up on it (a time-out closes its connection): the end of the
      // connection is read at once, while 'close' waits for our own side's TLS shutdown, by which
      // time the client may have sent its next request on another connection.
      let counted = true;
      const socket = req.socket;
      const done = () => {
        if (!counted) return;
        counted = false;
        socket.off('end', done);
        inFlight.set(pathname, (inFlight.get(pathname) ?? 1) - 1);
      };
      socket.once('end', done);
      res.on('close', done);
      const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
      res.end = ((...args: unknown[]) => {
        done();
        return end(...args);
      }) as typeof res.end;
      for (const w of waiters) w();
      answer(modes.get(pathname) ?? modes.get('*')!, pathname, req, res);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // TLS failures on the client side show up here as aborted handshakes; they are expected.
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  const origin = `https://127.0.0.1:${port}`;

  /** Requests answered per mode (as set), for `delaysMs`. */
  const answered = new WeakMap<ReceiverMode, number>();
  function answer(mode: ReceiverMode, pathname: string, req: IncomingMessage, res: ServerResponse): void {
    switch (mode.kind) {
      case 'status': {
        const send = () => {
          if (res.destroyed) return;
          res.writeHead(mode.status, { 'content-type': 'application/json' });
          res.end(mode.body ?? '');
        };
        const nth = answered.get(mode) ?? 0;
        answered.set(mode, nth + 1);
        const delay = mode.delaysMs ? mode.delaysMs[Math.min(nth, mode.delaysMs.length - 1)] : mode.delayMs;
        if (delay) setTimeout(send, delay);
        else send();
        return;
      }
      case 'hang':
        return;
      case 'held': {
        const queue = holding.get(pathname) ?? [];
        holding.set(pathname, queue);
        queue.push(() => {
          if (res.destroyed) return;
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"received":true}');
        });
        return;
      }
      case 'reset': {
        // resetAndDestroy works on the TCP socket under the TLS one (a TLSSocket refuses it).
        const tcp = (req.socket as unknown as { _parent?: Socket })._parent;
        if (tcp) tcp.resetAndDestroy();
        else req.socket.destroy();
        return;
      }
      case 'redirect':
        res.writeHead(mode.status ?? 302, { location: `${origin}/redirected` });
        res.end();
        return;
    }
  }

  return {
    origin,
    port,
    ca: (await testCa()).cert,
    url: (pathname) => `${origin}${pathname}`,
    requests,
    requestsTo: (pathname) => requests.filter((r) => r.path === pathname),
    setMode(pathname, mode) {
      modes.set(pathname, typeof mode === 'number' ? { kind: 'status', status: mode } : mode);
    },
    maxConcurrent: (pathname) => maxInFlight.get(pathname) ?? 0,
    release(pathname, count = Infinity) {
      const queue = holding.get(pathname) ?? [];
      const answers = queue.splice(0, count);
      for (const answerNow of answers) answerNow();
      return answers.length;
    },
    waitFor(predicate, timeoutMs = 10_000, describe) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (predicate(requests)) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`receiver: condition not met within ${timeoutMs} ms (${requests.length} requests received)${describe ? `\n${describe()}` : ''}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    clear() {
      requests.length = 0;
      maxInFlight.clear();
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * True when `req` carries a `v1` signature of its body by `secret` (the Svc-Signature scheme,
 * docs/webhooks.md). Computed here from the documented scheme, not with the server's
 * `verifySignatureHeader`, so a receiver-side check does not share the signer's code.
 */
export function signedWith(req: ReceivedWebhook, secret: string): boolean {
  const parts = (req.headers['svc-signature'] ?? '').split(',');
  const t = parts.find((p) => p.startsWith('t='))?.slice(2);
  if (!t) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${req.body}`).digest('hex');
  return parts.filter((p) => p.startsWith('v1=')).some((p) => p.slice(3) === expected);
}

