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
 * while `statementsOut` statements are out on the connection already (it then goes when one of
 * them returns, for everyone who asked meanwhile).
 *
 * The poll's batched read rides on the same connection (`readInBarrier`, ADR 0024): a statement
 * that goes out is the read when one is waiting, else the empty query, and either way its answer is
 * the barrier of everyone who asked before it went out. A poll starts its read before it
 * authenticates (http/plugins/prefetch.ts), so its read and its barrier leave in one statement:
 * one round trip instead of two, and about half the statements this process sends and PostgreSQL
 * wakes up for.
 *
 * Two statements out at once (ADR 0052). The connection is in node-pg's pipeline mode: a statement
 * is written while the one before it is still being answered, and the answers come back in order.
 * PostgreSQL still sends pending notifications before each ReadyForQuery, and a commit signals
 * the listening backend before its client hears of it, so the backend has the signal by the time
 * it reads a statement written after the caller asked: the second statement is as good a barrier
 * as the first. What it buys: with one statement out, the requests that arrived while it was being
 * answered waited for it, then for their own, and the server sat idle meanwhile; the second goes
 * out at once (polls on PostgreSQL: about a sixth more per second from wrk, docs/performance.md).
 * A read waits at most for the statements out before it.
 *
 * When the connection is not (yet) listening, has failed, or a statement on it takes longer than
 * `barrierTimeoutMs`, `ready()` answers false and the caller reads the database, and a read
 * waiting on it is read on the pool instead: an outage of the listener can make requests
 * slower, never let a revoked key through. The cache is emptied whenever the connection is lost
 * and again once it listens (notifications sent meanwhile were missed), and the connection is
 * re-established with back-off. Started lazily by the first `ready()`, so CLI commands that
 * never authenticate never open it.
 *
 * The same connection LISTENs on `cds_decision_changes` for the poll cache (ADR 0050, migration
 * 0028): a decision's id when its row changes, `*` on TRUNCATE. Both channels' notifications come
 * before the ReadyForQuery that ends a barrier, so one barrier covers both caches; both are emptied
 * together when the connection is lost and again once it listens.
 *
 * SQLite: one server process, and every change goes through its services, which invalidate the
 * cache themselves (`localInvalidationFeed`); the cache's maximum age bounds what another process
 * writing the file (an operator's sqlite3 shell) can leave stale.
 */
import type pgModule from 'pg';
import type { Logger } from 'pino';
import type { ApiKeyCache } from './api-key-cache.js';

export const AUTH_CHANGES_CHANNEL = 'cds_auth_changes';
export const DECISION_CHANGES_CHANNEL = 'cds_decision_changes';

/** The poll cache as the listener sees it (modules/decisions/decision-cache.ts). */
export interface DecisionChangeSink {
  invalidate(decisionId: string): void;
  clear(): void;
}

export type FeedState = 'local' | 'idle' | 'connecting' | 'listening' | 'down' | 'closed';

export interface InvalidationFeed {
  /** True: every change committed before this call is reflected in the cache. False: bypass it. */
  ready(): boolean | Promise<boolean>;
  /**
   * PostgreSQL: sends a read-only statement (rows as arrays of values) as the listening
   * connection's next statement, where its answer is also the barrier of every `ready()` caller
   * that asked before it went out: the poll's batched read and the barrier in one round trip.
   * null when that connection is not listening or already has a read waiting: read elsewhere.
   * A rejection (the connection lost, the statement refused) means: read elsewhere.
   */
  readInBarrier?(text: string, values: unknown[], name?: string): Promise<unknown[][]> | null;
  /** How many statements it sends at once, reads among them: what a batched reader keeps in flight (ADR 0052). */
  statementsOut?: number;
  /** Statements sent on the listening connection since start: empty barriers and reads (diagnostics, tests). */
  sent?(): { empty: number; reads: number };
  /** Starts listening if not yet (idempotent); resolves once listening. */
  start(): Promise<void>;
  state(): FeedState;
  /** Resolves the next time the state becomes `state` (tests and diagnostics). */
  whenState(state: FeedState): Promise<void>;
  close(): Promise<void>;
}

/** A statement out on the listening connection; `settle` runs once, with its rows or without. */
interface Outgoing {
  settle(fresh: boolean, rows: unknown[][] | null, err?: unknown): void;
}

interface QueuedRead {
  text: string;
  values: unknown[];
  /** Its prepared-statement name, if it has one (parsed and planned once on this connection). */
  name: string | undefined;
  resolve(rows: unknown[][]): void;
  reject(err: unknown): void;
}

export function localInvalidationFeed(): InvalidationFeed {
  return { ready: () => true, start: async () => undefined, state: () => 'local', whenState: async () => undefined, close: async () => undefined };
}

export interface PostgresFeedOptions {
  databaseUrl: string;
  cache: ApiKeyCache;
  /** The poll cache, kept current from the same connection (ADR 0050); none: decision changes are not listened for. */
  decisions?: DecisionChangeSink | null;
  logger: Logger;
  /** A barrier slower than this counts as a lost connection (default 2 s). */
  barrierTimeoutMs?: number;
  /** How many statements may be out on the connection at once (default `STATEMENTS_OUT`; 1: one at a time, no pipeline mode). */
  statementsOut?: number;
  /** First reconnect delay, doubled per failure up to 5 s (default 200 ms). */
  reconnectDelayMs?: number;
}

function lostError(): Error {
  return new Error('the API-key listener connection was lost');
}

/** Statements out at once on the listening connection (ADR 0052): past two, batches only get smaller. */
export const STATEMENTS_OUT = 2;

export function postgresInvalidationFeed(options: PostgresFeedOptions): InvalidationFeed {
  const { cache, logger } = options;
  const statementsOut = Math.max(1, Math.floor(options.statementsOut ?? STATEMENTS_OUT));
  const decisions = options.decisions ?? null;
  const barrierTimeoutMs = options.barrierTimeoutMs ?? 2_000;
  const baseDelayMs = options.reconnectDelayMs ?? 200;
  let state: FeedState = 'idle';
  let client: pgModule.Client | null = null;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | null = null;
  /** The statements out on the listening connection (at most `statementsOut`): whom their answers settle. */
  const outstanding = new Set<Outgoing>();
  /** The barrier callers join until a statement goes out (whichever: the empty query or a read). */
  let next: { promise: Promise<boolean>; resolve: (fresh: boolean) => void } | null = null;
  /** A read waiting to go out as the next statement (at most one: see `readInBarrier`). */
  let queuedRead: QueuedRead | null = null;
  let flushScheduled = false;
  const sentCounts = { empty: 0, reads: 0 };
  const waiters: Array<{ state: FeedState; resolve: () => void }> = [];

  function setState(to: FeedState): void {
    state = to;
    for (const w of waiters.splice(0)) {
      if (w.state === to) w.resolve();
      else waiters.push(w);
    }
  }

  function apply(channel: string, payload: string | undefined): void {
    if (channel === DECISION_CHANGES_CHANNEL) {
      if (payload === undefined || payload === '*') decisions?.clear();
      else decisions?.invalidate(payload);
      return;
    }
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
    const c = new pg.Client({
      connectionString: options.databaseUrl,
      connectionTimeoutMillis: 2_000,
      keepAlive: true,
      application_name: 'cds-auth-listener',
      // Statements written while the ones before them are answered (ADR 0052).
      ...(statementsOut > 1 ? { pipeline: true } : {}),
      // Half the barrier time-out: a read that waits (a migration's lock on its table, an
      // overloaded server) is cancelled by PostgreSQL before the barrier time-out runs out: an
      // error on a live connection (the read goes to the pool, its callers read the database),
      // not a connection given up for lost.
      options: `-c statement_timeout=${Math.max(1, Math.floor(barrierTimeoutMs / 2))}`,
    });
    client = c;
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c, new Error('connection ended')));
    c.on('notification', (message) => {
      if (client === c) apply(message.channel, message.payload);
    });
    try {
      await c.connect();
      await c.query(decisions ? `LISTEN ${AUTH_CHANGES_CHANNEL}; LISTEN ${DECISION_CHANGES_CHANNEL}` : `LISTEN ${AUTH_CHANGES_CHANNEL}`);
    } catch (err) {
      lost(c, err);
      return;
    }
    if (client !== c) return;
    // Whatever changed while nobody listened is unknown: start empty.
    cache.clear();
    decisions?.clear();
    if (failures > 0) logger.info('API-key cache: listening for revocations again; cache back on');
    failures = 0;
    setState('listening');
  }

  function lost(c: pgModule.Client, err: unknown): void {
    if (client !== c) return;
    client = null;
    abandon();
    cache.clear();
    decisions?.clear();
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

  /**
   * Everything waiting on the listening connection is settled without it: barrier callers answer
   * false (they read the database), reads reject (their caller reads on the pool). The connection
   * was lost or closed; a late answer from it is ignored (`settle` runs once).
   */
  function abandon(): void {
    const out = [...outstanding];
    outstanding.clear();
    for (const o of out) o.settle(false, null, lostError());
    const joined = next;
    next = null;
    joined?.resolve(false);
    const read = queuedRead;
    queuedRead = null;
    read?.reject(lostError());
  }

  function schedule(): void {
    if (flushScheduled || outstanding.size >= statementsOut) return;
    flushScheduled = true;
    // At the end of the turn: every request that arrived together has asked by then.
    setImmediate(flush);
  }

  /** Sends the next statement: the queued read if any, else the empty query; its answer is everyone's barrier. */
  function flush(): void {
    flushScheduled = false;
    if (outstanding.size >= statementsOut) return;
    const c = client;
    if (state !== 'listening' || c === null) {
      abandon();
      return;
    }
    const joined = next;
    const read = queuedRead;
    if (joined === null && read === null) return;
    next = null;
    queuedRead = null;
    let done = false;
    const timer = setTimeout(() => {
      lost(c, new Error(`no answer to the freshness barrier within ${barrierTimeoutMs} ms`));
    }, barrierTimeoutMs);
    const out: Outgoing = {
      settle(fresh, rows, err) {
        if (done) return;
        done = true;
        clearTimeout(timer);
        outstanding.delete(out);
        joined?.resolve(fresh);
        if (read) {
          if (rows) read.resolve(rows);
          else read.reject(err);
        }
        if (next === null && queuedRead === null) return;
        // After a read, one turn later than the reads its answer releases (the batched read's held
        // batch goes out in a setImmediate queued after this one), so they ride on the next statement.
        if (read) setImmediate(schedule);
        else schedule();
      },
    };
    outstanding.add(out);
    const answered = read ? c.query<unknown[]>({ name: read.name, text: read.text, values: read.values, rowMode: 'array' }) : c.query('');
    if (read) sentCounts.reads++;
    else sentCounts.empty++;
    answered.then(
      (result) => out.settle(client === c && state === 'listening', result.rows),
      (err: unknown) => {
        out.settle(false, null, err);
        // A statement the server refused (a DatabaseError, with its SQLSTATE) leaves the connection
        // as it was; anything else means it is gone.
        if (!(err instanceof Error && 'severity' in err)) lost(c, err);
      },
    );
  }

  return {
    ready() {
      if (state !== 'listening' || client === null) {
        if (state === 'idle') void connect();
        return false;
      }
      // A caller must wait for a statement sent after it asked: the one out may have been
      // answered before a change committed just now.
      if (next === null) {
        let resolve!: (fresh: boolean) => void;
        const promise = new Promise<boolean>((r) => (resolve = r));
        next = { promise, resolve };
        schedule();
      }
      return next.promise;
    },
    readInBarrier(text, values, name) {
      // One read queued at most: a second (a batch let go by the batched read's hold bound while
      // this connection is slow) goes to the pool rather than queue behind it.
      if (state !== 'listening' || client === null || queuedRead !== null) return null;
      return new Promise<unknown[][]>((resolve, reject) => {
        queuedRead = { text, values, name, resolve, reject };
        schedule();
      });
    },
    statementsOut,
    sent: () => ({ ...sentCounts }),
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
      abandon();
      cache.clear();
      decisions?.clear();
      await c?.end().catch(() => undefined);
    },
  };
}
