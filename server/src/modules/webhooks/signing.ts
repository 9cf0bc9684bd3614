/**
 * Webhook signatures (interface.md, Authentication 5-7).
 *
 * How it works: `Svc-Signature: t=<unix seconds>,v1=<hex>` where the hex is HMAC-SHA256, keyed with
 * the endpoint's secret string (its UTF-8 bytes, `whsec_` prefix included), of `<t>.<raw body>`.
 * Every attempt is signed afresh with the time of sending, so a receiver's 300-second tolerance
 * holds for retries days later. During a rotation overlap one more `v1=` follows, made with the old
 * secret, so a receiver that still knows only the old secret keeps verifying. No spaces anywhere:
 * parsers that split on `,` then `=` (Stripe's among them) would otherwise see the key " v1".
 * This is Stripe's `t=,v1=` scheme byte for byte, so Stripe's verifier checks ours (tests do).
 */
import { createHmac } from 'node:crypto';
import type { Random } from '../../lib/clock.js';
import { safeEqual } from '../../lib/crypto.js';

export const SIGNATURE_HEADER = 'Svc-Signature';
export const SECRET_PREFIX = 'whsec_';
/** interface.md, Authentication 6 (the receiver's rule; our verifier applies it too). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * A new signing secret: `whsec_` + base64 of 32 random bytes. Base64 after the prefix is the
 * Standard Webhooks secret format, so the same secret could later sign `webhook-*` headers too.
 */
export function generateSigningSecret(random: Random): string {
  return SECRET_PREFIX + random.bytes(32).toString('base64');
}

/** Associated data binding a sealed secret to its endpoint row (ADR 0003). */
export function secretAssociatedData(endpointId: string): string {
  return `webhook-endpoint:${endpointId}`;
}

export function computeSignature(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex');
}

/** The header value: the current secret's `v1` first, then any still-valid old secrets'. */
export function signatureHeader(input: { timestamp: number; body: string; secrets: readonly string[] }): string {
  if (!Number.isInteger(input.timestamp) || input.timestamp < 0) throw new RangeError('timestamp must be whole unix seconds');
  if (input.secrets.length === 0) throw new RangeError('at least one secret is required');
  return [`t=${input.timestamp}`, ...input.secrets.map((s) => `v1=${computeSignature(s, input.timestamp, input.body)}`)].join(',');
}

export type VerifyResult = { ok: true; timestamp: number } | { ok: false; reason: 'malformed' | 'no_signature' | 'mismatch' | 'too_old' };

/**
 * What a receiver does (docs/webhooks.md shows the same in Node and Python): parse, reject a
 * timestamp older than the tolerance, accept if any `v1` matches any of the receiver's secrets
 * (compared in constant time).
 */
export function verifySignatureHeader(
  header: string,
  body: string,
  secrets: readonly string[],
  options: { nowSeconds: number; toleranceSeconds?: number },
): VerifyResult {
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) return { ok: false, reason: 'malformed' };
    const key = part.slice(0, eq);
    const value = part.slice(eq + 1);
    if (key === 't') {
      if (!/^\d{1,12}$/.test(value)) return { ok: false, reason: 'malformed' };
      timestamp = Number(value);
    } else if (key === 'v1') {
      signatures.push(value);
    }
  }
  if (timestamp === null) return { ok: false, reason: 'malformed' };
  if (signatures.length === 0) return { ok: false, reason: 'no_signature' };
  if (options.nowSeconds - timestamp > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return { ok: false, reason: 'too_old' };
  for (const secret of secrets) {
    const expected = computeSignature(secret, timestamp, body);
    // Every candidate is compared (no early exit on the first mismatch) in constant time.
    if (signatures.map((s) => safeEqual(s, expected)).some(Boolean)) return { ok: true, timestamp };
  }
  return { ok: false, reason: 'mismatch' };
}
