/**
 * Reads that scan much, on SQLite, in a worker thread (ADR 0029): `Storage.analyticsDb`.
 *
 * How it works. better-sqlite3 runs a statement synchronously, so on SQLite every read runs on the
 * event loop of the process that also answers the API. For the reads of the request path (a key,
 * a decision by id) that is the fastest way; for a read that aggregates a period of a busy lender
 * (the portal's dashboard: every decision and delivery of up to 31 days) it stalls every request
 * of every lender for as long as it runs: about 220 ms at 100,000 decisions a day for one day's
 * view, seconds for a month's (docs/performance.md, "eleventh session"). Those reads go to a worker thread
 * instead, which opens the database file with a connection of its own, read-only (`query_only`),
 * and runs the statements posted to it one at a time: the main thread posts `{ id, sql,
 * parameters }`, the worker prepares the text (kept by text), runs it and posts back `{ id, rows }`
 * or `{ id, error }` (message and SQLite's code, so `isDatabaseUnavailable` still sees a busy or
 * failing disk). A Kysely dialect wraps it, so a service builds these queries as any other.
 *
 * In WAL mode a reader never waits for the writer and sees every commit made before its statement
 * began, as the main thread's reader does. The thread starts on the first query (start-up pays
 * nothing for it), does not keep the process alive while idle, and ends with the storage. Only
 * reading statements run (SQLite says which are: `Statement.reader`); there are no transactions.
 * Each query costs a message each way (tens of microseconds), so this is for reads whose work is
 * far larger than that, never for the request path.
 */
import { createRequire } from 'node:module';
import { createRequestThread } from './request-thread.js';
import { preparedStatementsSource } from './sqlite-thread-source.js';
import {
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
} from 'kysely';

// Plain CommonJS evaluated in the worker, as wal-checkpointer.ts does: no build step of its own,
// the same in tests (TypeScript sources) and in server/dist. better-sqlite3 by its resolved path.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma('query_only = 1');
// Sorts and groups of a scan in memory, as the main thread's connections do.
db.pragma('temp_store = MEMORY');
${preparedStatementsSource(200)}
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  const { id, sql, parameters } = message;
  try {
    const statement = prepared(sql);
    if (!statement.reader) throw Object.assign(new Error('the off-loop reader runs reading statements only'), { code: 'CDS_NOT_A_READ' });
    parentPort.postMessage({ id, rows: statement.all(...parameters) });
  } catch (err) {
    parentPort.postMessage({ id, error: { message: String(err && err.message), code: err && err.code } });
  }
});
`;

export interface OffLoopReader {
  /** Runs one reading statement in the worker thread (started on the first call). */
  all<R>(sql: string, parameters: readonly unknown[]): Promise<R[]>;
  /** Whether the thread is running (it starts on the first query). */
  started(): boolean;
  close(): Promise<void>;
}

export function createOffLoopReader(file: string): OffLoopReader {
  const thread = createRequestThread({
    source: WORKER_SOURCE,
    workerData: () => ({ driver: createRequire(import.meta.url).resolve('better-sqlite3'), file }),
    closeMessage: 'close',
    stopped: () => Object.assign(new Error('the off-loop reader stopped'), { code: 'SQLITE_IOERR_OFFLOOP_READER' }),
    closed: () => new Error('the off-loop reader is closed'),
  });
  return {
    all: async <R>(sql: string, parameters: readonly unknown[]) => (await thread.request<{ rows: R[] }>({ sql, parameters })).rows,
    started: () => thread.started(),
    close: () => thread.close(),
  };
}

/** A Kysely dialect over an OffLoopReader: SQLite's SQL, each query run in the reader's thread. */
export function offLoopSqliteDialect(reader: OffLoopReader): Dialect {
  const connection: DatabaseConnection = {
    async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
      return { rows: await reader.all<R>(query.sql, query.parameters) };
    },
    // eslint-disable-next-line require-yield -- a generator that only refuses
    async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
      throw new Error('the off-loop reader does not stream');
    },
  };
  const noTransactions = () => Promise.reject(new Error('the off-loop reader runs no transactions'));
  const driver: Driver = {
    init: async () => undefined,
    // One stateless connection shared by every caller: the thread runs their statements in turn.
    acquireConnection: async () => connection,
    beginTransaction: noTransactions,
    commitTransaction: noTransactions,
    rollbackTransaction: noTransactions,
    releaseConnection: async () => undefined,
    destroy: () => reader.close(),
  };
  return {
    createAdapter: (): DialectAdapter => new SqliteAdapter(),
    createDriver: () => driver,
    createQueryCompiler: (): QueryCompiler => new SqliteQueryCompiler(),
    createIntrospector: (db: Kysely<unknown>): DatabaseIntrospector => new SqliteIntrospector(db),
  };
}
