/**
 * Reference connector for a lender's credit-data gateway (contract: docs/credit-gateway.md).
 *
 * How one pull goes:
 * 1. A file pulled for the same tenant and subject within the TTL is served from the cache, with
 *    no request (and even while the circuit is open).
 * 2. An identical pull already in flight is joined rather than sent twice.
 * 3. The circuit breaker may refuse at once ('circuit_open'); after its cool-down it lets exactly
 *    one trial through.
 * 4. Otherwise one `POST {baseUrl}/v1/credit-files` with the bearer token and a fresh request_id,
 *    under one timer that covers DNS, connect, TLS, the answer and its body. A reset on a reused
 *    keep-alive socket is retried once inside the same budget with the same request_id, which the
 *    gateway treats as the same pull.
 * 5. The answer is validated and mapped (gateway-contract.ts); a file is cached; the outcome moves
 *    the breaker (circuit-breaker.ts).
 * Every failure comes back as a value, `{status: 'unavailable', reason, detail}`, never an exception;
 * details carry status and error codes only, never PII. The caller turns it into a referral with
 * AA-25 and a `score.errored` event.
 */
import { Agent, request } from 'node:https';
import { systemClock, cryptoRandom, type Clock, type Random } from '../../lib/clock.js';
import type { CreditDataConnector, CreditDataResult, CreditFile, CreditSubject } from './credit-data.types.js';
import {
  BREAKER_DEFAULTS,
  admitRequest,
  closedBreaker,
  recordFailure,
  recordSuccess,
  validateBreakerConfig,
  type BreakerConfig,
  type BreakerState,
} from './circuit-breaker.js';
import { CACHE_DEFAULTS, createCreditFileCache, subjectCacheKey, type CreditFileCacheConfig } from './credit-file-cache.js';
import {
  buildGatewayRequest,
  creditFilesUrl,
  gatewaySourceName,
  interpretGatewayResponse,
  parseGatewayBaseUrl,
} from './gateway-contract.js';

export interface GatewayConnectorOptions {
  /** `https://...`; the connector posts to `{baseUrl}/v1/credit-files`. */
  baseUrl: string;
  /** Bearer token the gateway issued to this lender. */
  token: string;
  /** Total budget per pull, connect included. Default 1,500 ms. */
  timeoutMs?: number;
  /** Cache TTL, breaker cool-down and reported latency are measured with it. Default: system clock. */
  clock?: Clock;
  /** Request ids and the cache-key secret. Default: crypto. */
  random?: Random;
  /**
   * CA certificates (PEM) to trust for the gateway instead of the default store. Without it the
   * default store applies, including NODE_EXTRA_CA_CERTS.
   */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Default: 24 h TTL, 1,000 entries; `maxEntries: 0` turns caching off. */
  cache?: Partial<CreditFileCacheConfig>;
  /** Default: opens after 5 consecutive failures, half-opens after 30 s. */
  circuitBreaker?: Partial<BreakerConfig>;
  /** Bodies larger than this are refused rather than buffered. Default 64 KiB. */
  maxResponseBytes?: number;
}

export interface GatewayConnector extends CreditDataConnector {
  /** The breaker's state, for health checks and metrics. */
  circuitState(): BreakerState['kind'];
  /** Closes pooled keep-alive connections. */
  close(): void;
}

export const GATEWAY_CONNECTOR_DEFAULTS = Object.freeze({
  timeoutMs: 1_500,
  maxResponseBytes: 64 * 1024,
  cache: CACHE_DEFAULTS,
  circuitBreaker: BREAKER_DEFAULTS,
});

type PullOutcome =
  | { kind: 'file'; file: CreditFile }
  | { kind: 'failed'; reason: 'timeout' | 'error'; detail: string; gatewayHealthy: boolean };

/** Throws only on bad configuration, which is a boot-time error; pulls never throw. */
export function createGatewayConnector(options: GatewayConnectorOptions): GatewayConnector {
  const baseUrl = parseGatewayBaseUrl(options.baseUrl);
  const endpoint = creditFilesUrl(baseUrl);
  const source = gatewaySourceName(baseUrl);
  const token = validateToken(options.token);
  const timeoutMs = positiveInteger(options.timeoutMs ?? GATEWAY_CONNECTOR_DEFAULTS.timeoutMs, 'timeoutMs');
  const maxResponseBytes = positiveInteger(options.maxResponseBytes ?? GATEWAY_CONNECTOR_DEFAULTS.maxResponseBytes, 'maxResponseBytes');
  const clock = options.clock ?? systemClock;
  const random = options.random ?? cryptoRandom;
  const breakerConfig = validateBreakerConfig({ ...BREAKER_DEFAULTS, ...options.circuitBreaker });
  const cache = createCreditFileCache({ ...CACHE_DEFAULTS, ...options.cache });
  const cacheSecret = random.bytes(32);
  // Keep-alive saves a TCP and TLS handshake per pull, which is most of a 1.5 s budget on a bad day.
  const agent = new Agent({ keepAlive: true, maxSockets: 64, ...(options.ca !== undefined ? { ca: options.ca } : {}) });

  let breaker: BreakerState = closedBreaker;
  const inFlight = new Map<string, Promise<CreditDataResult>>();

  const elapsedSince = (startedMs: number): number => Math.max(0, clock.now().getTime() - startedMs);
  const unavailable = (
    reason: 'timeout' | 'error' | 'circuit_open',
    detail: string,
    startedMs: number,
  ): CreditDataResult => ({ status: 'unavailable', reason, detail, latencyMs: elapsedSince(startedMs) });

  async function callGateway(subject: CreditSubject): Promise<PullOutcome> {
    const requestId = random.uuid();
    const payload = JSON.stringify(buildGatewayRequest(requestId, subject));
    const headers = {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json',
      'content-length': Buffer.byteLength(payload),
      'user-agent': 'cds-credit-gateway-connector/1',
    };
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    try {
      const send = () => postOnce({ url: endpoint, agent, headers, payload, signal: controller.signal, maxResponseBytes });
      let answer = await send();
      if (!answer.ok && answer.retryable && !controller.signal.aborted) answer = await send();
      if (!answer.ok) {
        if (answer.timedOut) {
          return { kind: 'failed', reason: 'timeout', detail: `gateway did not answer within ${timeoutMs} ms`, gatewayHealthy: false };
        }
        return { kind: 'failed', reason: 'error', detail: answer.detail, gatewayHealthy: false };
      }
      const interpreted = interpretGatewayResponse(answer.status, answer.body, { source, requestId });
      if (interpreted.kind === 'file') return interpreted;
      return { kind: 'failed', reason: 'error', detail: interpreted.detail, gatewayHealthy: interpreted.gatewayHealthy };
    } finally {
      clearTimeout(timer);
    }
  }

  async function pullFromGateway(subject: CreditSubject, cacheKey: string, startedMs: number): Promise<CreditDataResult> {
    const admission = admitRequest(breaker, clock.now(), breakerConfig);
    breaker = admission.state;
    if (!admission.admitted) {
      return unavailable('circuit_open', 'circuit breaker open after repeated gateway failures; no request sent', startedMs);
    }
    let outcome: PullOutcome;
    try {
      outcome = await callGateway(subject);
    } catch {
      // Admitted requests must always report back, or a half-open breaker would wait forever.
      outcome = { kind: 'failed', reason: 'error', detail: 'credit gateway request failed unexpectedly', gatewayHealthy: false };
    }
    const healthy = outcome.kind === 'file' || outcome.gatewayHealthy;
    breaker = healthy ? recordSuccess(breaker) : recordFailure(breaker, clock.now(), breakerConfig);
    if (outcome.kind === 'failed') return unavailable(outcome.reason, outcome.detail, startedMs);
    cache.set(cacheKey, outcome.file, clock.now());
    return { status: 'ok', file: outcome.file, latencyMs: elapsedSince(startedMs) };
  }

  return {
    name: source,
    circuitState: () => breaker.kind,
    close: () => agent.destroy(),
    async fetchCreditFile(subject, context) {
      const startedMs = clock.now().getTime();
      try {
        const cacheKey = subjectCacheKey(subject, context.tenantId, cacheSecret);
        const cached = cache.get(cacheKey, clock.now());
        if (cached) return { status: 'ok', file: cached, latencyMs: elapsedSince(startedMs) };
        const running = inFlight.get(cacheKey);
        if (running) return await running;
        const pull = pullFromGateway(subject, cacheKey, startedMs);
        inFlight.set(cacheKey, pull);
        try {
          return await pull;
        } finally {
          inFlight.delete(cacheKey);
        }
      } catch {
        return unavailable('error', 'credit gateway connector failed unexpectedly', startedMs);
      }
    },
  };
}

type PostResult =
  | { ok: true; status: number; body: string }
  | { ok: false; timedOut: boolean; retryable: boolean; detail: string };

interface PostInput {
  url: URL;
  agent: Agent;
  headers: Record<string, string | number>;
  payload: string;
  signal: AbortSignal;
  maxResponseBytes: number;
}

/** One HTTPS exchange; resolves exactly once, whatever the socket does, and never rejects. */
function postOnce(input: PostInput): Promise<PostResult> {
  return new Promise((resolve) => {
    const timedOut: PostResult = { ok: false, timedOut: true, retryable: false, detail: 'timeout' };
    if (input.signal.aborted) {
      resolve(timedOut);
      return;
    }
    let settled = false;
    const finish = (result: PostResult): void => {
      if (settled) return;
      settled = true;
      input.signal.removeEventListener('abort', onAbort);
      resolve(result);
    };
    const req = request(input.url, { method: 'POST', agent: input.agent, headers: input.headers });
    let responded = false;
    // Our own abort handling, so the budget also covers reading the body, not only the headers.
    const onAbort = (): void => {
      finish(timedOut);
      req.destroy();
    };
    input.signal.addEventListener('abort', onAbort, { once: true });

    req.on('error', (err) => {
      // The classic keep-alive race: the gateway closed an idle socket just as we reused it.
      const retryable = !responded && req.reusedSocket && errorCode(err) === 'ECONNRESET';
      finish({ ok: false, timedOut: false, retryable, detail: describeTransportError(err) });
    });
    req.on('response', (res) => {
      responded = true;
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > input.maxResponseBytes) {
          finish({ ok: false, timedOut: false, retryable: false, detail: `gateway response larger than ${input.maxResponseBytes} bytes` });
          req.destroy();
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => finish({ ok: true, status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (err) => finish({ ok: false, timedOut: false, retryable: false, detail: describeTransportError(err) }));
      res.on('close', () => {
        if (!res.complete) finish({ ok: false, timedOut: false, retryable: false, detail: 'connection closed before the answer was complete' });
      });
    });
    req.end(input.payload);
  });
}

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_|INVALID_CA|HOSTNAME_MISMATCH|PATH_LENGTH_|INVALID_PURPOSE|EPROTO)/;

/** Error codes only: Node's messages can quote hosts and paths, and nothing here needs them. */
function describeTransportError(err: unknown): string {
  const code = errorCode(err);
  if (code && TLS_CODE.test(code)) return `TLS failure (${code})`;
  if (code) return `connection failure (${code})`;
  return 'connection failure';
}

function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  const code = err.code;
  return typeof code === 'string' && /^[A-Z0-9_]{1,64}$/.test(code) ? code : undefined;
}

function validateToken(token: string): string {
  // Printable ASCII without spaces: anything else would break or smuggle into the header.
  if (typeof token !== 'string' || !/^[\x21-\x7e]{1,4096}$/.test(token)) {
    throw new RangeError('credit gateway token must be 1-4096 printable ASCII characters');
  }
  return token;
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`credit gateway ${name} must be a positive integer`);
  return value;
}
