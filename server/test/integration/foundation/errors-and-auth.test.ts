import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';
import { registerProbeRoutes } from '../../support/probe-routes.js';

const SOME_ID = '00000000-0000-4000-8000-000000000000';

describe.each(await dialectMatrix())('errors and authentication [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { build: { registerExtraV1Routes: registerProbeRoutes } });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const probe = (headers: Record<string, string>, payload?: string) =>
    t.app.inject({ method: 'POST', url: '/v1/test-probes', headers, ...(payload !== undefined ? { payload } : {}) });
  const json = { 'content-type': 'application/json' };

  it('gives every response a Request-Id, and error bodies exactly {error, message, request_id}', async () => {
    const ok = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['request-id']).toMatch(/^req_[0-9A-Za-z]{20}$/);
    const missing = await t.app.inject({ method: 'GET', url: '/nowhere' });
    expect(missing.statusCode).toBe(404);
    expect(errorOf(missing).error).toBe('not_found');
  });

  it('answers 401 invalid_api_key for a missing, malformed, unknown or revoked key', async () => {
    const url = `/v1/test-probes`;
    const cases: Record<string, Record<string, string>> = {
      missing: {},
      'not bearer': { authorization: `Basic ${t.tenant.sandbox.apiKey}` },
      malformed: bearer('svc_test_short'),
      'wrong prefix': bearer('sk_test_' + 'a'.repeat(40)),
      unknown: bearer('svc_test_' + 'A'.repeat(40)),
      'prefix of the other environment': bearer(t.tenant.sandbox.apiKey.replace('svc_test_', 'svc_live_')),
    };
    for (const [name, headers] of Object.entries(cases)) {
      const r = await t.app.inject({ method: 'POST', url, headers: { ...headers, ...json }, payload: '{"name":"x"}' });
      expect(r.statusCode, name).toBe(401);
      expect(errorOf(r).error, name).toBe('invalid_api_key');
    }
    // 401 comes before everything else, even for unknown /v1 paths and broken bodies.
    const unknownPath = await t.app.inject({ method: 'GET', url: `/v1/decisions/bnpl/${SOME_ID}` });
    expect(unknownPath.statusCode).toBe(401);
    const brokenBody = await probe(json, '{not json');
    expect(brokenBody.statusCode).toBe(401);
    // Even a URL the router cannot read (bad percent-encoding, an over-long segment): the key first.
    for (const url of ['/v1/decisions/bnpl/%zz', `/v1/decisions/bnpl/${'a'.repeat(120)}`]) {
      const anonymous = await t.app.inject({ method: 'GET', url });
      expect(anonymous.statusCode, url).toBe(401);
      expect(errorOf(anonymous).error, url).toBe('invalid_api_key');
      const keyed = await t.app.inject({ method: 'GET', url, headers: bearer(t.tenant.sandbox.apiKey) });
      expect(keyed.statusCode, url).toBe(400);
      expect(keyed.headers['ratelimit-limit'], url).toBeDefined();
    }
    // Outside /v1 no key is asked for: the 400 as before.
    expect((await t.app.inject({ method: 'GET', url: '/verify/%zz' })).statusCode).toBe(400);
    // A header that is there but not "Bearer <key>" is told so, not "no key provided".
    expect(errorOf(await t.app.inject({ method: 'GET', url: '/v1/events', headers: { authorization: 'Basic eDp5' } })).message).toMatch(/not of the form "Bearer <API_KEY>"/);
  });

  it('answers 404, not 405, for a POST to the create path with a trailing slash', async () => {
    for (const url of ['/v1/decisions/bnpl/', '/v1/decisions/auto-loan/']) {
      const r = await t.app.inject({ method: 'POST', url, headers: { ...bearer(t.tenant.sandbox.apiKey), ...json }, payload: '{}' });
      expect(r.statusCode, url).toBe(404);
      expect(r.headers.allow, url).toBeUndefined();
    }
    // A real wrong method still gets its 405 and Allow.
    const put = await t.app.inject({ method: 'PUT', url: `/v1/decisions/bnpl/${SOME_ID}`, headers: bearer(t.tenant.sandbox.apiKey) });
    expect(put.statusCode).toBe(405);
    expect(put.headers.allow).toBe('GET, HEAD');
  });

  it('reads JSON nested deeper than a recursive walk could, and names a number too large to represent', async () => {
    const key = bearer(t.tenant.sandbox.apiKey);
    const deep = `{"name":${'['.repeat(20_000)}"a\\u0000b"${']'.repeat(20_000)}}`;
    const refused = await probe({ ...key, ...json }, deep);
    expect(refused.statusCode).toBe(400);
    expect(errorOf(refused).message).toMatch(/NUL character/);
    const huge = await t.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { ...key, ...json },
      payload: '{"consumer":{"consumer_id":"00000000-0000-4000-8000-000000000000"},"transaction":{"amount":1e400,"currency":"USD","merchant_name":"A","merchant_category":"general"}}',
    });
    expect(huge.statusCode).toBe(400);
    expect(errorOf(huge).message).toMatch(/transaction\.amount .*a number too large to represent/);
  });

  it('accepts the text \\u0000 (a backslash, then u0000) where a NUL character is refused', async () => {
    const key = bearer(t.tenant.sandbox.apiKey);
    expect((await probe({ ...key, ...json }, JSON.stringify({ name: 'a\\u0000b' }))).statusCode).toBe(200);
    const refused = await probe({ ...key, ...json }, JSON.stringify({ name: 'a\u0000b' }));
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ error: 'invalid_request', message: 'A string in the request body contains the NUL character (\\u0000), which no field accepts.' });
  });

  it('refuses a revoked key on the very next request', async () => {
    const created = await t.ctx.apiKeys.createKey(t.ctx.storage.db, { tenantId: t.tenant.tenantId, environment: 'sandbox' });
    const before = await probe({ ...bearer(created.key), ...json }, '{"name":"before-revoke"}');
    expect(before.statusCode).toBe(200);
    expect(await t.ctx.apiKeys.revokeKey({ tenantId: t.tenant.tenantId, keyId: created.id })).toBe(true);
    const after = await probe({ ...bearer(created.key), ...json }, '{"name":"after-revoke"}');
    expect(after.statusCode).toBe(401);
    // Revoking from another tenant does nothing.
    const other = await t.ctx.tenants.createTenant({ name: 'Other' });
    const third = await t.ctx.apiKeys.createKey(t.ctx.storage.db, { tenantId: t.tenant.tenantId, environment: 'live' });
    expect(await t.ctx.apiKeys.revokeKey({ tenantId: other.tenantId, keyId: third.id })).toBe(false);
  });

  it('stores only a SHA-256 hash and the last four characters of a key', async () => {
    const rows = await t.ctx.storage.db.selectFrom('api_keys').selectAll().where('tenant_id', '=', t.tenant.tenantId).execute();
    const all = JSON.stringify(rows);
    expect(all).not.toContain(t.tenant.sandbox.apiKey);
    expect(all).not.toContain(t.tenant.live.apiKey.slice(9));
    expect(rows.map((r) => r.last4)).toContain(t.tenant.sandbox.apiKey.slice(-4));
    expect(t.tenant.sandbox.apiKey).toMatch(/^svc_test_[0-9A-Za-z]{32,}$/);
    expect(t.tenant.live.apiKey).toMatch(/^svc_live_[0-9A-Za-z]{32,}$/);
  });

  it('maps framework errors to the registry: 400 bad JSON, 413, 415, 405, 404, 400 validation', async () => {
    const key = bearer(t.tenant.sandbox.apiKey);
    const cases: Array<[string, Promise<{ statusCode: number; json(): unknown; headers: Record<string, unknown> }>, number, string]> = [
      ['malformed JSON', probe({ ...key, ...json }, '{"name": '), 400, 'invalid_request'],
      ['empty JSON body', probe({ ...key, ...json }, ''), 400, 'invalid_request'],
      ['JSON array', probe({ ...key, ...json }, '[1,2]'), 400, 'invalid_request'],
      ['__proto__ key', probe({ ...key, ...json }, '{"name":"x","__proto__":{"admin":true}}'), 400, 'invalid_request'],
      ['constructor.prototype key', probe({ ...key, ...json }, '{"name":"x","constructor":{"prototype":{"admin":true}}}'), 400, 'invalid_request'],
      ['a NUL character in a string', probe({ ...key, ...json }, '{"name":"a\\u0000b"}'), 400, 'invalid_request'],
      ['unknown field', probe({ ...key, ...json }, '{"name":"x","extra":1}'), 400, 'invalid_request'],
      ['wrong type', probe({ ...key, ...json }, '{"name":5}'), 400, 'invalid_request'],
      ['body over 64 KiB', probe({ ...key, ...json }, JSON.stringify({ name: 'x'.repeat(70_000) })), 413, 'payload_too_large'],
      ['text/plain', probe({ ...key, 'content-type': 'text/plain' }, 'name=x'), 415, 'unsupported_media_type'],
      ['form', probe({ ...key, 'content-type': 'application/x-www-form-urlencoded' }, 'name=x'), 415, 'unsupported_media_type'],
      ['unknown /v1 route', t.app.inject({ method: 'GET', url: '/v1/nothing-here', headers: key }), 404, 'not_found'],
      ['wrong method', t.app.inject({ method: 'DELETE', url: '/v1/test-probes', headers: key }), 405, 'method_not_allowed'],
    ];
    for (const [name, pending, status, code] of cases) {
      const r = await pending;
      expect(r.statusCode, name).toBe(status);
      expect(errorOf(r).error, name).toBe(code);
    }
    const wrongMethod = await t.app.inject({ method: 'PUT', url: '/v1/test-probes', headers: key });
    expect(wrongMethod.headers.allow).toBe('POST');
    // A /v1 path's 405 is still a /v1 answer: counted against the key, and after its check.
    expect(wrongMethod.headers['ratelimit-limit']).toBeDefined();
    for (const [method, url] of [['PUT', '/v1/test-probes'], ['DELETE', `/v1/decisions/bnpl/${SOME_ID}`], ['PATCH', '/v1/decisions/bnpl']] as const) {
      const withoutKey = await t.app.inject({ method, url });
      expect(withoutKey.statusCode, `${method} ${url} without a key`).toBe(401);
      expect(errorOf(withoutKey).error).toBe('invalid_api_key');
      expect(withoutKey.headers.allow).toBeUndefined();
    }
    // Outside /v1 nothing is authenticated: the public OpenAPI document's path answers 405 to anyone.
    const publicPath = await t.app.inject({ method: 'POST', url: '/v1/openapi.json' });
    expect(publicPath.statusCode).toBe(405);
    expect(publicPath.headers.allow).toBe('GET, HEAD');
  });

  it('answers a malformed URL or an over-long path parameter with the stable 400, not the router\'s own body (found by the fuzz)', async () => {
    const key = bearer(t.tenant.sandbox.apiKey);
    const urls = ['/v1/decisions/bnpl/%zz', '/v1/decisions/bnpl/%ED%A0%80', `/v1/decisions/bnpl/${'a'.repeat(101)}`, '/verify/%FF/identity', `/v1/events/${'9'.repeat(400)}`];
    for (const url of urls) {
      for (const headers of [key, {}]) {
        const r = await t.app.inject({ method: 'GET', url, headers });
        // Under /v1 a missing key is 401 first (see the 401 test); the 400 is for a caller with a key.
        if (url.startsWith('/v1/') && !('authorization' in headers)) {
          expect(r.statusCode, url).toBe(401);
          continue;
        }
        expect(r.statusCode, url).toBe(400);
        const body = errorOf(r);
        expect(body.error, url).toBe('invalid_request');
        // The path is not echoed back (it may hold anything the caller typed).
        expect(body.message, url).not.toContain(url.split('/').pop()!);
      }
    }
  });

  it('names the field in validation messages', async () => {
    const r = await probe({ ...bearer(t.tenant.sandbox.apiKey), ...json }, '{"name":"x","nam":"x"}');
    expect(errorOf(r).message).toBe('nam is not a recognised field; allowed fields: name, reject, fail, delay_ms.');
    const missing = await probe({ ...bearer(t.tenant.sandbox.apiKey), ...json }, '{}');
    expect(errorOf(missing).message).toBe('name is required.');
  });

  it('answers 500 internal_error without internals, and logs the detail with the request id', async () => {
    const r = await t.app.inject({ method: 'GET', url: '/v1/test-probes/boom', headers: bearer(t.tenant.sandbox.apiKey) });
    expect(r.statusCode).toBe(500);
    const body = errorOf(r);
    expect(body.error).toBe('internal_error');
    expect(r.body).not.toMatch(/hunter2|internal detail|stack|Error:/);
    const line = t.logs.lines.find((l) => l.includes('hunter2'));
    expect(line).toBeDefined();
    expect(line).toContain(body.request_id);
  });

  it('limits failed authentication per client address with 429', async () => {
    let last = 0;
    for (let i = 0; i < 80; i++) {
      const r = await t.app.inject({ method: 'GET', url: '/v1/x', headers: bearer('svc_test_' + 'Z'.repeat(40)), remoteAddress: '203.0.113.9' });
      last = r.statusCode;
      if (last === 429) {
        expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(errorOf(r).error).toBe('rate_limited');
        // The same headers as a per-key 429 (decisions.md section 8), describing the address's bucket.
        expect(r.headers).toMatchObject({ 'ratelimit-limit': '60', 'ratelimit-remaining': '0' });
        expect(Number(r.headers['ratelimit-reset'])).toBeGreaterThanOrEqual(1);
        break;
      }
      expect(last).toBe(401);
    }
    expect(last).toBe(429);
    // Another address is unaffected.
    const other = await t.app.inject({ method: 'GET', url: '/v1/x', headers: bearer('svc_test_' + 'Z'.repeat(40)), remoteAddress: '203.0.113.10' });
    expect(other.statusCode).toBe(401);
  });

  it('never writes the Authorization header into logs', async () => {
    await t.app.inject({ method: 'GET', url: '/v1/x', headers: bearer(t.tenant.sandbox.apiKey) });
    expect(t.logs.text).not.toContain(t.tenant.sandbox.apiKey);
    expect(t.logs.text).not.toContain(t.tenant.live.apiKey);
  });

  it('serves /readyz when the database answers', async () => {
    const r = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(r.statusCode).toBe(200);
  });
});
