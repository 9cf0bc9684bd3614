/**
 * `cds serve`: migrate, then run the HTTP app (role api), the background workers (role worker), or
 * both (all, the default and what `npm start` runs). Several processes may start at once on one
 * PostgreSQL database: the migrator takes a lock, so one applies and the others find it done.
 *
 * SIGTERM/SIGINT: first drain (SHUTDOWN_DRAIN_MS, default 0): keep serving while /readyz answers
 * 503 so the load balancer stops sending traffic here; a second signal cuts the drain short. Then
 * stop taking new connections, let in-flight requests finish, stop the workers (in-flight webhook
 * sends finish and are recorded), log what the delivery worker did, close the database.
 */
import type { Config } from '../config/config.js';
import { createContext } from '../app/context.js';
import { warmUpInBackground } from '../app/warm-up.js';
import { prepareDatabase } from '../app/data-key-check.js';
import { logProcessWarnings } from '../lib/logger.js';
import { buildAppWithCompilers, type ServerLifecycle } from '../http/build-app.js';
import { zenModule } from '../modules/engine/zen.js';
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
  logProcessWarnings(log);
  // Before anything is served: a key that cannot open this database's values is a refusal, not 500s later.
  const { newer, fingerprint } = await prepareDatabase(ctx.storage.db, config, ctx.clock.now().getTime()).catch(async (err: unknown) => {
    await ctx.close();
    throw err;
  });
  if (newer.length > 0) {
    // The previous release during a rolling deploy, or after a rollback (db/database.ts migrateToLatest).
    log.warn({ newerMigrations: newer }, 'the database schema is newer than this build: running on it unchanged (a release keeps the previous one working)');
  }
  const encryptionKeyFingerprint = fingerprint.slice(0, 12);

  const lifecycle: ServerLifecycle = { draining: false };
  const built = role === 'worker' ? null : await buildAppWithCompilers(ctx, { lifecycle });
  const app = built?.app ?? null;
  if (built && app) {
    // The policy engine (a native add-on) now rather than in the first decision (modules/engine/zen.ts).
    zenModule();
    // Bounded (the Redis connect time-out): the first requests are limited through Redis, not per process.
    await ctx.rateLimiter.ready();
    // Open the API-key cache's revocation listener now rather than on the first request (not awaited: requests read the database until it listens).
    void ctx.apiKeys.startCache();
    const address = await app.listen({ port: config.port, host: config.host });
    log.info(
      { address, role, database: `${ctx.storage.dialect} ${ctx.storage.location}`, rateLimiting: config.redisUrl ? 'redis' : 'in-process', encryptionKey: config.dataEncryptionKeySource, encryptionKeyFingerprint, startupMs: Math.round(performance.now() - startedAt), sinceProcessStartMs: Math.round(performance.now()), startupCpuMs: cpuMs() },
      'credit decisioning service ready',
    );
    // What start-up left for later (route schemas, argon2): now, a step at a time while idle (app/warm-up.ts).
    warmUpInBackground({
      ctx,
      compilers: built.compilers,
      server: app.server,
      onError: (err) => log.error({ err }, 'warm-up step failed; the first request that needs it will try again'),
    });
  }
  const workers = role === 'api' ? null : startWorkers(ctx);
  if (workers) {
    log.info(
      { role, database: `${ctx.storage.dialect} ${ctx.storage.location}`, encryptionKeyFingerprint, webhookConcurrency: config.webhookDelivery.concurrency, webhookEndpointConcurrency: config.webhookDelivery.perEndpointConcurrency },
      'worker ready',
    );
  }

  let stopping = false;
  let endDrain: (() => void) | null = null;
  const stop = async (signal: string) => {
    if (stopping) {
      // A second signal: the operator (or orchestrator) wants it gone now. During the drain that
      // means the graceful stop starts at once; during the graceful stop, exiting at once.
      if (endDrain) return endDrain();
      log.error({ signal }, 'second signal during shutdown; exiting now');
      log.flush();
      process.exit(1);
    }
    stopping = true;
    if (app && config.shutdownDrainMs > 0) {
      lifecycle.draining = true;
      log.info({ signal, drainMs: config.shutdownDrainMs }, 'draining: /readyz answers 503, requests are still served');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, config.shutdownDrainMs);
        endDrain = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      endDrain = null;
    }
    log.info({ signal }, 'shutting down: finishing in-flight work');
    const force = setTimeout(() => {
      log.error('shutdown took longer than 25 s; exiting');
      process.exit(1);
    }, 25_000).unref();
    try {
      await app?.close();
      await workers?.stop();
      if (workers) log.info({ webhookDelivery: ctx.webhookDelivery.stats() }, 'workers stopped');
      await ctx.close();
    } finally {
      clearTimeout(force);
      log.info('stopped');
      // Logs are written asynchronously: flush them before the process goes.
      await new Promise<void>((resolve) => log.flush(() => resolve()));
      process.exit(0);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  return -1;
}
