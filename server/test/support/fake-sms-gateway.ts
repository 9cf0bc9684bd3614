/**
 * A fake SMS gateway: a real HTTP server on 127.0.0.1 speaking the contract at the top of
 * server/src/modules/kyc/code-senders.ts:
 *   POST /  Authorization: Bearer <token> (when the fake has one)  Content-Type: application/json
 *   {"to": "+14155550123", "message": "...", "reference": "..."}  ->  202 {"id": "..."}
 * It records every accepted message and parses the 6-digit code out of it. `setFailing(true)` makes
 * it answer 500 (nothing recorded) so a test can see a delivery failure. A request that breaks the
 * contract (wrong token, not JSON, missing fields) gets 401/400 and is kept in `rejected`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface SmsMessage {
  to: string;
  message: string;
  reference: string;
  /** The first run of exactly six digits in `message` (null when there is none). */
  code: string | null;
  authorization: string | undefined;
  receivedAt: number;
}

export interface FakeSmsGateway {
  /** `http://127.0.0.1:<port>/sms`, for SMS_GATEWAY_URL. */
  url: string;
  /** The bearer token it requires (null: none required). */
  token: string | null;
  /** Accepted messages, in order. */
  messages: SmsMessage[];
  /** Requests refused for breaking the contract (status and why). */
  rejected: Array<{ status: number; why: string }>;
  /** Number of requests answered 500 while failing. */
  failedRequests: number;
  setFailing(failing: boolean): void;
  /**
   * The first recorded message at index >= `since` (default 0; pass `messages.length` read before
   * acting to get the next one) sent to `to` (any when omitted), waiting up to `timeoutMs`
   * (default 5 s) for it to arrive. Rejects with a clear message on timeout.
   */
  waitForMessage(options?: { since?: number; to?: string; timeoutMs?: number }): Promise<SmsMessage>;
  stop(): Promise<void>;
}

export const codeIn = (text: string): string | null => /(?<!\d)(\d{6})(?!\d)/.exec(text)?.[1] ?? null;

export async function startFakeSmsGateway(options: { token?: string | null } = {}): Promise<FakeSmsGateway> {
  const token = options.token === undefined ? 'sms_test_token_5d1f' : options.token;
  const messages: SmsMessage[] = [];
  const rejected: Array<{ status: number; why: string }> = [];
  const waiters = new Set<() => void>();
  const sockets = new Set<Socket>();
  let failing = false;
  let failedRequests = 0;

  const answer = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const refuse = (res: ServerResponse, status: number, why: string) => {
    rejected.push({ status, why });
    answer(res, status, { error: why });
  };

  const handle = (req: IncomingMessage, res: ServerResponse, raw: string) => {
    if (req.method !== 'POST') return refuse(res, 405, `method ${req.method}`);
    if (token !== null && req.headers.authorization !== `Bearer ${token}`) return refuse(res, 401, 'bad or missing bearer token');
    if (!String(req.headers['content-type'] ?? '').startsWith('application/json')) return refuse(res, 400, 'content-type is not application/json');
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return refuse(res, 400, 'body is not JSON');
    }
    const b = body as Record<string, unknown>;
    if (typeof b.to !== 'string' || !/^\+[1-9]\d{6,14}$/.test(b.to)) return refuse(res, 400, '"to" is not an E.164 number');
    if (typeof b.message !== 'string' || b.message.length === 0) return refuse(res, 400, '"message" is missing');
    if (typeof b.reference !== 'string' || b.reference.length === 0) return refuse(res, 400, '"reference" is missing');
    if (failing) {
      failedRequests++;
      return answer(res, 500, { error: 'gateway_unavailable' });
    }
    messages.push({ to: b.to, message: b.message, reference: b.reference, code: codeIn(b.message), authorization: req.headers.authorization, receivedAt: Date.now() });
    for (const wake of [...waiters]) wake();
    answer(res, 202, { id: `sms_${messages.length}` });
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/sms`,
    token,
    messages,
    rejected,
    get failedRequests() {
      return failedRequests;
    },
    setFailing(value) {
      failing = value;
    },
    waitForMessage({ since = 0, to, timeoutMs = 5_000 } = {}) {
      const find = () => messages.slice(since).find((m) => to === undefined || m.to === to);
      return waitFor(find, waiters, timeoutMs, () => `no SMS${to ? ` to ${to}` : ''} after index ${since} within ${timeoutMs} ms (received ${messages.length}, rejected ${JSON.stringify(rejected)})`);
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Resolve with `find()` as soon as it returns something: checked now, then again on every new
 * record (`waiters` is notified by the server), bounded by `timeoutMs`. No fixed sleeps.
 */
export function waitFor<T>(find: () => T | undefined, waiters: Set<() => void>, timeoutMs: number, describe: () => string): Promise<T> {
  const found = find();
  if (found !== undefined) return Promise.resolve(found);
  return new Promise<T>((resolve, reject) => {
    const check = () => {
      const hit = find();
      if (hit === undefined) return;
      done();
      resolve(hit);
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(describe()));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      waiters.delete(check);
    };
    waiters.add(check);
  });
}
