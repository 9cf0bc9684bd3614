/**
 * Webhook signatures checked against headers built independently here with node:crypto (and the
 * `stripe` package, which verifies the same t=,v1= scheme), never with the SDK's own signer.
 */
import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { CreditDecisions, generateTestHeader, webhooks, WebhookVerificationError, type WebhookEvent } from '../src/index.js';

const SECRET = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
const OLD_SECRET = 'whsec_' + Buffer.alloc(32, 9).toString('base64');
const BODY = JSON.stringify({
  id: '8d0e7f2a-4b9c-4c1e-9a55-1f7b3c2d9e10',
  type: 'decision.finalized',
  created: 1769428800,
  attempt: 1,
  data: { decision_id: 'd', outcome: 'approved', note: 'naïve ✓' },
});
const now = () => Math.floor(Date.now() / 1000);
const hmacHex = (secret: string, t: number, body: string | Buffer) =>
  createHmac('sha256', secret).update(Buffer.concat([Buffer.from(`${t}.`), Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8')])).digest('hex');
const header = (t: number, ...sigs: string[]) => [`t=${t}`, ...sigs.map((s) => `v1=${s}`)].join(',');

function rejects(fn: () => unknown, pattern: RegExp) {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(WebhookVerificationError);
  expect((caught as Error).message).toMatch(pattern);
}

describe('webhooks.verify', () => {
  it('accepts a valid signature and returns the parsed event', () => {
    const t = now();
    const event = webhooks.verify(BODY, header(t, hmacHex(SECRET, t, BODY)), SECRET) as WebhookEvent;
    expect(event.id).toBe('8d0e7f2a-4b9c-4c1e-9a55-1f7b3c2d9e10');
    expect(event.type).toBe('decision.finalized');
    expect(event.data.note).toBe('naïve ✓');
  });

  it('takes the raw body as a Buffer or Uint8Array too', () => {
    const t = now();
    const h = header(t, hmacHex(SECRET, t, BODY));
    expect(webhooks.verify(Buffer.from(BODY, 'utf8'), h, SECRET).type).toBe('decision.finalized');
    expect(webhooks.verify(new TextEncoder().encode(BODY), h, SECRET).type).toBe('decision.finalized');
  });

  it('accepts rotation headers (two v1) with either secret or both', () => {
    const t = now();
    const h = header(t, hmacHex(SECRET, t, BODY), hmacHex(OLD_SECRET, t, BODY));
    expect(webhooks.verify(BODY, h, SECRET).id).toBeTruthy();
    expect(webhooks.verify(BODY, h, OLD_SECRET).id).toBeTruthy();
    expect(webhooks.verify(BODY, h, [OLD_SECRET, SECRET]).id).toBeTruthy();
    // A receiver that already moved to the new secret, while deliveries are signed only with the old one.
    rejects(() => webhooks.verify(BODY, header(t, hmacHex(OLD_SECRET, t, BODY)), SECRET), /No signature matches/);
    // And one still trusting both, for a delivery signed only with the new secret.
    expect(webhooks.verify(BODY, header(t, hmacHex(SECRET, t, BODY)), [OLD_SECRET, SECRET]).id).toBeTruthy();
  });

  it('rejects stale and far-future timestamps (300 s by default), accepts the edge', () => {
    const n = 1_800_000_000;
    const at = (t: number) => header(t, hmacHex(SECRET, t, BODY));
    expect(webhooks.verify(BODY, at(n - 300), SECRET, { now: n }).id).toBeTruthy();
    rejects(() => webhooks.verify(BODY, at(n - 301), SECRET, { now: n }), /301 s old/);
    rejects(() => webhooks.verify(BODY, at(n - 86_400), SECRET, { now: n }), /replay/);
    rejects(() => webhooks.verify(BODY, at(n + 301), SECRET, { now: n }), /future/);
    expect(webhooks.verify(BODY, at(n - 500), SECRET, { now: n, toleranceSeconds: 600 }).id).toBeTruthy();
  });

  it('rejects a changed body, a wrong secret, a re-serialised body', () => {
    const t = now();
    const h = header(t, hmacHex(SECRET, t, BODY));
    rejects(() => webhooks.verify(BODY.replace('approved', 'declined'), h, SECRET), /No signature/);
    rejects(() => webhooks.verify(BODY, h, 'whsec_wrong'), /No signature/);
    rejects(() => webhooks.verify(JSON.stringify(JSON.parse(BODY), null, 2), h, SECRET), /No signature/);
    rejects(() => webhooks.verify(BODY, header(t, hmacHex(SECRET, t, BODY).toUpperCase()), SECRET), /No signature/);
    rejects(() => webhooks.verify(BODY, header(t + 1, hmacHex(SECRET, t, BODY)), SECRET), /No signature/);
  });

  it('rejects missing and malformed headers, and a parsed body', () => {
    const t = now();
    rejects(() => webhooks.verify(BODY, undefined, SECRET), /Missing/);
    rejects(() => webhooks.verify(BODY, '', SECRET), /Missing/);
    rejects(() => webhooks.verify(BODY, `v1=${hmacHex(SECRET, t, BODY)}`, SECRET), /Malformed/);
    rejects(() => webhooks.verify(BODY, `t=${t}`, SECRET), /Malformed/);
    rejects(() => webhooks.verify(BODY, `t=abc,v1=${hmacHex(SECRET, t, BODY)}`, SECRET), /Malformed/);
    rejects(() => webhooks.verify(JSON.parse(BODY) as never, header(t, hmacHex(SECRET, t, BODY)), SECRET), /raw request body/);
    expect(() => webhooks.verify(BODY, header(t, 'x'), [])).toThrow(TypeError);
  });

  it('ignores unknown schemes next to v1 and accepts an array header value', () => {
    const t = now();
    const h = `t=${t},v0=deadbeef,v1=${hmacHex(SECRET, t, BODY)}`;
    expect(webhooks.verify(BODY, h, SECRET).id).toBeTruthy();
    expect(webhooks.verify(BODY, [`t=${t}`, `v1=${hmacHex(SECRET, t, BODY)}`], SECRET).id).toBeTruthy();
  });

  it('refuses a signed body that is not JSON', () => {
    const t = now();
    rejects(() => webhooks.verify('not json', header(t, hmacHex(SECRET, t, 'not json')), SECRET), /not JSON/);
  });
});

describe('webhooks.generateTestHeader', () => {
  it('produces what the service sends (checked independently and with the stripe package)', () => {
    const t = 1_769_428_800;
    expect(generateTestHeader({ payload: BODY, secret: SECRET, timestamp: t })).toBe(header(t, hmacHex(SECRET, t, BODY)));
    expect(generateTestHeader({ payload: BODY, secret: [SECRET, OLD_SECRET], timestamp: t })).toBe(
      header(t, hmacHex(SECRET, t, BODY), hmacHex(OLD_SECRET, t, BODY)),
    );
    const fresh = generateTestHeader({ payload: BODY, secret: SECRET });
    expect(() => Stripe.webhooks.signature!.verifyHeader(BODY, fresh, SECRET, 300)).not.toThrow();
    expect(webhooks.verify(BODY, fresh, SECRET).type).toBe('decision.finalized');
  });

  it('is reachable from a client too', () => {
    const client = new CreditDecisions({ apiKey: 'svc_test_x', baseUrl: 'http://127.0.0.1:1' });
    const h = client.webhooks.generateTestHeader({ payload: BODY, secret: SECRET });
    expect(client.webhooks.verify(BODY, h, SECRET).attempt).toBe(1);
  });
});
