/**
 * Storage: one Kysely instance over either dialect.
 *
 * - DATABASE_URL unset: embedded SQLite (better-sqlite3) in `<dataDir>/cds.sqlite`, WAL journal,
 *   a 200 only once the decision is on disk, busy_timeout so the CLI and the server can share the
 *   file. better-sqlite3 is synchronous; Kysely serialises access to its single connection, which
 *   is exactly SQLite's single-writer model. Idempotent state changes share that connection's
 *   transactions through the group-commit runner (group-commit.ts), so one fsync covers a batch
 *   of requests. The fsync runs off the event loop: the writer commits with synchronous=NORMAL
 *   and wal-sync.ts syncs the WAL on libuv's thread pool; a write's caller goes on only once it
 *   is durable (`sqliteDialect` below), and a response is sent only once what it could show is
 *   (http/durable-responses.ts).
 *   Checkpoints: the writer never checkpoints (`wal_autocheckpoint = 0`); a worker thread with its
 *   own connection runs PASSIVE checkpoints every 200 ms (wal-checkpointer.ts), so copying the WAL
 *   into the database file and its fsync never run on the event loop inside some request's COMMIT.
 *   Once the WAL passes 16 MB the worker holds the writer (through Kysely, so nothing blocks) for
 *   the moment it takes to copy the last frames, and the next write starts the WAL over; the
 *   worker never takes the write lock otherwise. `journal_size_limit` trims the WAL file after a
 *   reset. Should the worker die, the writer takes automatic checkpoints back.
 *   `temp_store = MEMORY` on the writer keeps the savepoints' statement journals out of files.
 * - DATABASE_URL=postgres://...: a pg Pool. int8 is parsed to a JS number (our epoch-ms times and
 *   cents are far below 2^53). Connection attempts time out quickly so an unreachable database
 *   becomes a 503 rather than a hung request, and the pool reconnects by itself when it returns.
 *   A statement never waits forever either (`statementTimeoutMs`, see `wrapQueries`):
 *   PostgreSQL cancels one that runs too long, and a query that gets no answer at all a second
 *   after that (a partition that leaves the connection open and silent) ends its connection.
 * - `readByIds`: the hottest read (a poll's decision by primary key) runs outside Kysely's
 *   executor: batched per turn of the event loop, prepared once per connection (SQLite, and a named
 *   prepared statement on PostgreSQL, on the pool and on the API-key listener alike), rows as arrays
 *   of values; a row that carries its answer already rendered comes back as that answer and a few
 *   columns (`StoredAnswerRead`, ADR 0051).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql, type CompiledQuery, type DatabaseConnection, type QueryResult } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';
import { migrations } from './migrations/index.js';
import { batchedRead, type RowValues } from './batched-read.js';
import { preparedNameOf, preparedOnPostgres } from './statements.js';
import { COMMIT_BOOKKEEPING, COMMIT_WITHOUT_WAITING, createWalSync, type WalSync } from './wal-sync.js';
import { createOffLoopReader, offLoopSqliteDialect } from './sqlite-offloop-reader.js';
import { createOffLoopWriter, type OffLoopWriter } from './sqlite-offloop-writer.js';
import { COMMITS_BEGUN, COMMITS_DURABLE, COMMITS_ENDED, createSqliteWriterThread, type SqliteWriterThread } from './sqlite-writer-thread.js';
import { CHECKPOINT_DEFAULTS, startCheckpointer, type Checkpointer, type CheckpointerOptions } from './wal-checkpointer.js';

export type DialectName = 'sqlite' | 'postgres';

export interface Storage {
  /** Writes and transactions. */
  db: Kysely<Database>;
  /**
   * Reads that need no transaction (authentication, lookups, polls). On SQLite a second connection:
   * in WAL mode readers never wait for the writer, so a long write cannot stall every request
   * behind the single write connection. On PostgreSQL the same pool.
   */
  readDb: Kysely<Database>;
  /**
   * Reads that may scan much (the portal's dashboard over up to 31 days, the decision explorer's
   * pages and CSV export), built like any Kysely query, without transactions. On SQLite a connection in a worker thread (sqlite-offloop-reader.ts), so
   * such a scan does not hold the event loop that answers the API; on PostgreSQL the same pool
   * (the database does the work, off the event loop anyway).
   */
  analyticsDb: Kysely<Database>;
  /**
   * SQLite in WAL mode: makes the writer's commits durable off the event loop (wal-sync.ts). Used
   * directly by code that commits with `COMMIT_WITHOUT_WAITING` (group commit, the delivery worker)
   * and by the HTTP responses' wait (http/durable-responses.ts); every other write through `db`
   * waits for it before it returns. null on PostgreSQL.
   */
  walSync: WalSync | null;
  dialect: DialectName;
  /** Where the data lives, without credentials (for logs). */
  location: string;
  /**
   * Rows of `table` by its primary key `id`, for a read that every request of a kind makes (polls):
   * each row the values of `columns` in that order (`id` among them). The ids asked for in the same
   * turn of the event loop are fetched by one statement (batched-read.ts):
   * - SQLite: `id in (select value from json_each(?))` with the ids as one JSON array, on the
   *   reader's own better-sqlite3 statement, run synchronously in raw mode (values, not a row
   *   object: a third cheaper to build), without Kysely's connection mutex and promises. One
   *   statement is one read transaction, so one snapshot for the whole batch.
   * - PostgreSQL: `id = any($1::text[])`, one round trip per batch instead of one per poll (that
   *   was most of the server's and the backend's CPU for a poll). A named prepared statement
   *   (docs/performance.md, "twelfth session": parsed and planned once per connection). Named
   *   columns, never `*`. `maxBatchesInFlight` batches in flight at a time (one, or two on the
   *   API-key listener: ADR 0052): the reads that arrive meanwhile go out together once one answers.
   */
  readByIds: <T extends keyof Database & string>(table: T, columns: readonly (keyof Database[T] & string)[], options?: ReadByIdsOptions) => ReadById;
  /**
   * PostgreSQL: connections in pg's pipeline mode, where a statement goes out without waiting for
   * the answer to the one before (answers still come back in order), so a transaction can send
   * its BEGIN with its first statement and its COMMIT with its last. A small pool of their own,
   * used by the webhook delivery worker's cycles (ADR 0023) and the group commit's batches of
   * planned units (ADR 0037); the statements registered by
   * statements.ts are named prepared statements here too. null on SQLite.
   */
  pipelined: PipelinedPool | null;
  /**
   * SQLite in WAL mode: the thread that runs planned group-commit units (a create's writes) off
   * the event loop (sqlite-writer-thread.ts, ADR 0030); null on PostgreSQL, without WAL, or when
   * turned off (`writerThread: false`).
   */
  writerThread: SqliteWriterThread | null;
  /**
   * SQLite in WAL mode: a write connection in a thread of its own, driven by lists of statements,
   * for the webhook delivery worker's cycles (sqlite-offloop-writer.ts, ADR 0048); null on
   * PostgreSQL, without WAL, or when the writer thread is turned off (`writerThread: false`).
   */
  offLoopWriter: OffLoopWriter | null;
  close(): Promise<void>;
}

export interface PipelinedPool {
  /** A connection of its own until `release`; `release(true)` ends it (after an error that may have left it unusable). */
  connect(): Promise<PipelinedConnection>;
}

export interface PipelinedConnection {
  /** Sends at once, whatever is still waiting for an answer on this connection. */
  query<R>(text: string, values?: readonly unknown[]): Promise<{ rows: R[]; command: string }>;
  /** Runs `send`, whose queries then leave in one socket write (the socket corked meanwhile). */
  corked(send: () => void): void;
  release(destroy?: boolean): void;
}

export interface ReadByIdsOptions {
  /**
   * PostgreSQL: another connection to send a batch's statement on, tried first (the API-key
   * listener's, where the read is also the freshness barrier: `InvalidationFeed.readInBarrier`).
   * null, or a rejection, sends it on the pool as usual; the pool's errors are the ones callers see.
   * `name`, when given, is the statement's prepared-statement name: parsed and planned once per
   * connection.
   */
  via?: (text: string, values: unknown[], name?: string) => Promise<unknown[][]> | null;
  /**
   * PostgreSQL: batches in flight at once (default 1); the reads that arrive meanwhile wait and go
   * out together. `via`'s connection sends that many statements at once (ADR 0052).
   */
  maxBatchesInFlight?: number;
  /** Rows that carry a stored answer send only it and a few columns (`StoredAnswerRead`). */
  stored?: StoredAnswerRead;
}

/**
 * A read by id of rows that may carry their answer already rendered (ADR 0051: a final decision's
 * poll answer, migration 0029). `column` is read only when `formatColumn` holds `format` (an
 * answer in another format is no answer); then the columns not in `always` are read as null,
 * since the answer already says what they would: for the database, the row is not sent; for the
 * driver, a null costs nothing to parse, where the columns cost a string each. A row without a
 * usable answer reads every column, and `column` as null.
 */
export interface StoredAnswerRead {
  column: string;
  formatColumn: string;
  format: number;
  always: readonly string[];
}

/** The select list of `readByIds`: the columns as they are, or as StoredAnswerRead says. */
function selectList(columns: readonly string[], stored: StoredAnswerRead | undefined): string {
  if (stored === undefined) return quoted(columns);
  if (!Number.isSafeInteger(stored.format)) throw new Error(`readByIds: not an integer format: ${stored.format}`);
  // Rows are matched to their callers by id.
  if (!stored.always.includes('id')) throw new Error('readByIds: a stored answer\'s `always` must include id');
  const [answer, format] = [quoted([stored.column]), quoted([stored.formatColumn])];
  const usable = `${format} = ${stored.format} and ${answer} is not null`;
  return columns
    .map((c) => {
      const q = quoted([c]);
      if (c === stored.column) return `case when ${usable} then ${q} end as ${q}`;
      return stored.always.includes(c) ? q : `case when ${usable} then null else ${q} end as ${q}`;
    })
    .join(', ');
}

/** One row's values by id (`Storage.readByIds`), or undefined when there is no such row. */
export type ReadById = (id: string) => Promise<RowValues | undefined>;

/** `"table"` and `"a", "b"` for SQL built from our own constant names (never from input). */
function quoted(names: readonly string[]): string {
  for (const n of names) if (!/^[a-z_][a-z0-9_]*$/.test(n)) throw new Error(`not a plain SQL identifier: ${n}`);
  return names.map((n) => `"${n}"`).join(', ');
}

function keyIndexOf(columns: readonly string[]): number {
  const index = columns.indexOf('id');
  if (index < 0) throw new Error('readByIds: the columns must include id');
  return index;
}

export interface StorageOptions {
  databaseUrl: string | null;
  dataDir: string;
  /** Called when an idle pooled connection dies (database restarted); the pool recovers by itself. */
  onPoolError?: (err: Error) => void;
  poolSize?: number;
  /**
   * PostgreSQL: the server cancels a statement that runs longer (`statement_timeout`), and a query
   * with no answer `SILENCE_GRACE_MS` after that ends its connection (see wrapQueries).
   * 0 or unset: neither (`cds migrate`, whose index builds may take long).
   */
  statementTimeoutMs?: number;
  /** A connection gave no answer within the statement time-out plus the grace and was ended. */
  onSilentConnection?: (silentMs: number) => void;
  /** SQLite: checkpoint the WAL in a worker thread instead of on commits (default true). */
  backgroundCheckpoints?: boolean;
  /** A background checkpoint failed (logged; the next one retries). */
  onCheckpointError?: (err: Error) => void;
  /** SQLite: how the WAL is made durable (default fdatasync; tests hold it to see what waits). */
  syncWal?: () => Promise<void>;
  /**
   * SQLite in WAL mode: have a writer thread for planned units (a create's writes; default true;
   * `CDS_SQLITE_WRITER_THREAD=off` turns it off). Without it they run on the event loop as every
   * other write does; with it, the transaction runner decides when (group-commit.ts `offload`).
   * The same switch gives the delivery worker's cycles their thread (`offLoopWriter`), or not.
   */
  writerThread?: boolean;
  /** SQLite: the background checkpointer's interval, WAL limit and report (tests). */
  checkpoints?: Pick<CheckpointerOptions, 'intervalMs' | 'restartAboveBytes' | 'truncateAboveBytes' | 'onCheckpoint'>;
}

pg.types.setTypeParser(20, (value) => Number(value));

/**
 * The SQLite writer connection's settings; returns whether the WAL is on (then the writer commits
 * at NORMAL and wal-sync.ts makes each commit durable, else every COMMIT syncs as FULL). Exported
 * for bench/writer-thread-bound.mjs, whose replay connections must write as this writer does.
 * The background checkpointer's `wal_autocheckpoint = 0` is set by openStorage, which runs it.
 */
export function configureSqliteWriter(sqlite: SqliteDatabase.Database): boolean {
  const wal = sqlite.pragma('journal_mode = WAL', { simple: true }) === 'wal';
  for (const pragma of sqliteWriterPragmas(wal)) sqlite.pragma(pragma);
  return wal;
}

/** The settings of a write connection, once the journal mode is known (also the writer thread's). */
function sqliteWriterPragmas(wal: boolean): string[] {
  return [
    wal ? 'synchronous = NORMAL' : 'synchronous = FULL',
    'busy_timeout = 5000',
    'foreign_keys = ON',
    `journal_size_limit = ${CHECKPOINT_DEFAULTS.truncateAboveBytes}`,
    // Every unit of a group commit runs in a savepoint, and SQLite keeps the pre-image of each page
    // a savepoint first changes in a statement journal, a temporary file once it passes 64 KiB:
    // a batch then created, wrote (about 27 writes per create) and deleted a file in /var/tmp on
    // the event loop. In memory instead (it only serves ROLLBACK TO within the open transaction;
    // durability is the WAL's). The writer's other temporary structures (sorts of migrations and
    // purges) are in memory too.
    'temp_store = MEMORY',
  ];
}

export function openStorage(options: StorageOptions): Storage {
  if (options.databaseUrl === null) {
    mkdirSync(options.dataDir, { recursive: true });
    const file = path.join(options.dataDir, 'cds.sqlite');
    const sqlite = new SqliteDatabase(file);
    const wal = configureSqliteWriter(sqlite);
    const background = options.backgroundCheckpoints !== false;
    // WAL mode: planned units (a create) run in a thread of their own (sqlite-writer-thread.ts),
    // set up as this writer is; other writes stay on this connection.
    // The thread syncs after its own COMMITs and tells the WAL sync, which lets the responses
    // that waited for them go (both declared before either is made: each refers to the other).
    let walSync: WalSync | null = null;
    const writerThread =
      wal && options.writerThread !== false
        ? createSqliteWriterThread(file, [...sqliteWriterPragmas(true), ...(background ? ['wal_autocheckpoint = 0'] : [])], {
            ...(options.syncWal ? { sync: options.syncWal } : {}),
            onSynced: (ended, error) => walSync?.noteElsewhere(ended, error),
          })
        : null;
    // The delivery worker's cycles, off the event loop too, on a write connection set up the same way.
    const offLoopWriter =
      wal && options.writerThread !== false ? createOffLoopWriter(file, [...sqliteWriterPragmas(true), ...(background ? ['wal_autocheckpoint = 0'] : [])]) : null;
    // WAL mode: commits are made durable off the event loop by wal-sync.ts (the writer's own
    // COMMIT then only writes the frames). Where WAL is impossible (some network file systems)
    // every COMMIT syncs, on the event loop, as SQLite does with FULL.
    walSync = wal
      ? createWalSync({
          file,
          ...(options.syncWal ? { sync: options.syncWal } : {}),
          ...(writerThread
            ? {
                externalCommits: {
                  counters: writerThread.counters,
                  begun: COMMITS_BEGUN,
                  ended: COMMITS_ENDED,
                  durable: COMMITS_DURABLE,
                  syncsItself: writerThread.syncsItself,
                },
              }
            : {}),
        })
      : null;
    const db = new Kysely<Database>({ dialect: sqliteDialect(sqlite, walSync) });
    let checkpointer: Checkpointer | null = null;
    if (background) {
      sqlite.pragma('wal_autocheckpoint = 0');
      checkpointer = startCheckpointer({
        ...options.checkpoints,
        file,
        holdWriter: () => holdConnection(db),
        onError: options.onCheckpointError,
        onStopped: () => {
          if (sqlite.open) sqlite.pragma('wal_autocheckpoint = 1000');
          writerThread?.pragma('wal_autocheckpoint = 1000');
          offLoopWriter?.pragma('wal_autocheckpoint = 1000');
        },
      });
    }
    const reader = new SqliteDatabase(file);
    reader.pragma('busy_timeout = 5000');
    const readDb = new Kysely<Database>({ dialect: sqliteDialect(reader, null) });
    const analyticsDb = new Kysely<Database>({ dialect: offLoopSqliteDialect(createOffLoopReader(file)) });
    return {
      offLoopWriter,
      db,
      readDb,
      analyticsDb,
      walSync,
      dialect: 'sqlite',
      location: file,
      readByIds: (table, columns, readOptions) => {
        const text = `select ${selectList(columns, readOptions?.stored)} from ${quoted([table])} where "id" in (select value from json_each(?))`;
        // Prepared on first use (the tables exist only after migrations) and kept out of the
        // shared statement cache: raw mode is a property of the statement object.
        let statement: SqliteDatabase.Statement | null = null;
        return batchedRead({
          keyIndex: keyIndexOf(columns),
          fetch: (ids) => {
            statement ??= reader.prepare(text).raw(true);
            return statement.all(JSON.stringify(ids)) as RowValues[];
          },
        });
      },
      pipelined: null,
      writerThread,
      close: async () => {
        await checkpointer?.stop();
        await writerThread?.close();
        await offLoopWriter?.close();
        await analyticsDb.destroy();
        await readDb.destroy();
        await db.destroy();
        await walSync?.close();
      },
    };
  }
  const statementTimeoutMs = options.statementTimeoutMs ?? 0;
  const silence = statementTimeoutMs > 0 ? { afterMs: statementTimeoutMs + SILENCE_GRACE_MS, onSilent: options.onSilentConnection } : null;
  const newPool = (max: number, pipeline: boolean): pg.Pool => {
    const created = new pg.Pool({
      connectionString: options.databaseUrl!,
      max,
      connectionTimeoutMillis: 2_000,
      idleTimeoutMillis: 30_000,
      // A statement that cannot get its locks in time fails instead of queueing forever; one that runs
      // too long is cancelled by the server (a 503: isDatabaseUnavailable).
      options: `-c lock_timeout=10000${statementTimeoutMs > 0 ? ` -c statement_timeout=${statementTimeoutMs}` : ''}`,
      ...(pipeline ? { pipeline: true } : {}),
    });
    created.on('error', (err) => options.onPoolError?.(err));
    // A connection that dies mid-query emits 'error' on its checked-out client (the query is rejected too, and becomes a 503); unheard, that event would crash the process.
    created.on('connect', (client) => client.on('error', () => undefined));
    created.on('connect', (client) => wrapQueries(client, silence));
    return created;
  };
  const pool = newPool(options.poolSize ?? 10, false);
  // Opened on first use (only delivery workers use it); a few connections, as cycles run one at a time per worker.
  let pipelinePool: pg.Pool | null = null;
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const url = new URL(options.databaseUrl);
  return {
    db,
    readDb: db,
    analyticsDb: db,
    // PostgreSQL's COMMIT waits for its WAL flush in the server, not on our event loop.
    walSync: null,
    dialect: 'postgres',
    location: `${url.hostname}:${url.port || 5432}${url.pathname}`,
    readByIds: (table, columns, readOptions) => {
      // Registered, so it runs prepared on the pool (wrapQueries) and, by its name, on `via`'s
      // connection: under load it is sent hundreds of times a second.
      const text = preparedOnPostgres(`select ${selectList(columns, readOptions?.stored)} from ${quoted([table])} where "id" = any($1::text[])`);
      const name = preparedNameOf(text);
      const via = readOptions?.via;
      return batchedRead({
        keyIndex: keyIndexOf(columns),
        fetch: async (ids) => {
          const elsewhere = via?.(text, [ids], name);
          if (elsewhere) {
            try {
              return await elsewhere;
            } catch {
              // That connection was lost or refused the statement: the pool answers (or fails) instead.
            }
          }
          return (await pool.query<RowValues>({ text, values: [ids], rowMode: 'array' })).rows;
        },
        // As many statements as `via` sends at once (one by default): under load the next turns'
        // reads gather behind them (batched-read.ts).
        maxBatchesInFlight: readOptions?.maxBatchesInFlight ?? 1,
      });
    },
    writerThread: null,
    offLoopWriter: null,
    pipelined: {
      connect: async () => {
        // The delivery worker's cycles (one at a time per worker) and the group commit's pipelined
        // batches (up to GROUP_COMMIT_DEFAULTS.maxBatches at once, ADR 0037).
        pipelinePool ??= newPool(8, true);
        const client = await pipelinePool.connect();
        // pg corks the socket around each query's messages; a cork around several holds them all
        // until the last, so a batch's statements cost one write (and wake the backend once).
        const stream = (client as unknown as { connection?: { stream?: { cork?(): void; uncork?(): void } } }).connection?.stream;
        return {
          query: <R>(text: string, values?: readonly unknown[]) =>
            (client.query as (text: string, values?: readonly unknown[]) => Promise<pg.QueryResult>)(text, values) as Promise<{ rows: R[]; command: string }>,
          corked: (send: () => void) => {
            stream?.cork?.();
            try {
              send();
            } finally {
              stream?.uncork?.();
            }
          },
          release: (destroy?: boolean) => client.release(destroy === true),
        };
      },
    },
    close: async () => {
      await db.destroy();
      await pipelinePool?.end();
    },
  };
}

/**
 * Takes `db`'s connection the way any transaction does (after the one in progress; later ones queue
 * behind) and resolves with the function that gives it back. On SQLite that holds the writer
 * without blocking the event loop (wal-checkpointer.ts starts the WAL over under it).
 */
function holdConnection(db: Kysely<Database>): Promise<() => void> {
  return new Promise((resolve, reject) => {
    db.connection()
      .execute(() => new Promise<void>((release) => resolve(release)))
      .catch(reject);
  });
}

/** How long past its statement time-out a query may go without any answer before its connection counts as gone. */
export const SILENCE_GRACE_MS = 1_000;

/**
 * Every query of a pooled connection goes through this wrapper, for two reasons.
 *
 * Prepared statements. Kysely's PostgreSQL driver sends every statement unnamed (parsed and
 * planned on each execution). A text registered by db/statements.ts (the hot path's fixed
 * statements), sent as text and values or in pg's object form, goes out as a named prepared
 * statement instead: pg parses it once per connection and then only binds and executes.
 *
 * Silent connections (`silence`, when a statement time-out is set). A network partition (or a
 * failover that leaves the old address silent) keeps the TCP connection open while no byte moves.
 * A query sent on it would wait until TCP gives up, about a quarter of an hour, and every request
 * that drew that connection from the pool with it; nothing in the protocol notices. The server
 * cancels a slow statement itself at the statement time-out and says so, so silence a grace period
 * after that means nobody is listening. Destroying the socket fails the query the way a dropped
 * connection does ("Connection terminated", a 503 with Retry-After for the request), and the pool
 * drops the client (no longer queryable) and opens a new connection for the next one, which works
 * again once the network does.
 */
function wrapQueries(client: pg.PoolClient, silence: { afterMs: number; onSilent: ((silentMs: number) => void) | undefined } | null): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  const send = (text: unknown, values?: unknown, callback?: unknown) => {
    if (typeof text === 'string') {
      const name = Array.isArray(values) ? preparedNameOf(text) : undefined;
      return name === undefined ? query(text, values, callback) : query({ name, text, values }, callback);
    }
    // The object form (`{ text, values, rowMode }`, as `readByIds` sends): named the same way.
    const config = text as { text?: unknown; name?: unknown } | null;
    const name = config !== null && typeof config === 'object' && config.name === undefined && typeof config.text === 'string' ? preparedNameOf(config.text) : undefined;
    return query(name === undefined ? text : Object.assign({}, config, { name }), values, callback);
  };
  if (silence === null) {
    (client as { query: unknown }).query = send;
    return;
  }
  const end = () => {
    silence.onSilent?.(silence.afterMs);
    (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
  };
  (client as { query: unknown }).query = (...args: unknown[]) => {
    const timer = setTimeout(end, silence.afterMs);
    timer.unref(); // the socket, not this timer, is what keeps a process waiting for an answer
    const last = args.length - 1;
    const callback = args[last];
    try {
      if (typeof callback === 'function') {
        // Callback style (pg-pool's pool.query): the answer is the callback.
        args[last] = (...results: unknown[]) => {
          clearTimeout(timer);
          return (callback as (...a: unknown[]) => unknown)(...results);
        };
        return send(...(args as [unknown, unknown?, unknown?]));
      }
      const result = send(...(args as [unknown, unknown?, unknown?]));
      if (result instanceof Promise) result.then(() => clearTimeout(timer), () => clearTimeout(timer));
      else clearTimeout(timer); // a submittable (cursor) keeps its own pace
      return result;
    } catch (err) {
      clearTimeout(timer); // refused before anything was sent
      throw err;
    }
  };
}

/**
 * Kysely's SQLite dialect over `database`. For the writer, when the WAL is synced off the event
 * loop (wal-sync.ts), it keeps the rule that a write's caller goes on only once the write is
 * durable: each statement is reported to `walSync` (which counts the write transactions), and a
 * statement that ended a write transaction (an autocommit write, a COMMIT) leaves its position
 * owed. Kysely awaits `releaseConnection` before it returns a result, so that is where the wait
 * happens, after the connection is free: a write waiting for the disk holds up neither the group
 * commit nor anyone else's statement. Statements Kysely runs on a connection it already holds
 * (inside `transaction()` or `connection()`) are covered by the release at the end.
 * `COMMIT_WITHOUT_WAITING` and `COMMIT_BOOKKEEPING` owe nothing: their callers wait themselves (or,
 * for bookkeeping, need not). Reads need nothing here: what a response shows is covered when it is
 * sent (http/durable-responses.ts).
 */
function sqliteDialect(database: SqliteDatabase.Database, walSync: WalSync | null): SqliteDialect {
  const statements = withStatementCache(database);
  const dialect = new SqliteDialect({ database: statements.database });
  if (walSync === null) return dialect;
  const wal = walSync;
  // The WAL position the connection's current holder must see durable before its result is returned.
  let owed: number | null = null;
  const createDriver = dialect.createDriver.bind(dialect);
  dialect.createDriver = () => {
    const driver = createDriver();
    const acquire = driver.acquireConnection.bind(driver);
    const release = driver.releaseConnection.bind(driver);
    let wrapped: DatabaseConnection | null = null; // SQLite's driver has one connection
    driver.acquireConnection = async () => {
      const connection = await acquire();
      wrapped ??= durableConnection(connection);
      return wrapped;
    };
    driver.releaseConnection = async (connection) => {
      const position = owed;
      owed = null; // taken before the release: the next holder may run as soon as it is free
      await release(connection);
      const durable = position === null ? null : wal.whenDurable(position);
      if (durable) await durable;
    };
    return driver;
  };
  return dialect;

  function durableConnection(inner: DatabaseConnection): DatabaseConnection {
    return {
      async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
        try {
          return await inner.executeQuery<R>(query);
        } finally {
          // A statement that failed to prepare is not cached, and wrote nothing. SQLite calls
          // `begin immediate` a write (it takes the write lock), but it writes nothing: an empty
          // transaction (the delivery worker's idle claim) needs no sync.
          const writes = statements.cached(query.sql)?.readonly === false && !query.sql.startsWith('begin');
          const bookkeeping = query.sql === COMMIT_BOOKKEEPING;
          const callerWaits = bookkeeping || query.sql === COMMIT_WITHOUT_WAITING;
          if (wal.noteStatement(!writes, database.inTransaction, bookkeeping) && !callerWaits) owed = wal.position();
        }
      },
      streamQuery: (query, chunkSize) => inner.streamQuery(query, chunkSize),
    };
  }
}

/**
 * Kysely's SQLite driver prepares every statement each time it runs it; preparing is a real cost
 * (parsing and planning the SQL) on every request. Our queries are built from a few shapes, so the
 * prepared statements are kept by SQL text (bounded; the oldest go first) and reused: a better-sqlite3
 * statement runs to completion synchronously, so one statement is never used by two calls at once.
 */
function withStatementCache(
  database: SqliteDatabase.Database,
  limit = 1_000,
): { database: SqliteDatabase.Database; cached(source: string): SqliteDatabase.Statement | undefined } {
  const cache = new Map<string, SqliteDatabase.Statement>();
  const proxy = new Proxy(database, {
    get(target, property, receiver) {
      if (property !== 'prepare') return Reflect.get(target, property, receiver) as unknown;
      return (source: string) => {
        let statement = cache.get(source);
        if (statement === undefined) {
          statement = target.prepare(source);
          if (cache.size >= limit) cache.delete(cache.keys().next().value!);
          cache.set(source, statement);
        }
        return statement;
      };
    },
  });
  return { database: proxy, cached: (source) => cache.get(source) };
}

/** What `migrateToLatest` did: the migrations it applied, and those of a newer release it found. */
export interface MigrationOutcome {
  applied: string[];
  /** Migrations the database holds that this build does not know (a newer release ran them); none: []. */
  newer: string[];
}

/** A database whose migrations this build cannot account for (not a newer release's: see migrateToLatest). */
export class UnknownSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnknownSchemaError';
  }
}

/**
 * Apply every pending migration; safe to run from several processes at once (the migrator locks).
 *
 * A database a newer release has migrated (it holds every migration of this build, and after them
 * ones this build does not know) is left as it is, and `newer` names those: the previous release
 * runs on the newer schema during a rolling deploy and after a rollback, which is why a release's
 * migrations must keep the previous release working (docs/deployment.md). Without this, a node of
 * the previous release that restarted during a deploy, or the whole previous release rolled back
 * to, would stop at start on Kysely's "previously executed migration … is missing". Anything else
 * unknown (a migration this build does not know between its own, or one of its own missing beside
 * one it does not know) is an UnknownSchemaError naming them: that database is not a newer
 * release's.
 */
export async function migrateToLatest(db: Kysely<Database>): Promise<MigrationOutcome> {
  const known = Object.keys(migrations).sort();
  const executed = await executedMigrations(db);
  const unknown = executed.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    const missing = known.filter((name) => !executed.includes(name));
    const last = known[known.length - 1] ?? '';
    if (missing.length === 0 && unknown.every((name) => name > last)) return { applied: [], newer: unknown };
    throw new UnknownSchemaError(
      `this database's migrations are not a newer release's of this build's: it holds ${unknown.join(', ')}, which this build does not know` +
        (missing.length > 0 ? `, and lacks ${missing.join(', ')}` : `, before this build's last (${last})`) +
        '. Run the release that migrated it.',
    );
  }
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return { applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName), newer: [] };
}

/** Names of the migrations the database has run (Kysely's table), oldest first; none on a new database. */
async function executedMigrations(db: Kysely<Database>): Promise<string[]> {
  try {
    const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db);
    return rows.map((r) => r.name);
  } catch (err) {
    // No table yet (a new database): the migrator creates it.
    const message = err instanceof Error ? err.message : String(err);
    if ((err as { code?: unknown }).code === '42P01' || /no such table/i.test(message)) return [];
    throw err;
  }
}

export async function pingDatabase(db: Kysely<Database>): Promise<void> {
  await sql`select 1`.execute(db);
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'EPIPE', 'EAI_AGAIN',
  '57P01', '57P02', '57P03', // admin shutdown, crash shutdown, cannot connect now
  '08000', '08001', '08003', '08004', '08006', // connection exceptions
  '53300', // too many connections
  '57014', // statement cancelled: ran past the statement time-out (statementTimeoutMs)
  'SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_IOERR', 'SQLITE_FULL',
]);

/**
 * True when an error means "the database cannot serve us right now" (answer 503 with Retry-After)
 * rather than a bug (answer 500).
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_IOERR'))) return true;
  const message = (err as { message?: unknown }).message;
  return typeof message === 'string' && /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connect ECONNREFUSED/i.test(message);
}
