/**
 * Webhook signatures. Every delivery carries `Svc-Signature: t=<unix seconds>,v1=<hex>` where `v1`
 * is the lowercase hex HMAC-SHA256, keyed with the endpoint's signing secret as written (the UTF-8
 * bytes of the whole `whsec_...` string), of `<t>.<raw body>`. During a secret rotation the header
 * carries one `v1` per secret.
 *
 * `verify` accepts the request when any `v1` matches the HMAC of any trusted secret (compared in
 * constant time) and `t` is within `toleranceSeconds` (300) of now, in either direction: an old
 * `t` is a replay, and one far in the future cannot come from the service. It returns the parsed
 * event, or throws WebhookVerificationError. `generateTestHeader` signs a payload the same way, so
 * you can test your own receiver.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookVerificationError } from '../core/errors.js';
import type { WebhookEvent } from '../types.js';

export const SIGNATURE_HEADER = 'Svc-Signature';
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type RawBody = string | Uint8Array;

export interface VerifyOptions {
  /** Largest allowed distance between `t` and now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** The current time in unix seconds (tests). */
  now?: number;
}

export interface TestHeaderOptions {
  /** The exact body you will send (string or bytes). */
  payload: RawBody;
  /** One secret, or several to produce a rotation header (`v1=` per secret, in order). */
  secret: string | string[];
  /** Unix seconds (default: now). */
  timestamp?: number;
}

function toBytes(body: RawBody): Buffer {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

function secretList(secret: string | readonly string[]): string[] {
  const list = typeof secret === 'string' ? [secret] : [...secret];
  if (list.length === 0 || list.some((s) => typeof s !== 'string' || s.length === 0)) {
    throw new TypeError('webhooks: at least one non-empty signing secret (whsec_...) is required.');
  }
  return list;
}

/** The hex `v1` signature of `body` at `timestamp` with `secret`. */
export function computeSignature(body: RawBody, secret: string, timestamp: number): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${timestamp}.`, 'utf8').update(toBytes(body)).digest('hex');
}

/** Parse `t=...,v1=...[,v1=...]`; other schemes are ignored. */
export function parseSignatureHeader(header: string): { timestamp: number | undefined; signatures: string[] } {
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    const key = part.slice(0, i).trim();
    const value = part.slice(i + 1).trim();
    if (key === 't' && /^\d{1,15}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && value.length > 0) signatures.push(value);
  }
  return { timestamp, signatures };
}

/**
 * Verify a delivery and return its event. `rawBody` must be the bytes as received (a re-serialised
 * body does not verify); `header` is the `Svc-Signature` value (Node's `req.headers['svc-signature']`).
 *
 * `data` is typed `TData` (a plain record by default; `verify<DecisionFinalizedData>()` for one
 * type). For a union whose `data` narrows on `type`, assert the result `as TypedWebhookEvent`:
 * `if (event.type === 'decision.adjusted') event.data.reason_codes`. Neither is checked at runtime.
 */
export function verify<TData = Record<string, unknown>>(
  rawBody: RawBody,
  header: string | string[] | null | undefined,
  secret: string | string[],
  options: VerifyOptions = {},
): WebhookEvent<TData> {
  const secrets = secretList(secret);
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) {
    throw new WebhookVerificationError(
      'The webhook body must be the raw request body (string or Buffer), not a parsed object: use a raw body parser for this route.',
    );
  }
  const headerText = Array.isArray(header) ? header.join(',') : header;
  if (typeof headerText !== 'string' || headerText.length === 0) {
    throw new WebhookVerificationError(`Missing ${SIGNATURE_HEADER} header.`);
  }
  const { timestamp, signatures } = parseSignatureHeader(headerText);
  if (timestamp === undefined || signatures.length === 0) {
    throw new WebhookVerificationError(`Malformed ${SIGNATURE_HEADER} header: expected t=<unix seconds>,v1=<hex>.`);
  }
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > tolerance) {
    throw new WebhookVerificationError(
      now > timestamp
        ? `Signature timestamp is ${now - timestamp} s old (more than ${tolerance} s): possible replay.`
        : `Signature timestamp is ${timestamp - now} s in the future (more than ${tolerance} s).`,
    );
  }
  const body = toBytes(rawBody);
  const candidates = signatures.map((s) => Buffer.from(s, 'utf8'));
  let matched = false;
  for (const s of secrets) {
    const expected = Buffer.from(computeSignature(body, s, timestamp), 'utf8');
    for (const candidate of candidates) {
      // Every pair is compared (no early exit), each in constant time.
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
    }
  }
  if (!matched) throw new WebhookVerificationError('No signature matches the payload with the given secret(s).');
  try {
    return JSON.parse(body.toString('utf8')) as WebhookEvent<TData>;
  } catch (cause) {
    throw new WebhookVerificationError('The signed payload is not JSON.', { cause });
  }
}

/** A `Svc-Signature` value for `payload`, as the service would send it. */
export function generateTestHeader(options: TestHeaderOptions): string {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const parts = secretList(options.secret).map((s) => `v1=${computeSignature(options.payload, s, timestamp)}`);
  return [`t=${timestamp}`, ...parts].join(',');
}

/** The webhook helpers as one object (`client.webhooks`, or `webhooks` without a client). */
export const webhooks = Object.freeze({
  verify,
  generateTestHeader,
  computeSignature,
  parseSignatureHeader,
  SIGNATURE_HEADER,
  DEFAULT_TOLERANCE_SECONDS,
});
export type Webhooks = typeof webhooks;
