/**
 * The documentation site over HTTP through the real app: public pages at /docs without a key, the
 * security and cache headers, assets (ours and swagger-ui's from node_modules) at hashed or
 * versioned URLs, a page for a markdown file dropped into a docs folder, 404 in the site's layout,
 * and the neighbours it must not disturb: /v1 (401 first, then JSON 404), /v1/openapi.json (public)
 * and /portal.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCS_CSP, registerDocsSite } from '../../../src/modules/docs-site/docs-site.routes.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';

describe('documentation site over HTTP', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await createTestApp(db);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers });

  it('serves the home page and every page without an API key, with strict headers', async () => {
    const home = await get('/docs');
    expect(home.statusCode).toBe(200);
    expect(home.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(home.headers['content-security-policy']).toBe(DOCS_CSP);
    expect(home.headers['content-security-policy']).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    expect(home.headers['x-content-type-options']).toBe('nosniff');
    expect(home.headers['cache-control']).toBe('no-cache');
    expect(home.body).toContain('<h1 id="documentation">');
    // No inline script and no other origin anywhere in the page.
    expect(home.body).not.toMatch(/<script(?![^>]*\bsrc=")/);
    expect(home.body).not.toMatch(/(src|href)="(https?:)?\/\//);

    const quickstart = await get('/docs/quickstart');
    expect(quickstart.statusCode).toBe(200);
    expect(quickstart.body).toContain('<title>Quickstart · Credit Decisioning Service docs</title>');
    expect(quickstart.body).toContain('aria-current="page">Quickstart</a>');
    const adr = await get('/docs/adr/0005-webhook-delivery');
    expect(adr.statusCode).toBe(200);
    expect(adr.body).toContain('Architecture decisions');
    expect((await get('/docs/')).body).toBe(home.body);
  });

  it('serves the errors page generated from the registry', async () => {
    const res = await get('/docs/errors');
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('generated from the error registry');
    expect(res.body).toContain('<td><code>idempotency_conflict</code></td>');
  });

  it('serves assets at content-addressed URLs, cached for a year; unknown assets are 404', async () => {
    const home = (await get('/docs')).body;
    const css = /href="(\/docs\/assets\/docs-[0-9a-f]{12}\.css)"/.exec(home)![1]!;
    const js = /src="(\/docs\/assets\/docs-[0-9a-f]{12}\.js)"/.exec(home)![1]!;
    const index = /data-search-index="(\/docs\/assets\/search-index-[0-9a-f]{12}\.json)"/.exec(home)![1]!;
    for (const [url, type] of [[css, 'text/css; charset=utf-8'], [js, 'text/javascript; charset=utf-8'], [index, 'application/json; charset=utf-8']] as const) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toBe(type);
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
    const entries = (await get(index)).json<Array<{ u: string; p: string; h: string; t: string }>>();
    expect(entries.find((e) => e.u === '/docs/webhooks#verifying-the-signature')).toMatchObject({ p: 'Webhooks', h: 'Verifying the signature' });

    const missing = await get('/docs/assets/docs-000000000000.css');
    expect(missing.statusCode).toBe(404);
    expect(missing.headers['cache-control']).toBe('no-store');
    expect((await get('/docs/assets/../../package.json')).statusCode).toBe(404);
  });

  it('serves the API reference with swagger-ui from this origin, pointed at /v1/openapi.json', async () => {
    const page = await get('/docs/api');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('data-openapi-url="/v1/openapi.json"');
    const bundle = /src="(\/docs\/assets\/swagger-ui\/[0-9.]+\/swagger-ui-bundle\.js)"/.exec(page.body)![1]!;
    const css = /href="(\/docs\/assets\/swagger-ui\/[0-9.]+\/swagger-ui\.css)"/.exec(page.body)![1]!;
    const init = /src="(\/docs\/assets\/api-reference-[0-9a-f]{12}\.js)"/.exec(page.body)![1]!;
    const bundleRes = await get(bundle);
    expect(bundleRes.statusCode).toBe(200);
    expect(bundleRes.body.length).toBeGreaterThan(500_000);
    expect(bundleRes.headers['cache-control']).toContain('immutable');
    expect((await get(css)).statusCode).toBe(200);
    expect((await get(init)).body).toContain('validatorUrl: null');
    // Only the files the page needs come out of node_modules.
    expect((await get(bundle.replace('swagger-ui-bundle.js', 'package.json'))).statusCode).toBe(404);

    const openapi = await get('/v1/openapi.json');
    expect(openapi.statusCode).toBe(200);
    expect(Object.keys(openapi.json<{ paths: object }>().paths)).toContain('/v1/decisions/bnpl');
  });

  it('answers an unknown page with 404 in the site layout, and a .md address with its page', async () => {
    const res = await get('/docs/no-such-page');
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toContain('Page not found');
    expect(res.body).toContain('id="sidebar"');
    const md = await get('/docs/webhooks.md');
    expect(md.statusCode).toBe(301);
    expect(md.headers.location).toBe('/docs/webhooks');
  });

  it('leaves /v1 and /portal as they were', async () => {
    const noKey = await get('/v1/docs');
    expect(noKey.statusCode).toBe(401);
    expect(errorOf(noKey).error).toBe('invalid_api_key');
    const unknown = await get('/v1/docs', bearer(t.tenant.sandbox.apiKey));
    expect(unknown.statusCode).toBe(404);
    expect(errorOf(unknown).error).toBe('not_found');
    const other = await get('/docsx');
    expect(other.statusCode).toBe(404);
    expect(errorOf(other).error).toBe('not_found');
    const post = await t.app.inject({ method: 'POST', url: '/docs/quickstart', payload: {} });
    expect(post.statusCode).toBe(405);
    const portal = await get('/portal');
    expect([200, 503]).toContain(portal.statusCode);
    expect(portal.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(portal.body).not.toContain('Credit Decisioning Service docs');
  });
});

describe('documentation site from another docs folder', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cds-docs-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('shows a markdown file added to the folder, in the navigation and as a page', async () => {
    mkdirSync(path.join(dir, 'adr'));
    writeFileSync(path.join(dir, 'quickstart.md'), '# Quickstart\n\nSee [events](events.md#listing).\n');
    writeFileSync(path.join(dir, 'events.md'), '# Event history\n\n## Listing\n\nNewest first.\n');
    writeFileSync(path.join(dir, 'brand-new.md'), '# Brand new page\n\nHello.\n');
    writeFileSync(path.join(dir, 'adr', '0010-documentation-site.md'), '# ADR 0010: Documentation site\n');
    const app = Fastify();
    await registerDocsSite(app, { docsDir: dir });
    const home = await app.inject({ method: 'GET', url: '/docs' });
    expect(home.body).toContain('<a href="/docs/events">Event history</a>');
    expect(home.body).toContain('<a href="/docs/brand-new">Brand new page</a>');
    const quickstart = await app.inject({ method: 'GET', url: '/docs/quickstart' });
    expect(quickstart.body).toContain('<a href="/docs/events#listing">events</a>');
    const page = await app.inject({ method: 'GET', url: '/docs/brand-new' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<h1 id="brand-new-page">Brand new page</h1>');
    await app.close();
  });
});
