#!/usr/bin/env node
/**
 * Bundles the `cds` CLI into one ES module, server/dist/cli/main.js, after `tsc` has compiled
 * every file into server/dist (`npm run build --workspace server` runs both). ADR 0016 says why:
 * Node loading about a thousand small files (kysely's and TypeBox's ES module builds, Fastify's
 * and Ajv's CommonJS trees) was most of the service's start-up.
 *
 * How it works: esbuild starts from src/cli/main.ts and follows every import, ours (TypeScript
 * from src/, as tsc compiles it) and our dependencies', into one file, overwriting tsc's main.js.
 * Everything else tsc wrote stays in dist/: tests, the bench and `npm run openapi` import those
 * files one by one, and only `node server/dist/cli/main.js` runs the bundle.
 *   - Native add-ons stay outside, loaded from node_modules at run time: better-sqlite3,
 *     @node-rs/argon2, @gorules/zen-engine. So do ioredis and nodemailer, which our code loads with
 *     createRequire only when they are configured (esbuild does not follow those calls).
 *   - `import.meta.url` in each of our files is rewritten to the URL that file has in dist/
 *     (relative to the bundle's own URL), so paths found from it (docs/, portal/dist, the docs
 *     site's assets, node_modules for createRequire) are the same from the bundle as from tsc's
 *     files.
 *   - CommonJS dependencies call `require` for Node's built-ins; an ES module has none, so the
 *     bundle opens by making one (createRequire) for them.
 */
import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SERVER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SRC = path.join(SERVER, 'src');
const DIST = path.join(SERVER, 'dist');
const OUTFILE = path.join(DIST, 'cli', 'main.js');

/** Native add-ons (and anything only ever loaded through createRequire) stay in node_modules. */
const EXTERNAL = ['better-sqlite3', '@node-rs/argon2', '@gorules/zen-engine', 'ioredis', 'nodemailer', 'pg-native'];

const importMetaUrlAsInDist = {
  name: 'import-meta-url-as-in-dist',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (!args.path.startsWith(SRC + path.sep)) return undefined;
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('import.meta.url')) return { contents: source, loader: 'ts' };
      const distFile = path.join(DIST, path.relative(SRC, args.path)).replace(/\.ts$/, '.js');
      const relative = path.relative(path.dirname(OUTFILE), distFile).split(path.sep).join('/');
      const url = `new URL(${JSON.stringify(relative)}, import.meta.url).href`;
      return { contents: source.replaceAll('import.meta.url', url), loader: 'ts' };
    });
  },
};

const result = await build({
  entryPoints: [path.join(SRC, 'cli', 'main.ts')],
  outfile: OUTFILE,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: EXTERNAL,
  sourcemap: true,
  // Whitespace and comments only: names stay as written (stack traces, Fastify's plugin names).
  minifyWhitespace: true,
  legalComments: 'none',
  // pg asks whether it runs in a Cloudflare Worker: with no `navigator` (Node 20) it builds a
  // `Response`, which makes Node load its whole fetch implementation (undici), a tenth of a second
  // of start-up for nothing. Node 21+ has `navigator` with a userAgent of "Node.js/…"; this says
  // the same to the bundled code. Nothing else in the bundle reads `navigator` on Node.
  define: { navigator: '{"userAgent":"Node.js"}' },
  logLevel: 'warning',
  banner: { js: "import { createRequire as __cdsCreateRequire } from 'node:module';\nconst require = __cdsCreateRequire(import.meta.url);" },
  plugins: [importMetaUrlAsInDist],
  metafile: true,
});

const bytes = Object.values(result.metafile.outputs).find((o) => o.entryPoint)?.bytes ?? 0;
process.stderr.write(`bundled ${Object.keys(result.metafile.inputs).length} files into ${path.relative(SERVER, OUTFILE)} (${Math.round(bytes / 1024)} KiB); ${pathToFileURL(OUTFILE).href}\n`);
