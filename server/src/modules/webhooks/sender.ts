/**
 * One webhook HTTPS POST, with the address checks, and its outcome as a value (never a throw).
 *
 * How one attempt goes:
 * 1. The URL must be https (endpoints are validated at creation; this is the last line of defence).
 * 2. A host that is an IP literal is classified at once (address-policy.ts). A host name is
 *    resolved by OUR lookup function, handed to the socket: it resolves, classifies every address,
 *    and gives the socket only the addresses that passed. The socket connects to exactly what was
 *    checked, so a DNS answer that changes between check and connect (rebinding) cannot slip
 *    through. TLS still verifies the certificate against the host NAME (SNI and identity check).
 * 3. One timer (default 10 s) covers DNS, connect, TLS, the request and the response head. A 2xx
 *    status that arrives in time is a success; any other status is a failure, 3xx included
 *    (redirects are never followed). At most 4 KiB of the response body is kept, read within the
 *    same budget, as UTF-8 text (invalid bytes and NUL become U+FFFD).
 * 4. Keep-alive sockets are reused per origin. A reset on a REUSED socket before any answer (the
 *    receiver closed it while idle) is retried once on a fresh socket inside the same budget.
 * Errors become kinds the portal shows: timeout, tls, connection, dns, blocked_address, invalid_url.
 */
import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { Agent, request, type RequestOptions } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { classifyAddress, type AddressVerdict } from './address-policy.js';

/** `internal`: set by the worker when an attempt could not even be prepared (a secret that no longer opens). */
export type SendErrorKind = 'http_status' | 'timeout' | 'tls' | 'connection' | 'dns' | 'blocked_address' | 'invalid_url' | 'internal';

export interface SendResult {
  ok: boolean;
  /** The response status, when one arrived. */
  status: number | null;
  /** The first `maxResponseBytes` of the response body, as UTF-8 text. */
  responseBody: string | null;
  durationMs: number;
  errorKind: SendErrorKind | null;
  /** A short technical detail (error code, refused address class); never request data. */
  errorDetail: string | null;
}

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** Resolves a host name to addresses (tests inject one to simulate DNS answers). */
export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export interface SenderOptions {
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  /** CAs to trust instead of the default store (tests). Without it: the default store plus NODE_EXTRA_CA_CERTS. */
  ca?: string | Buffer | Array<string | Buffer>;
  resolve?: Resolver;
  maxResponseBytes?: number;
}

export interface WebhookSender {
  send(req: SendRequest): Promise<SendResult>;
  /** Close pooled sockets. */
  close(): void;
}

export const DEFAULT_SEND_TIMEOUT_MS = 10_000;
export const RESPONSE_BODY_LIMIT = 4096;

class BlockedAddressError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BlockedAddressError';
  }
}

class AttemptTimeoutError extends Error {
  constructor(ms: number) {
    super(`no response within ${ms} ms`);
    this.name = 'AttemptTimeoutError';
  }
}

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export function createWebhookSender(options: SenderOptions): WebhookSender {
  const policy = { allowPrivateNetworks: options.allowPrivateNetworks };
  const resolve = options.resolve ?? systemResolver;
  const maxBytes = options.maxResponseBytes ?? RESPONSE_BODY_LIMIT;
  const agent = new Agent({ keepAlive: true, ...(options.ca !== undefined ? { ca: options.ca } : {}) });

  /** net.connect's `lookup` hook: resolve, check, and return only addresses that passed. */
  function guardedLookup(
    hostname: string,
    lookupOptions: { family?: number | string; all?: boolean },
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void {
    resolve(hostname).then(
      (answers) => {
        const verdicts = answers
          .map((a) => classifyAddress(a.address, policy))
          .filter((v): v is AddressVerdict => v !== null);
        const wantFamily = Number(lookupOptions.family) === 4 || Number(lookupOptions.family) === 6 ? Number(lookupOptions.family) : null;
        const allowed = verdicts.filter((v) => v.allowed && (wantFamily === null || v.family === wantFamily));
        if (allowed.length === 0) {
          const refused = verdicts.find((v) => !v.allowed);
          callback(new BlockedAddressError(refused ? `${hostname} resolves to a ${refused.class} address (${refused.canonical})` : `${hostname} has no usable address`), '');
          return;
        }
        if (lookupOptions.all) callback(null, allowed.map((v) => ({ address: v.canonical, family: v.family })));
        else callback(null, allowed[0]!.canonical, allowed[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  }

  async function send(req: SendRequest): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      return failure('invalid_url', 'not a valid URL', elapsed());
    }
    if (url.protocol !== 'https:') return failure('invalid_url', 'only https URLs are delivered to', elapsed());
    if (url.username !== '' || url.password !== '') return failure('invalid_url', 'user-info is not allowed', elapsed());
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const literal = classifyAddress(host, policy);
    if (literal && !literal.allowed) return failure('blocked_address', `${literal.class} address (${literal.canonical})`, elapsed());

    const deadline = started + options.timeoutMs;
    for (let tryNo = 1; ; tryNo++) {
      const outcome = await postOnce(url, host, req, deadline, tryNo > 1);
      if (outcome.kind === 'retry-reused' && tryNo === 1 && performance.now() < deadline) continue;
      if (outcome.kind === 'response') {
        const ok = outcome.status >= 200 && outcome.status <= 299;
        return { ok, status: outcome.status, responseBody: outcome.body, durationMs: elapsed(), errorKind: ok ? null : 'http_status', errorDetail: ok ? null : `HTTP ${outcome.status}` };
      }
      const { kind, detail } = classifyError(outcome.error);
      return failure(kind, detail, elapsed());
    }
  }

  type PostOutcome = { kind: 'response'; status: number; body: string } | { kind: 'error'; error: unknown } | { kind: 'retry-reused'; error: unknown };

  function postOnce(url: URL, host: string, req: SendRequest, deadline: number, freshSocket: boolean): Promise<PostOutcome> {
    return new Promise((resolvePromise) => {
      let settled = false;
      let response: IncomingMessage | null = null;
      const chunks: Buffer[] = [];
      let kept = 0;
      const finish = (outcome: PostOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolvePromise(outcome);
      };
      // NUL becomes U+FFFD, as invalid UTF-8 does: a PostgreSQL text column cannot hold it, and a
      // result that cannot be written leaves its row leased, to be sent again when the lease passes.
      const bodyText = () => (response ? Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8').replaceAll('\u0000', '\uFFFD') : '');
      const requestOptions: RequestOptions = {
        method: 'POST',
        protocol: 'https:',
        hostname: host,
        port: url.port === '' ? 443 : Number(url.port),
        path: `${url.pathname}${url.search}`,
        headers: Object.assign({}, req.headers, { 'Content-Length': String(Buffer.byteLength(req.body)) }),
        // A retry after a stale keep-alive socket must not pick another pooled one.
        agent: freshSocket ? false : agent,
        lookup: guardedLookup as unknown as RequestOptions['lookup'],
        ...(freshSocket && options.ca !== undefined ? { ca: options.ca } : {}),
      };
      const clientRequest = request(requestOptions, (res) => {
        response = res;
        res.on('data', (chunk: Buffer) => {
          if (kept < maxBytes) {
            chunks.push(chunk);
            kept += chunk.length;
          }
          // Enough kept: stop reading; the socket is not reused, which is cheaper than draining a large body.
          if (kept >= maxBytes) {
            finish({ kind: 'response', status: res.statusCode ?? 0, body: bodyText() });
            res.destroy();
          }
        });
        res.on('end', () => finish({ kind: 'response', status: res.statusCode ?? 0, body: bodyText() }));
        // A body cut short after a status arrived: the status still counts (it came in time).
        res.on('error', () => finish({ kind: 'response', status: res.statusCode ?? 0, body: bodyText() }));
        res.on('close', () => finish({ kind: 'response', status: res.statusCode ?? 0, body: bodyText() }));
      });
      const timer = setTimeout(() => {
        // The status counts if it came in time even when the body is still trickling in.
        if (response) {
          finish({ kind: 'response', status: response.statusCode ?? 0, body: bodyText() });
          clientRequest.destroy();
          return;
        }
        clientRequest.destroy(new AttemptTimeoutError(options.timeoutMs));
      }, Math.max(1, deadline - performance.now()));
      clientRequest.on('error', (error: NodeJS.ErrnoException) => {
        if (response) {
          finish({ kind: 'response', status: response.statusCode ?? 0, body: bodyText() });
          return;
        }
        const staleSocket = !freshSocket && clientRequest.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
        finish(staleSocket ? { kind: 'retry-reused', error } : { kind: 'error', error });
      });
      clientRequest.end(req.body);
    });
  }

  function failure(kind: SendErrorKind, detail: string, durationMs: number): SendResult {
    return { ok: false, status: null, responseBody: null, durationMs, errorKind: kind, errorDetail: detail };
  }

  return {
    send,
    close: () => agent.destroy(),
  };
}

const TLS_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_REVOKED', 'CERT_UNTRUSTED', 'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE', 'HOSTNAME_MISMATCH', 'ERR_TLS_CERT_ALTNAME_INVALID', 'EPROTO', 'INVALID_CA', 'INVALID_PURPOSE',
]);
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'ENODATA', 'ESERVFAIL', 'EAI_NONAME']);

/** An error's kind for the attempt history, and a detail without request data (nor NUL, which PostgreSQL's text refuses). */
export function classifyError(error: unknown): { kind: SendErrorKind; detail: string } {
  const { kind, detail } = classifyErrorKind(error);
  return { kind, detail: detail.replaceAll('\u0000', '\uFFFD') };
}

function classifyErrorKind(error: unknown): { kind: SendErrorKind; detail: string } {
  if (error instanceof BlockedAddressError) return { kind: 'blocked_address', detail: error.message };
  if (error instanceof AttemptTimeoutError) return { kind: 'timeout', detail: error.message };
  const code = typeof error === 'object' && error !== null && 'code' in error ? String((error as { code: unknown }).code) : '';
  const message = error instanceof Error ? error.message : String(error);
  if (TLS_CODES.has(code) || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || code.startsWith('CERT_')) return { kind: 'tls', detail: code || message };
  if (DNS_CODES.has(code)) return { kind: 'dns', detail: code };
  return { kind: 'connection', detail: code ? `${code}: ${message}`.slice(0, 200) : message.slice(0, 200) };
}
