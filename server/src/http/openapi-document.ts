/**
 * Generates the OpenAPI document from the route schemas without a running server, for
 * `npm run openapi` (writes docs/openapi.json) and for the test that keeps the committed file and
 * the code in step. Uses a throw-away embedded database; nothing is served.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../config/config.js';
import { createContext } from '../app/context.js';
import { createLogger } from '../lib/logger.js';
import { buildApp } from './build-app.js';

export const OPENAPI_PATH = fileURLToPath(new URL('../../../docs/openapi.json', import.meta.url));

export async function generateOpenApiDocument(): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'cds-openapi-'));
  const ctx = createContext(loadConfig({ CDS_DATA_DIR: dir, DATA_ENCRYPTION_KEY: '00'.repeat(32) }), { logger: createLogger('silent') });
  try {
    const app = await buildApp(ctx);
    await app.ready();
    const text = JSON.stringify(app.swagger(), null, 2) + '\n';
    await app.close();
    return text;
  } finally {
    await ctx.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1]) && process.argv.includes('--write')) {
  writeFileSync(OPENAPI_PATH, await generateOpenApiDocument());
  process.stderr.write(`wrote ${OPENAPI_PATH}\n`);
}
