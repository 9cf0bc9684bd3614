/**
 * `cds listen --api-key svc_test_... --forward-to http://localhost:4242/webhooks`: local webhook
 * forwarding for a lender's engineer on a laptop (docs/webhooks.md, "Testing on your laptop").
 *
 * How it works: the service cannot deliver to a laptop (webhooks go to public https URLs only), so
 * this command pulls instead. It follows the event history API (`GET /v1/events`, newest first)
 * every `--interval-ms`, reading back a window of LOOKBACK_SECONDS below the newest `created` it
 * has seen, so an event committed a moment after a newer one is still found; ids already handled
 * are remembered (and forgotten once below the window), so each event is forwarded once. New
 * events go out oldest first, one at a time, as a real delivery would look: the same envelope
 * (`attempt` 1), the same five headers, signed with a secret made for this run (or `--secret`),
 * printed first so the local receiver can verify `Svc-Signature`. One line per event says what
 * the receiver answered. Sandbox keys only. A 429 waits for Retry-After; other failures of the
 * API back off and retry; SIGINT (Ctrl-C) or SIGTERM stops it cleanly with exit code 0.
 */
import http from 'node:http';
import https from 'node:https';
import { cryptoRandom } from '../lib/clock.js';
import { eventEnvelopeJson } from '../modules/events/envelope.js';
import { EVENT_TYPES } from '../modules/events/outbox.js';
import { USER_AGENT } from '../modules/webhooks/delivery-worker.js';
import { generateSigningSecret, SECRET_PREFIX, signatureHeader } from '../modules/webhooks/signing.js';

export class ListenCommandError extends Error {}

export interface ListenOptions {
  apiKey: string;
  forwardTo: string;
  apiBase: string;
  /** Only these event types (validated); empty: all. */
  events: string[];
  json: boolean;
  secret?: string;
  /** Replay from this unix time instead of from now. */
  since?: number;
  intervalMs: number;
}

export interface ListenIo {
  out(line: string): void;
  err(line: string): void;
  signal: AbortSignal;
}

/** How far below the newest `created` seen each poll reads again (seconds). */
export const LOOKBACK_SECONDS = 30;
const FORWARD_TIMEOUT_MS = 10_000;
const MAX_BACKOFF_MS = 30_000;
const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

interface Envelope {
  id: string;
  type: string;
  created: number;
  data: Record<string, unknown>;
}

/** Checks the options; throws ListenCommandError with a sentence to show. */
export function validateListenOptions(options: ListenOptions): void {
  if (options.apiKey.startsWith('svc_live_')) {
    throw new ListenCommandError('cds listen forwards sandbox events only, and this is a live key (svc_live_); use a sandbox key (svc_test_...).');
  }
  if (!options.apiKey.startsWith('svc_test_')) throw new ListenCommandError('--api-key must be a sandbox API key (svc_test_...).');
  let target: URL;
  try {
    target = new URL(options.forwardTo);
  } catch {
    throw new ListenCommandError(`--forward-to must be an absolute URL such as http://localhost:4242/webhooks, got "${options.forwardTo}".`);
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new ListenCommandError('--forward-to must be an http:// or https:// URL.');
  if (!LOCAL_HOSTS.has(target.hostname) && !target.hostname.endsWith('.localhost')) {
    throw new ListenCommandError(`--forward-to must point at this machine (localhost, 127.0.0.1 or [::1]), not ${target.hostname}.`);
  }
  try {
    const base = new URL(options.apiBase);
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Error('scheme');
  } catch {
    throw new ListenCommandError(`--api-base must be the service's http(s) address such as http://127.0.0.1:3000, got "${options.apiBase}".`);
  }
  const unknown = options.events.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length > 0) throw new ListenCommandError(`--events: ${unknown.join(', ')} ${unknown.length === 1 ? 'is not an event type' : 'are not event types'}; allowed: ${EVENT_TYPES.join(', ')}.`);
  if (options.secret !== undefined && (!options.secret.startsWith(SECRET_PREFIX) || options.secret.length < SECRET_PREFIX.length + 16)) {
    throw new ListenCommandError('--secret must be a signing secret of the form whsec_ followed by at least 16 characters.');
  }
  if (!Number.isInteger(options.intervalMs) || options.intervalMs < 100 || options.intervalMs > 60_000) {
    throw new ListenCommandError('--interval-ms must be a whole number from 100 to 60000.');
  }
}

class ApiFailure extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    readonly retryAfterMs: number | null,
  ) {
    super(message);
  }
}

export async function listenCommand(options: ListenOptions, io: ListenIo): Promise<number> {
  validateListenOptions(options);
  const secret = options.secret ?? generateSigningSecret(cryptoRandom);
  const apiBase = options.apiBase.replace(/\/+$/, '');

  async function listPage(createdGte: number, startingAfter: string | null): Promise<{ data: Envelope[]; has_more: boolean; next_cursor: string | null }> {
    const params = new URLSearchParams({ limit: '100', created_gte: String(Math.max(0, createdGte)) });
    if (options.events.length > 0) params.set('type', options.events.join(','));
    if (startingAfter) params.set('starting_after', startingAfter);
    let response: Response;
    try {
      response = await fetch(`${apiBase}/v1/events?${params.toString()}`, {
        headers: { Authorization: `Bearer ${options.apiKey}`, Accept: 'application/json', 'User-Agent': 'cds-listen/1.0' },
        signal: io.signal,
      });
    } catch (err) {
      if (io.signal.aborted) throw err;
      throw new ApiFailure(`cannot reach ${apiBase} (${describeError(err)})`, null, null);
    }
    const text = await response.text();
    if (response.ok) return JSON.parse(text) as { data: Envelope[]; has_more: boolean; next_cursor: string | null };
    let message = text.slice(0, 300);
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? message;
    } catch {
      // not our error body: show it as it came
    }
    const retryAfter = Number(response.headers.get('retry-after'));
    throw new ApiFailure(`${response.status}: ${message}`, response.status, Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter * 1000 : null);
  }

  /** Every event with created >= createdGte, oldest first. */
  async function readWindow(createdGte: number): Promise<Envelope[]> {
    const out: Envelope[] = [];
    let cursor: string | null = null;
    for (;;) {
      const page = await listPage(createdGte, cursor);
      out.push(...page.data);
      if (!page.has_more || !page.next_cursor) break;
      cursor = page.next_cursor;
    }
    return out.reverse();
  }

  // Check the key and find "now" on the service's clock: the newest event there is.
  let newest: number;
  try {
    const first = await listPage(0, null);
    newest = first.data[0]?.created ?? 0;
  } catch (err) {
    if (io.signal.aborted) return 0;
    if (err instanceof ApiFailure && err.status === 401) throw new ListenCommandError(`the service refused the API key (${err.message})`);
    throw new ListenCommandError(err instanceof Error ? err.message : String(err));
  }

  /** Handled event ids -> their `created`, pruned below the read window. */
  const seen = new Map<string, number>();
  let floor: number;
  if (options.since !== undefined) {
    floor = options.since;
  } else {
    // From now: everything already there counts as seen.
    floor = newest;
    if (newest > 0) for (const e of await readWindow(newest - LOOKBACK_SECONDS)) seen.set(e.id, e.created);
  }
  const sinceFloor = options.since ?? 0;

  if (options.json) {
    io.out(JSON.stringify({ type: 'ready', secret, forward_to: options.forwardTo, api_base: apiBase, events: options.events.length > 0 ? options.events : ['*'] }));
  } else {
    io.out(`Signing secret for this session: ${secret}`);
    io.out(`  (verify Svc-Signature with it; it changes every run unless you pass --secret)`);
    io.out(`Forwarding ${options.events.length > 0 ? options.events.join(', ') : 'all'} sandbox events from ${apiBase} to ${options.forwardTo}. Ctrl-C to stop.`);
  }

  let backoffMs = options.intervalMs;
  while (!io.signal.aborted) {
    try {
      const events = await readWindow(Math.max(sinceFloor, floor - LOOKBACK_SECONDS));
      for (const event of events) {
        if (io.signal.aborted) break;
        if (seen.has(event.id)) continue;
        seen.set(event.id, event.created);
        await forward(event);
        if (event.created > floor) floor = event.created;
      }
      for (const [id, created] of seen) if (created < floor - 2 * LOOKBACK_SECONDS) seen.delete(id);
      backoffMs = options.intervalMs;
      await sleep(options.intervalMs, io.signal);
    } catch (err) {
      if (io.signal.aborted) break;
      if (err instanceof ApiFailure && err.status === 401) throw new ListenCommandError(`the service refused the API key (${err.message})`);
      if (err instanceof ApiFailure && err.status === 429) {
        const waitMs = err.retryAfterMs ?? backoffMs;
        io.err(`cds listen: rate limited; waiting ${Math.ceil(waitMs / 1000)} s (Retry-After)`);
        await sleep(waitMs, io.signal);
        continue;
      }
      io.err(`cds listen: reading events failed (${err instanceof Error ? err.message : String(err)}); retrying in ${Math.round(backoffMs / 1000)} s`);
      await sleep(backoffMs, io.signal);
      backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
    }
  }
  if (!options.json) io.out('Stopped.');
  return 0;

  async function forward(event: Envelope): Promise<void> {
    const body = eventEnvelopeJson({ id: event.id, type: event.type, createdAtMs: event.created * 1000, dataJson: JSON.stringify(event.data) }, 1);
    const headers = {
      'Svc-Signature': signatureHeader({ timestamp: Math.floor(Date.now() / 1000), body, secrets: [secret] }),
      'Svc-Webhook-Id': event.id,
      'Svc-Webhook-Type': event.type,
      'Content-Type': 'application/json',
      'User-Agent': USER_AGENT,
    };
    const result = await post(options.forwardTo, headers, body);
    const at = new Date(event.created * 1000).toISOString().replace('.000Z', 'Z');
    if (options.json) {
      io.out(JSON.stringify({ type: 'forwarded', event_id: event.id, event_type: event.type, created: event.created, status: result.status, duration_ms: result.durationMs, error: result.error }));
    } else {
      const answer = result.status !== null ? `${result.status} ${http.STATUS_CODES[result.status] ?? ''}`.trim() : `failed: ${result.error}`;
      io.out(`${at}  ${event.type.padEnd(31)} ${event.id}  -> ${answer} (${result.durationMs} ms)`);
    }
  }
}

/** One POST to the local receiver; its status, or the error, never a throw. */
function post(url: string, headers: Record<string, string>, body: string): Promise<{ status: number | null; durationMs: number; error: string | null }> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const target = new URL(url);
  const lib = target.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    const req = lib.request(
      target,
      { method: 'POST', headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) }, agent: false, timeout: FORWARD_TIMEOUT_MS },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, durationMs: elapsed(), error: null }));
        res.on('error', () => resolve({ status: res.statusCode ?? 0, durationMs: elapsed(), error: null }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${FORWARD_TIMEOUT_MS / 1000} s`)));
    req.on('error', (err) => resolve({ status: null, durationMs: elapsed(), error: describeError(err) }));
    req.end(body);
  });
}

function describeError(err: unknown): string {
  const cause = err instanceof Error && (err as { cause?: unknown }).cause instanceof Error ? ((err as { cause: Error }).cause) : err;
  const code = typeof cause === 'object' && cause !== null && 'code' in cause ? String((cause as { code: unknown }).code) : '';
  const message = cause instanceof Error ? cause.message : String(cause);
  if (code === 'ECONNREFUSED') return 'connection refused (ECONNREFUSED): is the local receiver running?';
  return code && !message.includes(code) ? `${message} (${code})` : message;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
