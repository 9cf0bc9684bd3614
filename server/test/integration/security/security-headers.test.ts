/**
 * Security headers over real sockets (issue 11 item 4): the portal (its HTML and /portal/api), the
 * hosted /verify pages (a live page and the not-found page) and /docs carry a CSP with
 * frame-ancestors 'none' plus X-Frame-Options DENY, X-Content-Type-Options nosniff and a
 * Referrer-Policy; Strict-Transport-Security is on every response when the service is served over
 * HTTPS (TLS_CERT_FILE/TLS_KEY_FILE, or an https PUBLIC_BASE_URL behind a TLS proxy) and never on
 * a plain-HTTP deployment; /v1 sends no CORS headers, not even to a preflight.
 */
import https from 'node:https';
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { makeTempDir } from '../../support/server-process.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';

async function selfSignedCertificate(): Promise<{ certFile: string; keyFile: string; cert: string }> {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] },
    ],
  });
  const dir = makeTempDir('cds-headers-tls-');
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  writeFileSync(certFile, pems.cert);
  writeFileSync(keyFile, pems.private, { mode: 0o600 });
  return { certFile, keyFile, cert: pems.cert };
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
}

type Deployment = { name: string; scheme: 'http' | 'https'; env: (tls: { certFile: string; keyFile: string }) => Record<string, string>; hsts: boolean };

const DEPLOYMENTS: Deployment[] = [
  { name: 'plain HTTP (embedded default)', scheme: 'http', env: () => ({ PUBLIC_BASE_URL: 'http://127.0.0.1:3000' }), hsts: false },
  { name: 'HTTPS served directly (TLS_CERT_FILE/TLS_KEY_FILE)', scheme: 'https', env: (tls) => ({ TLS_CERT_FILE: tls.certFile, TLS_KEY_FILE: tls.keyFile, PUBLIC_BASE_URL: 'https://localhost:3443' }), hsts: true },
  { name: 'behind a TLS proxy (https PUBLIC_BASE_URL)', scheme: 'http', env: () => ({ PUBLIC_BASE_URL: 'https://lender-api.example.com' }), hsts: true },
];

describe.each(DEPLOYMENTS)('security headers: $name', (deployment) => {
  let db: TestDatabase;
  let t: TestApp;
  let tls: Awaited<ReturnType<typeof selfSignedCertificate>>;
  let origin: string;
  let verifyPath: string;

  beforeAll(async () => {
    tls = await selfSignedCertificate();
    db = await createTestDatabase('sqlite');
    t = await createTestApp(db, { env: deployment.env(tls) });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    origin = `${deployment.scheme}://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
    const enhanced = t.tenant.sandbox.consumers.find((c) => c.tier === 'enhanced')!.consumerId;
    const pending = await send('POST', '/v1/decisions/bnpl', {
      authorization: `Bearer ${t.tenant.sandbox.apiKey}`, 'content-type': 'application/json',
    }, JSON.stringify({ consumer: { consumer_id: enhanced }, transaction: { amount: '900.00', currency: 'USD', merchant_name: 'Acme', merchant_category: 'furniture' } }));
    expect(pending.status).toBe(200);
    verifyPath = new URL(JSON.parse(pending.body).consumer_complete_url as string).pathname;
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  function send(method: string, pathname: string, headers: Record<string, string> = {}, body?: string): Promise<Answer & { body: string }> {
    return new Promise((resolve, reject) => {
      const lib = deployment.scheme === 'https' ? https : http;
      const req = lib.request(`${origin}${pathname}`, { method, headers, ...(deployment.scheme === 'https' ? { ca: tls.cert } : {}) }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  it('the portal, the hosted pages and /docs forbid framing and sniffing and set a Referrer-Policy', async () => {
    const pages: Array<[string, string]> = [
      ['portal HTML', '/portal'],
      ['portal page (SPA route)', '/portal/sandbox/webhooks'],
      ['portal API', '/portal/api/session'],
      ['portal API error', '/portal/api/api-keys'],
      ['hosted verification page', verifyPath],
      ['hosted page, unknown token', '/verify/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
      ['hosted page stylesheet', '/verify/assets/verify.css'],
      ['docs home', '/docs'],
      ['docs page', '/docs/webhooks'],
      ['docs not found', '/docs/no-such-page'],
    ];
    const wrong: string[] = [];
    for (const [name, pathname] of pages) {
      const r = await send('GET', pathname);
      const h = r.headers;
      const csp = String(h['content-security-policy'] ?? '');
      if (!/frame-ancestors 'none'/.test(csp)) wrong.push(`${name}: CSP without frame-ancestors 'none': ${csp}`);
      if (h['x-frame-options'] !== 'DENY') wrong.push(`${name}: X-Frame-Options ${String(h['x-frame-options'])}`);
      if (h['x-content-type-options'] !== 'nosniff') wrong.push(`${name}: X-Content-Type-Options ${String(h['x-content-type-options'])}`);
      if (!['no-referrer', 'same-origin', 'strict-origin-when-cross-origin'].includes(String(h['referrer-policy']))) wrong.push(`${name}: Referrer-Policy ${String(h['referrer-policy'])}`);
      if (/unsafe-inline|unsafe-eval|\*/.test(csp)) wrong.push(`${name}: CSP too open: ${csp}`);
    }
    expect(wrong).toEqual([]);
    // The hosted page carries a token in its URL: it never sends a Referer anywhere.
    expect((await send('GET', verifyPath)).headers['referrer-policy']).toBe('no-referrer');
  });

  it(deployment.hsts ? 'every response pins HTTPS with Strict-Transport-Security' : 'no response sends Strict-Transport-Security', async () => {
    const paths = ['/portal', '/portal/api/session', verifyPath, '/docs', '/healthz', '/v1/events', '/v1/no-such-route'];
    for (const pathname of paths) {
      const r = await send('GET', pathname);
      if (deployment.hsts) expect(r.headers['strict-transport-security'], pathname).toBe('max-age=31536000; includeSubDomains');
      else expect(r.headers['strict-transport-security'], pathname).toBeUndefined();
    }
    // The session cookie follows the same rule: Secure exactly when served over HTTPS.
    const probe = await send('GET', '/portal/api/session');
    const cookie = String(probe.headers['set-cookie'] ?? '');
    expect(/;\s*Secure/i.test(cookie), cookie).toBe(deployment.hsts);
  });

  it('/v1 sends no CORS headers, to a preflight or to a call from a browser origin', async () => {
    const origin = { origin: 'https://evil.example' };
    const preflight = await send('OPTIONS', '/v1/decisions/bnpl', { ...origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' });
    const call = await send('GET', '/v1/events', { ...origin, authorization: `Bearer ${t.tenant.sandbox.apiKey}` });
    expect(call.status).toBe(200);
    for (const r of [preflight, call]) {
      expect(Object.keys(r.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    }
  });
});
