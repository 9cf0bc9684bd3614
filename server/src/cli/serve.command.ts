/**
 * `cds serve`: migrate, then run the HTTP app (role api), the background workers (role worker), or
 * both (all, the default and what `npm start` runs). SIGTERM/SIGINT stop taking new connections,
 * let in-flight requests finish, stop the workers, then close the database.
 */
import type { Config } from '../config/config.js';
import { createContext } from '../app/context.js';
import { migrateToLatest } from '../db/database.js';
import { buildApp } from '../http/build-app.js';
import { startWorkers } from '../workers/workers.js';

/** CPU time this process has used so far (start-up cost that a busy machine's waiting does not inflate). */
const cpuMs = () => {
  const u = process.cpuUsage();
  return Math.round((u.user + u.system) / 1000);
};

export async function serveCommand(config: Readonly<Config>, role: 'api' | 'worker' | 'all'): Promise<number> {
  const startedAt = performance.now();
  const ctx = createContext(config);
  const log = ctx.logger;
  await migrateToLatest(ctx.storage.db);

  const app = role === 'worker' ? null : await buildApp(ctx);
  if (app) {
    // Open the API-key cache's revocation listener now rather than on the first request (not awaited: requests read the database until it listens).
    void ctx.apiKeys.startCache();
    const address = await app.listen({ port: config.port, host: config.host });
    log.info(
      { address, role, database: `${ctx.storage.dialect} ${ctx.storage.location}`, rateLimiting: config.redisUrl ? 'redis' : 'in-process', encryptionKey: config.dataEncryptionKeySource, startupMs: Math.round(performance.now() - startedAt), sinceProcessStartMs: Math.round(performance.now()), startupCpuMs: cpuMs() },
      'credit decisioning service ready',
    );
  }
  const workers = role === 'api' ? null : startWorkers(ctx);
  if (!app) log.info({ role, database: `${ctx.storage.dialect} ${ctx.storage.location}` }, 'worker ready');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight work');
    const force = setTimeout(() => {
      log.error('shutdown took longer than 25 s; exiting');
      process.exit(1);
    }, 25_000).unref();
    try {
      await app?.close();
      await workers?.stop();
      await ctx.close();
    } finally {
      clearTimeout(force);
      log.info('stopped');
      // Logs are written asynchronously: flush them before the process goes.
      await new Promise<void>((resolve) => log.flush(() => resolve()));
      process.exit(0);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  return -1;
}
