/**
 * Builds the real application graph for a test: real database (per dialect), real services, the
 * test's own clock and logger. `createTestApp` also provisions one tenant exactly as the CLI does.
 */
import type { FastifyInstance } from 'fastify';
import { Writable } from 'node:stream';
import { loadConfig, type Config } from '../../src/config/config.js';
import { createContext, type AppContext, type ContextOverrides } from '../../src/app/context.js';
import { migrateToLatest, openStorage, type StorageOptions } from '../../src/db/database.js';
import { buildApp, type BuildAppOptions } from '../../src/http/build-app.js';
import { createLogger } from '../../src/lib/logger.js';
import type { Clock } from '../../src/lib/clock.js';
import type { ProvisionedTenant } from '../../src/modules/tenants/tenants.service.js';
import type { TestDatabase } from './databases.js';
import { logArchive } from './log-archive.js';

export const TEST_ENCRYPTION_KEY = '11'.repeat(32);

/** Log lines a test can inspect (for "no PII in logs" assertions), also archived for the run's scan. */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  private readonly archive: ((lines: readonly string[]) => void) | null;
  /** `archive: false` only for a test that logs PII on purpose (the scan's own test). */
  constructor(options: { archive?: boolean } = {}) {
    super();
    this.archive = options.archive === false ? null : logArchive('app');
  }
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    const lines = chunk.toString('utf8').split('\n').filter(Boolean);
    this.lines.push(...lines);
    this.archive?.(lines);
    done();
  }
  get text(): string {
    return this.lines.join('\n');
  }
}

export function testConfig(db: TestDatabase, env: Record<string, string> = {}): Readonly<Config> {
  return loadConfig({
    DATA_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    CDS_DATA_DIR: db.dataDir,
    ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}),
    PUBLIC_BASE_URL: 'http://127.0.0.1:3000',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1',
    // The whole suite with SQLite's writer thread on every planned batch (ADR 0030), run by hand:
    // CDS_TEST_SQLITE_WRITER_THREAD=always npx vitest run
    ...(process.env.CDS_TEST_SQLITE_WRITER_THREAD ? { CDS_SQLITE_WRITER_THREAD: process.env.CDS_TEST_SQLITE_WRITER_THREAD } : {}),
    ...env,
  });
}

export interface TestApp {
  app: FastifyInstance;
  ctx: AppContext;
  tenant: ProvisionedTenant;
  logs: LogCapture;
  close(): Promise<void>;
}

export async function createTestApp(
  db: TestDatabase,
  options: {
    clock?: Clock;
    env?: Record<string, string>;
    build?: BuildAppOptions;
    logLevel?: string;
    overrides?: ContextOverrides;
    /** SQLite: how the WAL is synced (a test holds it to see what waits for the disk). */
    syncWal?: StorageOptions['syncWal'];
  } = {},
): Promise<TestApp> {
  const config = testConfig(db, options.env);
  const logs = new LogCapture();
  const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, writerThread: config.sqliteWriterThread !== 'off', poolSize: 5, ...(options.syncWal ? { syncWal: options.syncWal } : {}) });
  await migrateToLatest(storage.db);
  const ctx = createContext(config, { storage, logger: createLogger(options.logLevel ?? 'info', logs), ...(options.clock ? { clock: options.clock } : {}), ...options.overrides });
  const app = await buildApp(ctx, options.build);
  await app.ready();
  const tenant = await ctx.tenants.createTenant({ name: 'Test Lender' });
  return {
    app,
    ctx,
    tenant,
    logs,
    async close() {
      await app.close();
      await ctx.close();
    },
  };
}

export function bearer(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}` };
}

/** Parse an error response and check it has exactly the stable three fields. */
export function errorOf(response: { json(): unknown; headers: Record<string, unknown> }): { error: string; message: string; request_id: string } {
  const body = response.json() as Record<string, unknown>;
  if (Object.keys(body).sort().join(',') !== 'error,message,request_id') throw new Error(`not the stable error body: ${JSON.stringify(body)}`);
  if (body.request_id !== response.headers['request-id']) throw new Error('request_id differs from the Request-Id header');
  return body as { error: string; message: string; request_id: string };
}
