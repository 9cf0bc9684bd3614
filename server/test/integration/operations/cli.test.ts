/**
 * The operator CLI as a real process (decisions.md section 12): `tenants create` output and that its
 * keys work against a running `serve` on the same storage, `migrate` idempotence, the exit codes
 * for usage (64) and configuration (78) errors, and that the built CLI (one bundled file, ADR 0016)
 * finds the files it serves.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENAPI_PATH } from '../../../src/http/openapi-document.js';
import { PORTAL_DIST_DIR } from '../../../src/modules/portal/portal-static.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { cleanupProcesses, databaseEnv, makeTempDir, runCli, startServer, type HttpResponse, type ServerProcess } from '../../support/server-process.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function expectStableError(r: HttpResponse, status: number, code: string): void {
  expect(r.status, r.body).toBe(status);
  const body = r.json();
  expect(Object.keys(body).sort()).toEqual(['error', 'message', 'request_id']);
  expect(body.error).toBe(code);
  expect(r.headers['request-id']).toBe(body.request_id);
}

afterAll(cleanupProcesses);

describe.each(await dialectMatrix())('cds tenants create [%s]', (dialect) => {
  let db: TestDatabase;
  let server: ServerProcess;
  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    // The server migrates at start; the CLI then shares its storage (same data dir / DATABASE_URL).
    server = await startServer({ env: databaseEnv(db) });
  });
  afterAll(async () => {
    await server?.stop();
    await db?.drop();
  });

  it('--json prints exactly one JSON object of the documented shape, and its keys work against the server', async () => {
    const r = await runCli(['tenants', 'create', '--name', 'Acme Lending', '--json'], databaseEnv(db));
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split('\n').filter((l) => l.trim() !== '');
    expect(lines).toHaveLength(1);
    const out = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(Object.keys(out).sort()).toEqual(['live', 'sandbox', 'tenant_id']);
    expect(out.tenant_id).toMatch(UUID_V4);

    const sandbox = out.sandbox as { api_key: string; consumers: Array<{ consumer_id: string; tier: string }> };
    const live = out.live as { api_key: string };
    expect(Object.keys(sandbox).sort()).toEqual(['api_key', 'consumers']);
    expect(Object.keys(live)).toEqual(['api_key']);
    expect(sandbox.api_key).toMatch(/^svc_test_[0-9A-Za-z]{32,}$/);
    expect(live.api_key).toMatch(/^svc_live_[0-9A-Za-z]{32,}$/);
    expect(sandbox.consumers).toHaveLength(3);
    for (const c of sandbox.consumers) {
      expect(Object.keys(c).sort()).toEqual(['consumer_id', 'tier']);
      expect(c.consumer_id).toMatch(UUID_V4);
    }
    expect(sandbox.consumers.map((c) => c.tier).sort()).toEqual(['enhanced', 'hard', 'soft']);
    expect(new Set(sandbox.consumers.map((c) => c.consumer_id)).size).toBe(3);

    // The printed keys authenticate on the running server: 404 (after auth), not 401.
    for (const key of [sandbox.api_key, live.api_key]) {
      const ok = await server.request('/v1/x', { headers: { authorization: `Bearer ${key}` } });
      expectStableError(ok, 404, 'not_found');
      expect(ok.headers['ratelimit-limit']).toBeDefined();
    }
    const wrong = await server.request('/v1/x', { headers: { authorization: `Bearer svc_test_${'Z'.repeat(40)}` } });
    expectStableError(wrong, 401, 'invalid_api_key');
    const tampered = await server.request('/v1/x', { headers: { authorization: `Bearer ${sandbox.api_key.slice(0, -1)}${sandbox.api_key.endsWith('a') ? 'b' : 'a'}` } });
    expectStableError(tampered, 401, 'invalid_api_key');
  });

  it('without --json prints readable text with the keys and the seeded consumers', async () => {
    const r = await runCli(['tenants', 'create', '--name', 'Readable Lender'], databaseEnv(db));
    expect(r.code, r.stderr).toBe(0);
    expect(() => JSON.parse(r.stdout) as unknown).toThrow();
    expect(r.stdout).toContain('Readable Lender');
    const sandboxKey = /svc_test_[0-9A-Za-z]{32,}/.exec(r.stdout)?.[0];
    const liveKey = /svc_live_[0-9A-Za-z]{32,}/.exec(r.stdout)?.[0];
    expect(sandboxKey).toBeDefined();
    expect(liveKey).toBeDefined();
    for (const tier of ['soft', 'enhanced', 'hard']) expect(r.stdout).toMatch(new RegExp(`${tier}\\s+[0-9a-f-]{36}`));
    const ok = await server.request('/v1/x', { headers: { authorization: `Bearer ${sandboxKey!}` } });
    expect(ok.status).toBe(404);
  });

  it('users reset-password --json prints a one-time link that sets a new password on the running server; an unknown email exits 65', async () => {
    // A portal user signed up over HTTP, with the anonymous CSRF token the web app starts with.
    const portalPost = async (path: string, body: unknown) => {
      const probe = await server.request('/portal/api/session');
      const csrf = probe.json<{ csrf_token: string }>().csrf_token;
      return server.request(path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': csrf, cookie: `cds_csrf=${csrf}` }, body: JSON.stringify(body) });
    };
    const email = `locked.out.${dialect}@lender.example.com`;
    expect((await portalPost('/portal/api/signup', { company_name: 'Locked Out Lending', name: 'Only Admin', email, password: 'the forgotten passphrase' })).status).toBe(201);

    const r = await runCli(['users', 'reset-password', '--email', email.toUpperCase(), '--json'], databaseEnv(db));
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split('\n').filter((l) => l.trim() !== '');
    expect(lines).toHaveLength(1);
    const out = JSON.parse(lines[0]!) as Record<string, string>;
    expect(Object.keys(out).sort()).toEqual(['expires_at', 'reset_url', 'role', 'tenant_id', 'user_id']);
    expect(out.role).toBe('admin');
    expect(r.stdout).not.toContain('locked.out');
    expect(out.reset_url).toMatch(/\/portal\/reset-password#[A-Za-z0-9_-]{43}$/);
    const token = out.reset_url!.split('#')[1]!;

    const used = await portalPost('/portal/api/password-reset-links/accept', { token, password: 'a remembered passphrase' });
    expect(used.status, used.body).toBe(200);
    expect((await portalPost('/portal/api/login', { email, password: 'the forgotten passphrase' })).status).toBe(401);
    expect((await portalPost('/portal/api/login', { email, password: 'a remembered passphrase' })).status).toBe(200);

    const unknown = await runCli(['users', 'reset-password', '--email', 'nobody@lender.example.com', '--json'], databaseEnv(db));
    expect(unknown.code).toBe(65); // EX_DATAERR, as for webhooks create's refusals
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toContain('no active portal user has the email address given to --email');
    expect(unknown.stderr).not.toContain('nobody@');
    const usage = await runCli(['users', 'reset-password'], databaseEnv(db));
    expect(usage.code).toBe(64);
  });

  it('migrate exits 0, twice in a row, and reports the schema up to date', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await runCli(['migrate'], databaseEnv(db));
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/up to date/i);
    }
  });
});

describe('cds on a fresh embedded database', () => {
  it('migrate applies the schema the first time and is a no-op the second', async () => {
    const env = { CDS_DATA_DIR: makeTempDir() };
    const first = await runCli(['migrate'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/applied: /);
    const second = await runCli(['migrate'], env);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/up to date/i);
  });
});

describe('cds usage and configuration errors', () => {
  it('an unknown command exits 64 with the usage on stderr and nothing on stdout', async () => {
    const r = await runCli(['frobnicate']);
    expect(r.code).toBe(64);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('frobnicate');
    expect(r.stderr).toContain('Usage: cds');
  });

  it('a bad option or missing --name exits 64', async () => {
    const unknownOption = await runCli(['tenants', 'create', '--name', 'X', '--bogus']);
    expect(unknownOption.code).toBe(64);
    expect(unknownOption.stderr).toContain('Usage: cds');
    const missingName = await runCli(['tenants', 'create', '--json']);
    expect(missingName.code).toBe(64);
    expect(missingName.stdout).toBe('');
  });

  it.each([
    ['PORT', 'abc'],
    ['RATE_LIMIT_LIVE_PER_S', '0'],
    ['RATE_LIMIT_SANDBOX_PER_S', '-5'],
    ['DATABASE_URL', 'mysql://x'],
    ['REDIS_URL', 'http://127.0.0.1:6379'],
    ['LOG_LEVEL', 'loud'],
    ['DATA_ENCRYPTION_KEY', 'not-a-key'],
  ])('%s=%s exits 78 with a message naming the variable', async (name, value) => {
    for (const args of [['migrate'], ['serve']]) {
      const r = await runCli(args, { [name]: value });
      expect(r.code, `${args[0]}: ${r.stderr}`).toBe(78);
      expect(r.stderr).toContain(name);
      expect(r.stdout).toBe('');
    }
  });

  it('TLS_CERT_FILE without TLS_KEY_FILE, or pointing nowhere, exits 78', async () => {
    const half = await runCli(['serve'], { TLS_CERT_FILE: '/nonexistent/cert.pem' });
    expect(half.code).toBe(78);
    expect(half.stderr).toContain('TLS_KEY_FILE');
    const missing = await runCli(['serve'], { TLS_CERT_FILE: '/nonexistent/cert.pem', TLS_KEY_FILE: '/nonexistent/key.pem' });
    expect(missing.code).toBe(78);
    expect(missing.stderr).toContain('TLS_CERT_FILE');
  });
});

describe('cds serve, built into one file (ADR 0016), finds what it serves', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServer({ env: { CDS_DATA_DIR: makeTempDir() } });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('the documentation site: pages from docs/, its own assets and swagger-ui from node_modules', async () => {
    const home = await server.request('/docs');
    expect(home.status).toBe(200);
    const page = await server.request('/docs/performance');
    expect(page.status).toBe(200);
    expect(page.body).toContain('Start-up on an existing database');
    const assets = [...home.body.matchAll(/(?:href|src|data-search-index)="(\/docs\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    const reference = await server.request('/docs/api');
    expect(reference.status).toBe(200);
    const referenceAssets = [...reference.body.matchAll(/(?:href|src)="(\/docs\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(referenceAssets.filter((a) => a.includes('/swagger-ui/'))).toHaveLength(2);
    for (const asset of new Set([...assets, ...referenceAssets])) {
      const r = await server.request(asset);
      expect(r.status, asset).toBe(200);
      expect(r.body.length, asset).toBeGreaterThan(100);
    }
  });

  it('the OpenAPI document, as committed, and the portal from portal/dist', async () => {
    const openapi = await server.request('/v1/openapi.json');
    expect(openapi.status).toBe(200);
    expect(openapi.json()).toEqual(JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')));
    const portal = await server.request('/portal/');
    expect(portal.status).toBe(200);
    expect(portal.body).toBe(readFileSync(`${PORTAL_DIST_DIR}index.html`, 'utf8'));
  });
});
