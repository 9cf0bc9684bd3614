/**
 * The documentation site at /docs: public (no API key, outside /v1), read-only, served from memory.
 *
 * The markdown in docs/ is rendered once, on the first request to /docs (docs-renderer.ts), and
 * kept: no request renders markdown, and the many test apps that never open /docs pay nothing.
 * The renderer (and marked) is imported then too, so the server's start-up does not load it.
 * Assets (the site's CSS and JS, the search index, swagger-ui-dist's files from node_modules) are
 * served under /docs/assets/ at URLs that carry a content hash or the package version, so they are
 * cached for a year; pages are `no-cache`. Only files named here can be served: nothing from the
 * URL reaches the file system. Content-Security-Policy allows our own origin only, with no inline
 * script (every script is a served file), so the site works without any other origin.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ERROR_REGISTRY } from '../../http/errors/error-registry.js';
import { API_REFERENCE_SLUG } from './docs-manifest.js';
import type { DocsAssetUrls, DocsFile, DocsSite } from './docs-renderer.js';

export const DOCS_DIR = fileURLToPath(new URL('../../../../docs/', import.meta.url));
/** The same folder from src/ (tests) and dist/ (the built server): both sit three levels below server/. */
const ASSETS_DIR = fileURLToPath(new URL('../../../src/modules/docs-site/assets/', import.meta.url));
/** The only files served from swagger-ui-dist. */
type SwaggerFile = 'swagger-ui-bundle.js' | 'swagger-ui.css';

export const DOCS_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const IMMUTABLE = 'public, max-age=31536000, immutable';

interface Asset {
  body: Buffer | string;
  type: string;
  cacheControl: string;
}

interface BuiltSite {
  site: DocsSite;
  /** By path below /docs/assets/. */
  assets: Map<string, Asset>;
}

/** Every .md file below `dir`, with paths relative to it (forward slashes). */
export function readDocsFiles(dir: string): DocsFile[] {
  const out: DocsFile[] = [];
  const walk = (folder: string) => {
    for (const name of readdirSync(folder).sort()) {
      const full = path.join(folder, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name.endsWith('.md')) out.push({ path: path.relative(dir, full).split(path.sep).join('/'), markdown: readFileSync(full, 'utf8') });
    }
  };
  walk(dir);
  return out;
}

function hashed(name: string, body: string | Buffer): string {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  const ext = path.extname(name);
  return `${path.basename(name, ext)}-${hash}${ext}`;
}

function swaggerUiDir(): { dir: string; version: string } {
  const require = createRequire(import.meta.url);
  const pkgFile = require.resolve('swagger-ui-dist/package.json');
  return { dir: path.dirname(pkgFile), version: (JSON.parse(readFileSync(pkgFile, 'utf8')) as { version: string }).version };
}

export async function buildDocsSite(docsDir: string = DOCS_DIR): Promise<BuiltSite> {
  const { DOCS_BASE, renderDocsSite } = await import('./docs-renderer.js');
  const assets = new Map<string, Asset>();
  const own = (name: string, type: string): string => {
    const body = readFileSync(path.join(ASSETS_DIR, name));
    const file = hashed(name, body);
    assets.set(file, { body, type, cacheControl: IMMUTABLE });
    return `${DOCS_BASE}/assets/${file}`;
  };
  const swagger = swaggerUiDir();
  const swaggerUrl = (name: SwaggerFile, type: string): string => {
    const rel = `swagger-ui/${swagger.version}/${name}`;
    assets.set(rel, { body: readFileSync(path.join(swagger.dir, name)), type, cacheControl: IMMUTABLE });
    return `${DOCS_BASE}/assets/${rel}`;
  };
  const urls: Omit<DocsAssetUrls, 'searchIndex'> = {
    css: own('docs.css', 'text/css; charset=utf-8'),
    js: own('docs.js', 'text/javascript; charset=utf-8'),
    apiReferenceJs: own('api-reference.js', 'text/javascript; charset=utf-8'),
    swaggerCss: swaggerUrl('swagger-ui.css', 'text/css; charset=utf-8'),
    swaggerJs: swaggerUrl('swagger-ui-bundle.js', 'text/javascript; charset=utf-8'),
  };
  // The search index is made from the rendered pages, and the pages name the index's URL: render
  // with a placeholder, then put the index's hashed URL into every page.
  const placeholder = `${DOCS_BASE}/assets/search-index.json`;
  const site = renderDocsSite({ files: readDocsFiles(docsDir), errorRegistry: ERROR_REGISTRY, assets: { ...urls, searchIndex: placeholder }, openApiUrl: '/v1/openapi.json' });
  const indexBody = JSON.stringify(site.searchIndex);
  const indexFile = hashed('search-index.json', indexBody);
  assets.set(indexFile, { body: indexBody, type: 'application/json; charset=utf-8', cacheControl: IMMUTABLE });
  const fix = (html: string) => html.split(`data-search-index="${placeholder}"`).join(`data-search-index="${DOCS_BASE}/assets/${indexFile}"`);
  for (const page of site.pages.values()) page.html = fix(page.html);
  site.home = fix(site.home);
  site.apiReference = fix(site.apiReference);
  site.notFound = fix(site.notFound);
  return { site, assets };
}

export interface DocsSiteOptions {
  docsDir?: string;
}

export async function registerDocsSite(app: FastifyInstance, options: DocsSiteOptions = {}): Promise<void> {
  let built: Promise<BuiltSite> | null = null;
  // A failed build is not kept: the next request tries again.
  const get = (): Promise<BuiltSite> =>
    (built ??= buildDocsSite(options.docsDir).catch((err: unknown) => {
      built = null;
      throw err;
    }));

  await app.register(async (docs) => {
    docs.addHook('onSend', async (_request, reply, payload) => {
      reply.headers({
        'Content-Security-Policy': DOCS_CSP,
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'same-origin',
        'X-Frame-Options': 'DENY',
        'Cross-Origin-Opener-Policy': 'same-origin',
      });
      return payload;
    });

    const html = (reply: FastifyReply, body: string, status = 200) => reply.code(status).type('text/html; charset=utf-8').header('Cache-Control', 'no-cache').send(body);

    docs.get('/docs', { schema: { hide: true } }, async (_request, reply) => html(reply, (await get()).site.home));
    docs.get<{ Params: { '*': string } }>('/docs/*', { schema: { hide: true } }, async (request, reply) => {
      const { site, assets } = await get();
      const rel = request.params['*'];
      if (rel === '') return html(reply, site.home);
      if (rel.startsWith('assets/')) {
        const asset = assets.get(rel.slice('assets/'.length));
        if (!asset) return reply.code(404).type('text/plain; charset=utf-8').header('Cache-Control', 'no-store').send('Not found');
        return reply.type(asset.type).header('Cache-Control', asset.cacheControl).send(asset.body);
      }
      const slug = rel.replace(/\/+$/, '');
      if (slug === API_REFERENCE_SLUG) return html(reply, site.apiReference);
      const page = site.pages.get(slug);
      if (page) return html(reply, page.html);
      // A link copied from GitHub (`webhooks.md`) finds its page.
      const fromMarkdown = site.pages.get(slug.replace(/\.md$/, ''));
      if (slug.endsWith('.md') && fromMarkdown) return reply.redirect(fromMarkdown.url, 301);
      return html(reply, site.notFound, 404);
    });
  });
}
