/**
 * How other processes' changes reach this process's API-key cache (api-key-cache.ts).
 *
 * PostgreSQL: migration 0012's triggers `pg_notify('cds_auth_changes', ...)` in the transaction
 * that revokes, deletes or re-points a key (`key:<key_hash>`), changes a tenant's rate limits or
 * deletes it (`tenant:<id>`), or truncates either table (`all`). PostgreSQL delivers a notification
 * only if its transaction commits, and signals the listening sessions before the committing client
 * is told the commit succeeded. One dedicated connection per process LISTENs and applies them.
 *
 * `ready()` is the freshness barrier a cache hit waits for: it resolves true once a query sent on
 * the listening connection *after* the call has come back. PostgreSQL sends a session its pending
 * notifications before it says it is ready for the next query, and node-pg applies them in order,
 * so by then every change committed before the call has been applied to the cache. The query is
 * the empty one: PostgreSQL answers it (EmptyQueryResponse, then ReadyForQuery, notifications
 * first) without parsing, planning or executing anything, a third less CPU on each side than the
 * `select 1` it replaced; any query would do, since ReadyForQuery is what orders them. Concurrent
 * callers share one round trip: a barrier is sent at the end of the turn of the event loop in which
 * its first caller asked (setImmediate, after every request that arrived together), and never
 * while another is in flight (it then goes when that one returns, for everyone who asked
 * meanwhile). Under load it costs a fraction of a query per request, on a connection no request
 * waits for.
 *
 * When the connection is not (yet) listening, has failed, or a barrier takes longer than
 * `barrierTimeoutMs`, `ready()` answers false and the caller reads the database: an outage of the
 * listener can make requests slower, never let a revoked key through. The cache is emptied whenever
 * the connection is lost and again once it listens (notifications sent meanwhile were missed), and
 * the connection is re-established with back-off. Started lazily by the first `ready()`, so CLI
 * commands that never authenticate never open it.
 *
 * SQLite: one server process, and every change goes through its services, which invalidate the
 * cache themselves (`localInvalidationFeed`); the cache's maximum age bounds what another process
 * writing the file (an operator's sqlite3 shell) can leave stale.
 */
import type pgModule from 'pg';
import type { Logger } from 'pino';
import type { ApiKeyCache } from './api-key-cache.js';

export const AUTH_CHANGES_CHANNEL = 'cds_auth_changes';

export type FeedState = 'local' | 'idle' | 'connecting' | 'listening' | 'down' | 'closed';

export interface InvalidationFeed {
  /** True: every change committed before this call is reflected in the cache. False: bypass it. */
  ready(): boolean | Promise<boolean>;
  /** Starts listening if not yet (idempotent); resolves once listening. */
  start(): Promise<void>;
  state(): FeedState;
  /** Resolves the next time the state becomes `state` (tests and diagnostics). */
  whenState(state: FeedState): Promise<void>;
  close(): Promise<void>;
}

export function localInvalidationFeed(): InvalidationFeed {
  return { ready: () => true, start: async () => undefined, state: () => 'local', whenState: async () => undefined, close: async () => undefined };
}

export interface PostgresFeedOptions {
  databaseUrl: string;
  cache: ApiKeyCache;
  logger: Logger;
  /** A barrier slower than this counts as a lost connection (default 2 s). */
  barrierTimeoutMs?: number;
  /** First reconnect delay, doubled per failure up to 5 s (default 200 ms). */
  reconnectDelayMs?: number;
}

export function postgresInvalidationFeed(options: PostgresFeedOptions): InvalidationFeed {
  const { cache, logger } = options;
  const barrierTimeoutMs = options.barrierTimeoutMs ?? 2_000;
  const baseDelayMs = options.reconnectDelayMs ?? 200;
  let state: FeedState = 'idle';
  let client: pgModule.Client | null = null;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | null = null;
  let inFlight: Promise<boolean> | null = null;
  /** The barrier callers join until it is sent (then it becomes `inFlight`). */
  let scheduled: Promise<boolean> | null = null;
  const waiters: Array<{ state: FeedState; resolve: () => void }> = [];

  function setState(to: FeedState): void {
    state = to;
    for (const w of waiters.splice(0)) {
      if (w.state === to) w.resolve();
      else waiters.push(w);
    }
  }

  function apply(payload: string | undefined): void {
    if (payload?.startsWith('key:')) cache.invalidateKeyHash(payload.slice(4));
    else if (payload?.startsWith('tenant:')) cache.invalidateTenant(payload.slice(7));
    else cache.clear();
  }

  async function connect(): Promise<void> {
    retryTimer = null;
    if (state === 'closed') return;
    setState('connecting');
    // The pg the storage already loaded (one copy, also in the bundled CLI: ADR 0016).
    const { default: pg } = await import('pg');
    if ((state as FeedState) === 'closed') return; // close() ran while pg loaded
    const c = new pg.Client({ connectionString: options.databaseUrl, connectionTimeoutMillis: 2_000, keepAlive: true, application_name: 'cds-auth-listener' });
    client = c;
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c, new Error('connection ended')));
    c.on('notification', (message) => {
      if (client === c) apply(message.payload);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${AUTH_CHANGES_CHANNEL}`);
    } catch (err) {
      lost(c, err);
      return;
    }
    if (client !== c) return;
    // Whatever changed while nobody listened is unknown: start empty.
    cache.clear();
    if (failures > 0) logger.info('API-key cache: listening for revocations again; cache back on');
    failures = 0;
    setState('listening');
  }

  function lost(c: pgModule.Client, err: unknown): void {
    if (client !== c) return;
    client = null;
    inFlight = null;
    cache.clear();
    c.removeAllListeners('notification');
    c.end().catch(() => undefined);
    if (state === 'closed') return;
    if (failures === 0) {
      logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'API-key cache: not listening for revocations; every request reads the database until the listener is back');
    }
    failures++;
    setState('down');
    retryTimer = setTimeout(() => void connect(), Math.min(baseDelayMs * 2 ** (failures - 1), 5_000));
    retryTimer.unref();
  }

  function barrier(c: pgModule.Client): Promise<boolean> {
    const p = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        resolve(false);
        lost(c, new Error(`no answer to the freshness barrier within ${barrierTimeoutMs} ms`));
      }, barrierTimeoutMs);
      c.query('').then(
        () => {
          clearTimeout(timer);
          resolve(client === c && state === 'listening');
        },
        (err: unknown) => {
          clearTimeout(timer);
          resolve(false);
          lost(c, err);
        },
      );
    });
    inFlight = p;
    void p.then(() => {
      if (inFlight === p) inFlight = null;
    });
    return p;
  }

  return {
    ready() {
      if (state !== 'listening' || client === null) {
        if (state === 'idle') void connect();
        return false;
      }
      // A caller must wait for a barrier sent after it asked: the one in flight may have been
      // answered before a change committed just now.
      scheduled ??= new Promise<boolean>((resolve) => {
        const send = (): void => {
          if (inFlight !== null) {
            void inFlight.then(() => setImmediate(send));
            return;
          }
          scheduled = null;
          resolve(state === 'listening' && client !== null ? barrier(client) : false);
        };
        setImmediate(send);
      });
      return scheduled;
    },
    start() {
      if (state === 'idle') void connect();
      return this.whenState('listening');
    },
    state: () => state,
    whenState(target) {
      if (state === target) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ state: target, resolve }));
    },
    async close() {
      setState('closed');
      if (retryTimer) clearTimeout(retryTimer);
      const c = client;
      client = null;
      cache.clear();
      await c?.end().catch(() => undefined);
    },
  };
}
