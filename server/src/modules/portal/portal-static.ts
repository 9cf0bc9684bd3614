/**
 * Serves the built web app (portal/dist, made by `npm run build`) at /portal.
 *
 * The files are read into memory once when the app is built (a few hundred KiB), so a request can
 * only ever get one of those files: no path from the URL reaches the file system. Hashed assets
 * (/portal/assets/*-<hash>.js|css) are cached for a year; index.html is `no-cache`, so a new build
 * is picked up on the next visit. Any other path under /portal without a file extension is a
 * client-side route and gets index.html (SPA fallback); a missing asset is a plain 404.
 * Content-Security-Policy allows scripts and styles from our own origin only: no inline script.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { sendError } from '../../http/plugins/errors.js';

export const PORTAL_DIST_DIR = fileURLToPath(new URL('../../../../portal/dist/', import.meta.url));

export const PORTAL_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
  '.map': 'application/json; charset=utf-8',
};

interface StaticFile {
  body: Buffer;
  type: string;
  cacheControl: string;
}

function loadFiles(dir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  if (!existsSync(path.join(dir, 'index.html'))) return files;
  const walk = (folder: string) => {
    for (const name of readdirSync(folder)) {
      const full = path.join(folder, name);
      if (statSync(full).isDirectory()) {
        walk(full);
        continue;
      }
      const rel = path.relative(dir, full).split(path.sep).join('/');
      const ext = path.extname(name).toLowerCase();
      const hashed = rel.startsWith('assets/');
      files.set(rel, {
        body: readFileSync(full),
        type: TYPES[ext] ?? 'application/octet-stream',
        cacheControl: rel === 'index.html' ? 'no-cache' : hashed ? 'public, max-age=31536000, immutable' : 'public, max-age=3600',
      });
    }
  };
  walk(dir);
  return files;
}

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Lender portal not built</title></head>
<body><h1>The lender portal has not been built</h1><p>Run <code>npm run build</code> (or <code>npm start</code>, which builds first).</p></body></html>`;

export function registerPortalStatic(portal: FastifyInstance, dir: string = PORTAL_DIST_DIR): void {
  const files = loadFiles(dir);

  portal.addHook('onSend', async (request, reply, payload) => {
    if (request.url.startsWith('/portal/api/')) return payload;
    reply.headers({
      'Content-Security-Policy': PORTAL_CSP,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'same-origin',
      'X-Frame-Options': 'DENY',
      'Cross-Origin-Opener-Policy': 'same-origin',
    });
    return payload;
  });

  const send = (reply: FastifyReply, file: StaticFile) => reply.type(file.type).header('Cache-Control', file.cacheControl).send(file.body);
  const index = (reply: FastifyReply) => {
    const file = files.get('index.html');
    if (!file) return reply.code(503).type('text/html; charset=utf-8').header('Cache-Control', 'no-store').send(NOT_BUILT);
    return send(reply, file);
  };

  portal.get('/portal', { schema: { hide: true } }, async (_request, reply) => index(reply));
  portal.get<{ Params: { '*': string } }>('/portal/*', { schema: { hide: true } }, async (request, reply) => {
    const rel = request.params['*'];
    if (rel === 'api' || rel.startsWith('api/')) return sendError(reply, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}.`);
    const file = files.get(rel);
    if (file) return send(reply, file);
    // A path with an extension is a file that does not exist; anything else is a page of the app.
    if (/\.[a-z0-9]+$/i.test(rel)) return reply.code(404).type('text/plain; charset=utf-8').header('Cache-Control', 'no-store').send('Not found');
    return index(reply);
  });
}
