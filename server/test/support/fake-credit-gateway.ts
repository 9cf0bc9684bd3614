/**
 * A fake credit-data gateway: a real HTTPS server on 127.0.0.1 speaking the contract in
 * docs/credit-gateway.md, with a self-signed certificate made at start-up. Tests trust it through the
 * connector's `ca` option and switch its behaviour at runtime with `setMode`.
 *
 * Request handling, in order: record the request; wait `delayMs` if the mode has one; 401 without the
 * right bearer token; 400 for a body that breaks the contract; 409 for a request_id reused with a
 * different subject; then the mode's answer.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { generate } from 'selfsigned';
import type { WireCreditFile } from '../../src/modules/credit-data/gateway-contract.js';

export const FAKE_GATEWAY_TOKEN = 'gw_test_2f6c1d9a7b3e4c58';

export type FakeGatewayMode =
  /** 200 with `fakeWireFile(request_id)`, fields replaced by `overrides` (which may break the contract on purpose). */
  | { kind: 'file'; overrides?: Record<string, unknown>; delayMs?: number }
  /** 404 `{error: "no_file"}`. */
  | { kind: 'no_file'; delayMs?: number }
  /** An error status (default 500) with a contract error body. */
  | { kind: 'server_error'; status?: number; error?: string; delayMs?: number }
  /** A TCP reset instead of an answer. */
  | { kind: 'reset'; delayMs?: number }
  /** 200 with a body that is not JSON. */
  | { kind: 'malformed_json'; delayMs?: number }
  /** 200 headers and half a body, then silence until the client gives up. */
  | { kind: 'stalled_body'; delayMs?: number };

export interface RecordedGatewayRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  contentType: string | undefined;
  /** Parsed JSON, or the raw text when it was not JSON. */
  body: unknown;
}

export interface FakeCreditGateway {
  /** `https://127.0.0.1:<port>`, the connector's baseUrl. */
  url: string;
  /** PEM of the self-signed certificate, for the connector's `ca` option. */
  ca: string;
  token: string;
  /** Every request received, in order, including refused ones. */
  requests: RecordedGatewayRequest[];
  /** Switch behaviour for the following requests; a kind alone means that mode with no delay. */
  setMode(mode: FakeGatewayMode | FakeGatewayMode['kind']): void;
  /** Back to `{kind: 'file'}` and an empty request log. */
  reset(): void;
  stop(): Promise<void>;
}

/** The deterministic file the fake answers, keyed by request_id so a replayed id gets the same file. */
export function fakeWireFile(requestId: string): WireCreditFile {
  return {
    file_id: `gwf_${createHash('sha256').update(requestId).digest('hex').slice(0, 16)}`,
    tradelines: 12,
    oldest_tradeline_months: 97,
    revolving_utilization_pct: 23,
    delinquencies_30d_last_24m: 1,
    delinquencies_90d_last_24m: 0,
    collections_or_judgments: 0,
    bankruptcy: false,
    foreclosure_or_repossession: false,
    inquiries_last_6m: 2,
    monthly_obligations_cents: 84_500,
    estimated_monthly_income_cents: 612_000,
  };
}

export async function startFakeCreditGateway(
  options: { token?: string; mode?: FakeGatewayMode } = {},
): Promise<FakeCreditGateway> {
  const token = options.token ?? FAKE_GATEWAY_TOKEN;
  const pems = await generate([{ name: 'commonName', value: 'fake-credit-gateway' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }, { type: 2, value: 'localhost' }] },
    ],
  });

  let mode: FakeGatewayMode = options.mode ?? { kind: 'file' };
  const requests: RecordedGatewayRequest[] = [];
  const subjectsByRequestId = new Map<string, string>();
  const timers = new Set<NodeJS.Timeout>();

  const server: Server = createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
    void handle(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, { error: 'internal_error', message: 'fake gateway failed', request_id: null });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const text = await readBody(req);
    const body = parseJson(text);
    requests.push({
      method: req.method ?? '',
      path: req.url ?? '',
      authorization: req.headers.authorization,
      contentType: req.headers['content-type'],
      body: body === undefined ? text : body,
    });
    const current = mode;

    if (current.delayMs) {
      const stillConnected = await delay(current.delayMs, req);
      if (!stillConnected) return;
    }
    const requestId = isObject(body) && typeof body.request_id === 'string' ? body.request_id : null;

    if (req.method !== 'POST' || req.url !== '/v1/credit-files') {
      sendJson(res, 404, { error: 'not_found', message: 'Unknown route.', request_id: requestId });
      return;
    }
    if (req.headers.authorization !== `Bearer ${token}`) {
      sendJson(res, 401, { error: 'unauthorized', message: 'Missing or wrong bearer token.', request_id: requestId });
      return;
    }
    if (!isValidRequest(body)) {
      sendJson(res, 400, { error: 'invalid_request', message: 'Body does not match the contract.', request_id: requestId });
      return;
    }
    const subjectKey = JSON.stringify(body.subject);
    const seen = subjectsByRequestId.get(body.request_id);
    if (seen !== undefined && seen !== subjectKey) {
      sendJson(res, 409, { error: 'request_id_conflict', message: 'request_id reused with another subject.', request_id: body.request_id });
      return;
    }
    subjectsByRequestId.set(body.request_id, subjectKey);

    switch (current.kind) {
      case 'file':
        sendJson(res, 200, { file: { ...fakeWireFile(body.request_id), ...current.overrides } });
        return;
      case 'no_file':
        sendJson(res, 404, { error: 'no_file', message: 'No credit file for this subject.', request_id: body.request_id });
        return;
      case 'server_error':
        sendJson(res, current.status ?? 500, {
          error: current.error ?? 'internal_error',
          message: 'Something failed.',
          request_id: body.request_id,
        });
        return;
      case 'malformed_json':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"file": {"file_id": "gwf_trunc');
        return;
      case 'stalled_body': {
        const text = JSON.stringify({ file: fakeWireFile(body.request_id) });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.write(text.slice(0, text.length / 2));
        return;
      }
      case 'reset':
        resetConnection(req.socket);
        return;
    }
  }

  /** Resolves false when the client went away first, so a timed-out request is not answered. */
  function delay(ms: number, req: IncomingMessage): Promise<boolean> {
    return new Promise((resolve) => {
      const onClose = (): void => {
        clearTimeout(timer);
        timers.delete(timer);
        resolve(false);
      };
      const timer = setTimeout(() => {
        timers.delete(timer);
        req.socket.off('close', onClose);
        resolve(true);
      }, ms);
      timers.add(timer);
      req.socket.once('close', onClose);
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('fake credit gateway has no TCP address');

  return {
    url: `https://127.0.0.1:${address.port}`,
    ca: pems.cert,
    token,
    requests,
    setMode(next) {
      mode = typeof next === 'string' ? ({ kind: next } as FakeGatewayMode) : next;
    },
    reset() {
      mode = { kind: 'file' };
      requests.length = 0;
    },
    async stop() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export async function stopFakeCreditGateway(gateway: FakeCreditGateway | undefined): Promise<void> {
  await gateway?.stop();
}

interface ValidRequest {
  request_id: string;
  subject: { first_name: string; last_name: string; dob: string; ssn_last4: string | null; zip: string };
}

function isValidRequest(body: unknown): body is ValidRequest {
  if (!isObject(body) || typeof body.request_id !== 'string' || body.request_id.length === 0) return false;
  const s = body.subject;
  if (!isObject(s)) return false;
  return (
    typeof s.first_name === 'string' &&
    typeof s.last_name === 'string' &&
    typeof s.dob === 'string' &&
    /^\d{4}-\d{2}-\d{2}$/.test(s.dob) &&
    (s.ssn_last4 === null || (typeof s.ssn_last4 === 'string' && /^\d{4}$/.test(s.ssn_last4))) &&
    typeof s.zip === 'string'
  );
}

/**
 * A real TCP RST, as a crashed gateway or a middlebox would send. The TLS socket cannot reset
 * itself, so this reaches for the TCP socket underneath (Node internal `_parent`) and falls back to
 * a plain close if that ever goes away.
 */
function resetConnection(socket: Socket): void {
  const tcp = (socket as Socket & { _parent?: Socket })._parent;
  try {
    if (tcp) {
      tcp.resetAndDestroy();
      return;
    }
  } catch {
    // fall through to a plain destroy
  }
  socket.destroy();
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
