/**
 * The transport: one logical call = one `request()`, which may make several HTTP attempts.
 *
 * 1. A POST gets its Idempotency-Key here, once, before the first attempt: the caller's key, or
 *    `cds-node-retry-<uuid4>`. Every retry of the call sends the same key, so a retry after a
 *    dropped connection gets the stored answer instead of a second decision.
 * 2. Each attempt has its own time-out (`timeoutMs`, covering the whole response body) and follows
 *    the caller's AbortSignal. Node 18 has no `AbortSignal.any`, so both feed one controller.
 * 3. After an attempt, `decideRetry` (retry.ts) says whether to try again and how long to wait.
 *    The wait is abortable too.
 * 4. A 2xx returns the parsed body and the response metadata; anything else becomes the error class
 *    of its code (errors.ts).
 */
import { randomUUID } from 'node:crypto';
import {
  APIConnectionError,
  APITimeoutError,
  APIUserAbortError,
  type CreditDecisionsError,
  errorFromResponse,
} from './errors.js';
import { DEFAULT_RETRY_POLICY, decideRetry, type AttemptOutcome, type RetryPolicy } from './retry.js';
import { VERSION } from '../version.js';

/** The `fetch` the client calls; the global one by default. */
export type Fetch = (url: string, init: RequestInit) => Promise<Response>;

export interface ClientOptions {
  /** `svc_test_...` (sandbox) or `svc_live_...` (live). Never put a live key in client-side code. */
  apiKey: string;
  /** The service address, e.g. `http://127.0.0.1:3000` (the same for sandbox and live). */
  baseUrl: string;
  /** Retries after the first attempt (default 2). 0 disables retries. */
  maxRetries?: number;
  /** Time-out of each attempt, in ms (default 30 000). */
  timeoutMs?: number;
  /** Retry 429 answers after `Retry-After` (default false: a 429 is raised as RateLimitError). */
  retryRateLimited?: boolean;
  /** First backoff delay in ms (default 500); doubles per retry. */
  initialRetryDelayMs?: number;
  /** Cap of the backoff delay in ms (default 8 000). */
  maxRetryDelayMs?: number;
  /** A `Retry-After` longer than this (ms, default 60 000) is not waited for. */
  maxRetryAfterMs?: number;
  /** A custom fetch (tests, proxies). Default: the global fetch of Node 18+. */
  fetch?: Fetch;
  /** Extra headers on every request. */
  defaultHeaders?: Record<string, string>;
}

export interface RequestOptions {
  /** Your own Idempotency-Key for this POST (1-255 printable ASCII). Default: one generated per call. */
  idempotencyKey?: string;
  /** Cancels the call, including its retries and their waits (raises APIUserAbortError). */
  signal?: AbortSignal;
  /** Overrides the client's per-attempt time-out. */
  timeoutMs?: number;
  /** Overrides the client's maxRetries. */
  maxRetries?: number;
  /** Overrides the client's retryRateLimited. */
  retryRateLimited?: boolean;
}

/** What the last HTTP response of a call looked like. */
export interface ResponseMeta {
  status: number;
  /** Response headers, names in lower case. */
  headers: Record<string, string>;
  /** `Request-Id` of the response (for a replay: the id of the original request). */
  requestId: string | undefined;
  /** True when the service replayed a stored answer for this Idempotency-Key. */
  idempotentReplayed: boolean;
  /** The Idempotency-Key sent (POST only). */
  idempotencyKey: string | undefined;
  /** Retries it took (0 when the first attempt answered). */
  retries: number;
}

export interface APIResult<T> {
  data: T;
  meta: ResponseMeta;
}

const DEFAULT_TIMEOUT_MS = 30_000;

export class HttpCore {
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly timeoutMs: number;
  private readonly policy: RetryPolicy;
  private readonly fetchImpl: Fetch;
  private readonly defaultHeaders: Record<string, string>;

  constructor(options: ClientOptions) {
    if (!options || typeof options.apiKey !== 'string' || options.apiKey.length === 0) {
      throw new TypeError('CreditDecisions: `apiKey` is required (svc_test_... or svc_live_...).');
    }
    // A key with a space or a non-ASCII character (a pasted placeholder, say) could never be sent as a header.
    if (!/^[\x21-\x7e]+$/.test(options.apiKey)) {
      throw new TypeError('CreditDecisions: `apiKey` must be the key as the portal showed it (printable ASCII, no spaces): svc_test_... or svc_live_....');
    }
    if (typeof options.baseUrl !== 'string' || !/^https?:\/\//.test(options.baseUrl)) {
      throw new TypeError('CreditDecisions: `baseUrl` is required, e.g. "http://127.0.0.1:3000".');
    }
    this.apiKey = options.apiKey;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.policy = {
      maxRetries: options.maxRetries ?? DEFAULT_RETRY_POLICY.maxRetries,
      initialDelayMs: options.initialRetryDelayMs ?? DEFAULT_RETRY_POLICY.initialDelayMs,
      maxDelayMs: options.maxRetryDelayMs ?? DEFAULT_RETRY_POLICY.maxDelayMs,
      maxRetryAfterMs: options.maxRetryAfterMs ?? DEFAULT_RETRY_POLICY.maxRetryAfterMs,
      retryRateLimited: options.retryRateLimited ?? DEFAULT_RETRY_POLICY.retryRateLimited,
    };
    const globalFetch = (globalThis as { fetch?: Fetch }).fetch;
    if (options.fetch) this.fetchImpl = options.fetch;
    else if (typeof globalFetch === 'function') this.fetchImpl = (url, init) => globalFetch(url, init);
    else throw new TypeError('CreditDecisions: no global fetch (Node 18+ required); pass `fetch`.');
    this.defaultHeaders = { ...options.defaultHeaders };
  }

  async request<T>(method: 'GET' | 'POST', path: string, body: unknown, options: RequestOptions = {}): Promise<APIResult<T>> {
    const { signal } = options;
    const policy: RetryPolicy = {
      ...this.policy,
      maxRetries: options.maxRetries ?? this.policy.maxRetries,
      retryRateLimited: options.retryRateLimited ?? this.policy.retryRateLimited,
    };
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const idempotencyKey = method === 'POST' ? (options.idempotencyKey ?? `cds-node-retry-${randomUUID()}`) : undefined;
    if (idempotencyKey !== undefined && !/^[\x20-\x7e]{1,255}$/.test(idempotencyKey)) {
      throw new TypeError('CreditDecisions: `idempotencyKey` must be 1 to 255 printable ASCII characters.');
    }
    const headers: Record<string, string> = {
      ...this.defaultHeaders,
      Accept: 'application/json',
      Authorization: `Bearer ${this.apiKey}`,
      'User-Agent': `cds-node/${VERSION} node/${process.version}`,
    };
    const payload = body === undefined ? undefined : JSON.stringify(body);
    if (payload !== undefined) headers['Content-Type'] = 'application/json';
    if (idempotencyKey !== undefined) headers['Idempotency-Key'] = idempotencyKey;
    const url = this.baseUrl + path;

    for (let attempt = 0; ; attempt++) {
      throwIfAborted(signal);
      const result = await this.attempt(url, method, headers, payload, timeoutMs, signal);
      if (result.kind === 'ok') {
        return {
          data: result.data as T,
          meta: {
            status: result.status,
            headers: result.headers,
            requestId: result.headers['request-id'],
            idempotentReplayed: result.headers['idempotent-replayed'] === 'true',
            idempotencyKey,
            retries: attempt,
          },
        };
      }
      const decision = decideRetry(result.outcome, attempt, method, policy, Math.random());
      if (!decision.retry) throw result.error;
      await sleep(decision.delayMs, signal);
    }
  }

  private async attempt(
    url: string,
    method: string,
    headers: Record<string, string>,
    payload: string | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<
    | { kind: 'ok'; status: number; headers: Record<string, string>; data: unknown }
    | { kind: 'failed'; outcome: AttemptOutcome; error: CreditDecisionsError }
  > {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      let response: Response;
      let text: string;
      try {
        // The service never redirects. Following one would send the key and the body wherever a
        // misconfigured proxy or base URL points; a 3xx is answered as an error instead.
        response = await this.fetchImpl(url, { method, headers, body: payload, signal: controller.signal, redirect: 'manual' });
        text = await response.text(); // inside the time-out: a body that never ends is a time-out too
      } catch (cause) {
        if (signal?.aborted) throw new APIUserAbortError('Request was aborted.', { cause: signal.reason });
        if (timedOut) {
          return { kind: 'failed', outcome: { kind: 'timeout' }, error: new APITimeoutError(`Request timed out after ${timeoutMs} ms.`, { cause }) };
        }
        return { kind: 'failed', outcome: { kind: 'connection' }, error: new APIConnectionError(`Connection error: ${describe(cause)}`, { cause }) };
      }
      const responseHeaders: Record<string, string> = {};
      response.headers.forEach((value, name) => (responseHeaders[name.toLowerCase()] = value));
      if (response.status >= 200 && response.status < 300) {
        try {
          return { kind: 'ok', status: response.status, headers: responseHeaders, data: JSON.parse(text) as unknown };
        } catch (cause) {
          // A 2xx that is not JSON came from something between us and the service: treat it as a
          // transport failure (retrying is safe: same Idempotency-Key).
          const error = new APIConnectionError(`Invalid JSON in a ${response.status} response.`, {
            status: response.status,
            headers: responseHeaders,
            requestId: responseHeaders['request-id'],
            body: text,
            cause,
          });
          return { kind: 'failed', outcome: { kind: 'connection' }, error };
        }
      }
      const error = errorFromResponse(response.status, responseHeaders, text);
      return { kind: 'failed', outcome: { kind: 'response', status: response.status, code: error.code, headers: responseHeaders }, error };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = (cause as { cause?: unknown }).cause;
    const detail = inner instanceof Error ? ` (${(inner as { code?: string }).code ?? inner.message})` : '';
    return `${cause.message}${detail}`;
  }
  return String(cause);
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new APIUserAbortError('Request was aborted.', { cause: signal.reason });
}

/** Wait `ms`, or raise APIUserAbortError as soon as `signal` fires. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new APIUserAbortError('Request was aborted.', { cause: signal.reason }));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(new APIUserAbortError('Request was aborted.', { cause: signal?.reason }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
