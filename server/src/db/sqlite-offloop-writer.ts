/**
 * A SQLite write connection in a worker thread, driven by lists of statements (ADR 0048): the
 * webhook delivery worker's cycles (`Storage.offLoopWriter`).
 *
 * How it works. better-sqlite3 runs every statement on the thread that calls it. A delivery
 * cycle's statements (its results' next steps and attempt rows, the listing of due endpoints, the
 * claims, the commit: about 70 µs of SQLite per delivery) ran on the event loop that also sends
 * the deliveries, about a third of its time under load (docs/performance.md, "thirty-third
 * session"). Here they run on a connection of this thread's own, while the event loop goes on
 * sending.
 *
 * - The caller posts a list of statements and gets one answer for the list: per statement its rows
 *   (a statement that returns data: a SELECT, or a write with RETURNING) or its change count. So a
 *   cycle costs a message each way per list, not per statement, and the caller decides which
 *   statements travel together (those whose parameters do not depend on another's answer).
 * - One dependency is carried inside a list: a statement marked `collectIds` adds the `id` of each
 *   row it returns to the list's collected ids, and one marked `withCollectedIds` gets them as a
 *   JSON array, appended as its last parameter (a claim's UPDATE ... RETURNING id, then the read of
 *   what the claimed deliveries' sends need, in the same trip).
 * - A statement that fails ends the list, which is answered with its error alone (its message and
 *   SQLite's code, so `isDatabaseUnavailable` still sees a busy or failing disk).
 *   Transactions are the caller's (`begin immediate` ... `commit` as statements): after a failure
 *   it sends `rollback`.
 * - Mutual exclusion with the process's other writers is the caller's too: it holds the main write
 *   connection (Kysely's `db.connection()`) from its BEGIN to its COMMIT, so no other write of the
 *   process (a batch of the API, the group-commit writer thread's session, the checkpointer's hold)
 *   meets its transaction, exactly as when the cycle ran on that connection. The commit is counted
 *   on the WAL sync by the caller (wal-sync.ts `noteStatement`), since no other writer ran between.
 * - Set up as the main writer (`synchronous = NORMAL`, the same pragmas), so its commits are made
 *   durable by wal-sync.ts's syncs of the WAL file, like the main writer's.
 *
 * The worker uses it only while the event loop is saturated (the writer thread's rule, ADR 0030):
 * below that a list's round trip only makes a cycle, and its hold on the writer connection, longer.
 *
 * The thread starts on the first list (start-up pays nothing for it), does not keep the process
 * alive while nothing is out, and ends with the storage. A thread that dies fails what it owed;
 * SQLite rolls back what its connection left uncommitted when the thread's environment closes it,
 * and the next list starts another thread.
 */
import { createRequire } from 'node:module';
import { createRequestThread } from './request-thread.js';
import { preparedStatementsSource } from './sqlite-thread-source.js';

export interface OffLoopStatement {
  sql: string;
  parameters: readonly unknown[];
  /** Add the `id` of each returned row to the list's collected ids. */
  collectIds?: boolean;
  /** Append the list's collected ids (a JSON array) as the last parameter. */
  withCollectedIds?: boolean;
}

/** A statement's answer: its rows when it returns data, else how many rows it changed. */
export type OffLoopResult = { rows: unknown[]; changes?: undefined } | { rows?: undefined; changes: number };

/**
 * A list's answer: each statement's, and whether any of them may have written (one that is not
 * read-only by SQLite's own judgement, `sqlite3_stmt_readonly`, other than a BEGIN: COMMIT and
 * SELECT are read-only, an UPDATE is not even when it changes no row), as database.ts counts the
 * writer connection's writes for the WAL sync.
 */
export interface OffLoopAnswer {
  results: OffLoopResult[];
  wrote: boolean;
}

export interface OffLoopWriter {
  /** Runs the statements in order in the thread (started on the first call); one answer for all. */
  run(statements: readonly OffLoopStatement[]): Promise<OffLoopAnswer>;
  /** Sets a pragma on the thread's connection, now if it runs and whenever it starts again. */
  pragma(text: string): void;
  /** Whether the thread is running (it starts on the first list). */
  started(): boolean;
  close(): Promise<void>;
}

// Plain CommonJS evaluated in the worker, as sqlite-offloop-reader.ts does: no build step of its
// own, the same in tests (TypeScript sources) and in server/dist. better-sqlite3 by its resolved path.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
for (const pragma of workerData.pragmas) db.pragma(pragma);
${preparedStatementsSource(128)}
parentPort.on('message', (message) => {
  if (message.op === 'close') {
    if (db.inTransaction) db.prepare('rollback').run();
    db.close();
    parentPort.close();
    return;
  }
  if (message.op === 'pragma') {
    db.pragma(message.text);
    return;
  }
  const results = [];
  const collected = [];
  let wrote = false;
  const list = message.statements;
  for (let i = 0; i < list.length; i++) {
    const s = list[i];
    try {
      const statement = prepared(s.sql);
      // SQLite calls BEGIN IMMEDIATE a write (it takes the write lock), but it writes nothing, as
      // database.ts also reckons.
      if (!statement.readonly && !s.sql.startsWith('begin')) wrote = true;
      const parameters = s.withCollectedIds ? [...s.parameters, JSON.stringify(collected)] : s.parameters;
      if (statement.reader) {
        const rows = statement.all(...parameters);
        if (s.collectIds) for (const row of rows) collected.push(row.id);
        results.push({ rows });
      } else {
        results.push({ changes: statement.run(...parameters).changes });
      }
    } catch (err) {
      parentPort.postMessage({ id: message.id, error: { message: String(err && err.message), code: err && err.code } });
      return;
    }
  }
  parentPort.postMessage({ id: message.id, results, wrote });
});
`;

export function createOffLoopWriter(file: string, initialPragmas: readonly string[]): OffLoopWriter {
  const pragmas = [...initialPragmas];
  const thread = createRequestThread({
    source: WORKER_SOURCE,
    workerData: () => ({ driver: createRequire(import.meta.url).resolve('better-sqlite3'), file, pragmas: [...pragmas] }),
    closeMessage: { op: 'close' },
    stopped: () => Object.assign(new Error('the off-loop writer stopped'), { code: 'SQLITE_IOERR_OFFLOOP_WRITER' }),
    closed: () => Object.assign(new Error('the off-loop writer is closed'), { code: 'SQLITE_IOERR_OFFLOOP_WRITER' }),
  });
  return {
    run: async (statements) => {
      const { results, wrote } = await thread.request<OffLoopAnswer>({ op: 'run', statements });
      return { results, wrote };
    },
    pragma(text) {
      pragmas.push(text);
      thread.notify({ op: 'pragma', text });
    },
    started: () => thread.started(),
    close: () => thread.close(),
  };
}
