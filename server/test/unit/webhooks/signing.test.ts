/**
 * Signatures, checked by our verifier and by an independent one: the `stripe` package's
 * `Stripe.webhooks.signature.verifyHeader` (same `t=,v1=` scheme; the header name does not matter
 * because the value is passed in). reference.md section 4.4 has the test plan followed here.
 */
import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { cryptoRandom } from '../../../src/lib/clock.js';
import { computeSignature, generateSigningSecret, signatureHeader, verifySignatureHeader } from '../../../src/modules/webhooks/signing.js';

const stripeSignature = Stripe.webhooks.signature!;
const body = '{"id":"3f0c6a52-1c1e-4c5e-9f57-0c1f1b6a4d10","type":"decision.finalized","created":1768478400,"attempt":1,"data":{"outcome":"approved","score":712}}';
const t = 1_768_478_400;

/** Stripe's verifier, with its clock pinned to `nowSeconds` and the spec's 300 s tolerance. */
function stripeVerifies(payload: string, header: string, secret: string, nowSeconds = t): boolean {
  try {
    // Called as a method: verifyHeader reads `this`.
    stripeSignature.verifyHeader(payload, header, secret, 300, undefined, nowSeconds * 1000);
    return true;
  } catch {
    return false;
  }
}

describe('webhook signatures', () => {
  const secret = generateSigningSecret(cryptoRandom);
  const oldSecret = generateSigningSecret(cryptoRandom);

  it('secrets are whsec_ followed by base64 of 32 random bytes', () => {
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(secret).not.toBe(oldSecret);
  });

  it('the header is t=<unix>,v1=<lowercase hex HMAC-SHA256 of "<t>.<body>">, with no spaces', () => {
    const header = signatureHeader({ timestamp: t, body, secrets: [secret] });
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(header).not.toContain(' ');
    expect(header).toBe(`t=${t},v1=${computeSignature(secret, t, body)}`);
  });

  it('is byte for byte what Stripe generates for the same payload, secret and time', () => {
    const ours = signatureHeader({ timestamp: t, body, secrets: [secret] });
    expect(Stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: t })).toBe(ours);
  });

  it('verifies with Stripe verifyHeader', () => {
    expect(stripeVerifies(body, signatureHeader({ timestamp: t, body, secrets: [secret] }), secret)).toBe(true);
  });

  it('a rotation header carries two v1 values and verifies with EACH secret alone (Stripe and ours)', () => {
    const header = signatureHeader({ timestamp: t, body, secrets: [secret, oldSecret] });
    expect(header.split(',').filter((p) => p.startsWith('v1='))).toHaveLength(2);
    expect(stripeVerifies(body, header, secret)).toBe(true);
    expect(stripeVerifies(body, header, oldSecret)).toBe(true);
    expect(stripeVerifies(body, header, generateSigningSecret(cryptoRandom))).toBe(false);
    expect(verifySignatureHeader(header, body, [secret], { nowSeconds: t })).toEqual({ ok: true, timestamp: t });
    expect(verifySignatureHeader(header, body, [oldSecret], { nowSeconds: t })).toEqual({ ok: true, timestamp: t });
  });

  it('rejects a tampered body, a wrong secret, a stale timestamp and a header with spaces (Stripe and ours)', () => {
    const header = signatureHeader({ timestamp: t, body, secrets: [secret] });
    const tampered = body.replace('712', '812');
    expect(stripeVerifies(tampered, header, secret)).toBe(false);
    expect(verifySignatureHeader(header, tampered, [secret], { nowSeconds: t }).ok).toBe(false);

    expect(stripeVerifies(body, header, oldSecret)).toBe(false);
    expect(verifySignatureHeader(header, body, [oldSecret], { nowSeconds: t })).toEqual({ ok: false, reason: 'mismatch' });

    expect(stripeVerifies(body, header, secret, t + 301)).toBe(false);
    expect(stripeVerifies(body, header, secret, t + 300)).toBe(true);
    expect(verifySignatureHeader(header, body, [secret], { nowSeconds: t + 301 })).toEqual({ ok: false, reason: 'too_old' });

    const spaced = header.replace(',', ', ');
    expect(stripeVerifies(body, spaced, secret)).toBe(false);
    expect(verifySignatureHeader(spaced, body, [secret], { nowSeconds: t }).ok).toBe(false);
  });

  it('our verifier refuses malformed headers', () => {
    expect(verifySignatureHeader('', body, [secret], { nowSeconds: t })).toEqual({ ok: false, reason: 'malformed' });
    expect(verifySignatureHeader(`v1=${'0'.repeat(64)}`, body, [secret], { nowSeconds: t })).toEqual({ ok: false, reason: 'malformed' });
    expect(verifySignatureHeader(`t=${t}`, body, [secret], { nowSeconds: t })).toEqual({ ok: false, reason: 'no_signature' });
    expect(verifySignatureHeader(`t=abc,v1=00`, body, [secret], { nowSeconds: t })).toEqual({ ok: false, reason: 'malformed' });
  });

  it('the secret is keyed as its UTF-8 text, prefix included (not base64-decoded)', () => {
    // node:crypto directly, as a receiver following docs/webhooks.md would.
    const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(Buffer.from(`${t}.${body}`, 'utf8')).digest('hex');
    expect(computeSignature(secret, t, body)).toBe(expected);
  });
});
