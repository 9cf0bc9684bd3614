/**
 * Planned write units run in a worker thread (SQLite; ADR 0030).
 *
 * How it works. better-sqlite3 runs every statement on the thread that calls it, so on SQLite a
 * create's statements and its batch's COMMIT ran on the event loop that also parses, decides and
 * answers every request: about 160 µs of a create's 490 (docs/performance.md, "thirteenth
 * session"). A unit whose statements are all known before it runs (a plan, group-commit.ts
 * `Planned`: SQL text, parameters, and what each statement must find) can run anywhere, so while
 * the event loop is saturated the group-commit runner posts such units here, and this thread runs
 * them on a write connection of its own while the event loop goes on with the next requests.
 *
 * - One batch at a time, as on the main connection: the runner holds the main write connection
 *   (Kysely's, through `db.connection()`) for as long as a thread batch is open, so no other
 *   write of the process (a transaction through `db`, the delivery worker, the checkpointer's
 *   hold) can meet this thread's transaction; they queue in Kysely as they would behind any batch.
 * - Messages, answered in order: `run` (open the transaction if it is not, then run each unit in
 *   the savepoint `unit`: a unit whose statement fails, or finds other than it must, is rolled
 *   back to its savepoint alone and answered with why; its batch-mates go on), `commit` (COMMIT,
 *   or ROLLBACK if that fails), `rollback`, `close`.
 * - Expectations: `row` (the statement must return a row: the idempotency claim, whose insert
 *   returns nothing when a live record holds the key), `equals` (the statement's single value
 *   must be this text: the fan-out's guard that the webhook endpoints are those the plan was made
 *   for). A unit that fails one is answered `{ failed: <the expectation's failure> }`.
 * - Durability: the connection commits with `synchronous = NORMAL` like the main writer, and
 *   wal-sync.ts makes the commit durable. Because a reader may see this thread's commit before
 *   the main thread hears of it, the thread counts in shared memory: `begun` moves before each
 *   COMMIT, `ended` after it (whether it worked or not). The WAL sync treats `begun` as commits
 *   a response could show and `ended` as commits a sync it starts covers (wal-sync.ts
 *   `externalCommits`), so no response shows a commit that a sync has not covered.
 * - Failure: a thread that dies fails what it owed; the runner fails that batch's units and the
 *   next planned batch starts another thread. SQLite rolls back whatever it left uncommitted.
 *
 * The thread starts on the first planned batch, so start-up pays nothing for it, and ends after
 * 30 s without work (`WRITER_THREAD_IDLE_MS`), so a server that is not saturated keeps none.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** What a planned statement must find, and what its unit fails with otherwise. */
export type Expectation = { kind: 'row'; failure: string } | { kind: 'equals'; value: string; failure: string };

export interface PlannedStatement {
  sql: string;
  parameters: readonly unknown[];
  expect?: Expectation;
}

/**
 * A compiled query as a planned statement: only its text and values, which is all the thread needs
 * and all a message should carry (Kysely's compiled queries also hold their whole operation tree).
 */
export function plannedStatement(query: { sql: string; parameters: readonly unknown[] }, expect?: Expectation): PlannedStatement {
  return expect ? { sql: query.sql, parameters: query.parameters, expect } : { sql: query.sql, parameters: query.parameters };
}

/** A unit's outcome: done, failed an expectation (the failure's text), or failed with an error (SQLite's code kept). */
export type PlannedOutcome = { ok: true } | { failed: string } | { error: Error };

/** An error as the thread sends it (message and SQLite's code) back into an Error, for `isDatabaseUnavailable` and callers. */
type ThreadError = { message: string; code?: string };
const errorFrom = (e: ThreadError): Error => Object.assign(new Error(e.message), e.code ? { code: e.code } : {});

/** Slots of the shared counters (Int32Array over a SharedArrayBuffer). */
export const COMMITS_BEGUN = 0;
export const COMMITS_ENDED = 1;

// Plain CommonJS evaluated in the worker, as sqlite-offloop-reader.ts and wal-checkpointer.ts do:
// no build step of its own, the same in tests (TypeScript sources) and in server/dist.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
for (const pragma of workerData.pragmas) db.pragma(pragma);
const counters = new Int32Array(workerData.counters);
const statements = new Map();
const exec = (text) => prepared(text).run();
function prepared(text) {
  let statement = statements.get(text);
  if (statement === undefined) {
    statement = db.prepare(text);
    if (statements.size >= 256) statements.delete(statements.keys().next().value);
    statements.set(text, statement);
  }
  return statement;
}
const errorOf = (err) => ({ message: String(err && err.message), code: err && err.code });
function runUnit(unit) {
  exec('savepoint unit');
  let outcome = { ok: true };
  try {
    for (const s of unit) {
      const statement = prepared(s.sql);
      if (s.expect === undefined) {
        if (statement.reader) statement.all(...s.parameters);
        else statement.run(...s.parameters);
        continue;
      }
      if (s.expect.kind === 'row') {
        if (statement.get(...s.parameters) === undefined) { outcome = { failed: s.expect.failure }; break; }
      } else {
        const row = statement.get(...s.parameters);
        if (row === undefined || Object.values(row)[0] !== s.expect.value) { outcome = { failed: s.expect.failure }; break; }
      }
    }
  } catch (err) {
    outcome = { error: errorOf(err) };
  }
  if (outcome.ok) {
    exec('release unit');
  } else {
    // If the savepoint cannot be restored SQLite undid the transaction itself (a full disk, an
    // I/O error): the batch is over, and the runner fails it.
    exec('rollback to unit');
    exec('release unit');
  }
  return outcome;
}
// After a failure that lost the transaction, the batch's later messages are refused until its
// commit or rollback: units posted behind the failure must not run in a new transaction.
let lost = null;
parentPort.on('message', (message) => {
  if (message.op === 'close') {
    if (db.inTransaction) db.exec('rollback');
    db.close();
    parentPort.close();
    return;
  }
  if (message.op === 'pragma') {
    db.pragma(message.text);
    parentPort.postMessage({ done: true });
    return;
  }
  if (message.op === 'rollback') {
    lost = null;
    if (db.inTransaction) db.exec('rollback');
    parentPort.postMessage({ done: true });
    return;
  }
  if (lost !== null) {
    const error = lost;
    if (message.op === 'commit') lost = null;
    parentPort.postMessage({ error });
    return;
  }
  try {
    if (message.op === 'run') {
      if (!db.inTransaction) exec('begin immediate');
      const outcomes = [];
      for (const unit of message.units) outcomes.push(runUnit(unit));
      parentPort.postMessage({ outcomes });
    } else if (message.op === 'commit') {
      Atomics.add(counters, ${COMMITS_BEGUN}, 1);
      try {
        if (db.inTransaction) exec('commit');
      } finally {
        Atomics.add(counters, ${COMMITS_ENDED}, 1);
      }
      parentPort.postMessage({ done: true });
    }
  } catch (err) {
    // The transaction is lost (a failed BEGIN, COMMIT or savepoint restore): undo what is left.
    if (db.inTransaction) { try { db.exec('rollback'); } catch {} }
    if (message.op !== 'commit') lost = errorOf(err);
    parentPort.postMessage({ error: errorOf(err) });
  }
});
`;

type Reply = { outcomes: Array<{ ok: true } | { failed: string } | { error: ThreadError }> } | { done: true } | { error: ThreadError };

export interface SqliteWriterThread {
  /** Runs units in the open transaction (opening it first). Resolves with each unit's outcome. */
  run(units: ReadonlyArray<readonly PlannedStatement[]>): Promise<PlannedOutcome[]>;
  /** Commits the open transaction (rolled back if the COMMIT fails, and the promise rejects). */
  commit(): Promise<void>;
  /** Rolls the open transaction back. */
  rollback(): Promise<void>;
  /** The shared commit counters (`COMMITS_BEGUN`, `COMMITS_ENDED`), for wal-sync.ts. */
  readonly counters: Int32Array;
  /** Sets a pragma on the thread's connection, now if it runs and whenever it starts again. */
  pragma(text: string): void;
  /** Whether the thread is running (it starts on the first `run`, ends after `idleMs` without work). */
  started(): boolean;
  close(): Promise<void>;
}

/** How long the thread stays without work before it ends (its connection and file descriptors with it). */
export const WRITER_THREAD_IDLE_MS = 30_000;

/** Schedules `fire` after `ms` and returns what cancels it (tests pass their own and fire it themselves). */
export type IdleTimer = (fire: () => void, ms: number) => () => void;

const unrefTimer: IdleTimer = (fire, ms) => {
  const timer = setTimeout(fire, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

export function createSqliteWriterThread(
  file: string,
  initialPragmas: readonly string[],
  options: { idleMs?: number; idleTimer?: IdleTimer } = {},
): SqliteWriterThread {
  const pragmas = [...initialPragmas];
  const counters = new Int32Array(new SharedArrayBuffer(8));
  const idleMs = options.idleMs ?? WRITER_THREAD_IDLE_MS;
  const idleTimer = options.idleTimer ?? unrefTimer;
  type Waiter = { resolve: (reply: Reply) => void; reject: (err: Error) => void };
  // The running thread and the answers it owes, in the order of the messages.
  let current: { worker: Worker; waiting: Waiter[]; exited: Promise<void> } | null = null;
  let inTransaction = false; // a `run` went out and its batch's `commit` or `rollback` did not
  let cancelIdleEnd: (() => void) | null = null;
  let closed = false;

  function start(): NonNullable<typeof current> {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      // Not the server's preloads or profiler flags: they belong to the main thread.
      execArgv: [],
      workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), file, pragmas: [...pragmas], counters: counters.buffer },
    });
    worker.unref();
    const waiting: Waiter[] = [];
    const failAll = (err: Error) => {
      for (const w of waiting.splice(0)) w.reject(err);
    };
    worker.on('message', (reply: Reply) => {
      const w = waiting.shift();
      if (waiting.length === 0) {
        worker.unref();
        if (!inTransaction) endWhenIdle();
      }
      if (!w) return;
      if ('error' in reply) w.reject(errorFrom(reply.error));
      else w.resolve(reply);
    });
    worker.on('error', (err) => failAll(err));
    const exited = new Promise<void>((resolve) =>
      worker.once('exit', () => {
        if (current?.worker === worker) {
          current = null;
          inTransaction = false; // SQLite rolled back whatever the thread left open
        }
        // The counters stay balanced: a COMMIT that began and never ended is over either way.
        const begun = Atomics.load(counters, COMMITS_BEGUN);
        if (Atomics.load(counters, COMMITS_ENDED) < begun) Atomics.store(counters, COMMITS_ENDED, begun);
        failAll(Object.assign(new Error('the SQLite writer thread stopped'), { code: 'SQLITE_IOERR_WRITER_THREAD' }));
        resolve();
      }),
    );
    return { worker, waiting, exited };
  }

  /**
   * With nothing owed and no transaction open, the thread ends after `idleMs` without work: a
   * server that is not saturated (ADR 0030) keeps no thread, connection or descriptors for it.
   */
  function endWhenIdle(): void {
    cancelIdleEnd?.();
    cancelIdleEnd = idleTimer(() => {
      cancelIdleEnd = null;
      const idle = current;
      if (idle === null || idle.waiting.length > 0 || inTransaction) return;
      current = null; // the next message starts another thread
      idle.worker.postMessage({ op: 'close' });
    }, idleMs);
  }

  function send(message: { op: string; [field: string]: unknown }): Promise<Reply> {
    if (closed) return Promise.reject(Object.assign(new Error('the SQLite writer thread is closed'), { code: 'SQLITE_IOERR_WRITER_THREAD' }));
    cancelIdleEnd?.();
    cancelIdleEnd = null;
    current ??= start();
    if (message.op === 'run') inTransaction = true;
    else if (message.op === 'commit' || message.op === 'rollback') inTransaction = false;
    const { worker, waiting } = current;
    // Referenced while an answer is owed: an await on it must keep the process alive.
    worker.ref();
    worker.postMessage(message);
    return new Promise<Reply>((resolve, reject) => waiting.push({ resolve, reject }));
  }

  return {
    counters,
    async run(units) {
      const reply = (await send({ op: 'run', units })) as Extract<Reply, { outcomes: unknown }>;
      return reply.outcomes.map((o) => ('error' in o ? { error: errorFrom(o.error) } : o));
    },
    async commit() {
      await send({ op: 'commit' });
    },
    async rollback() {
      await send({ op: 'rollback' });
    },
    pragma(text) {
      pragmas.push(text);
      if (current !== null && !closed) void send({ op: 'pragma', text }).catch(() => undefined);
    },
    started: () => current !== null,
    async close() {
      closed = true;
      cancelIdleEnd?.();
      const running = current;
      if (running === null) return;
      running.worker.ref();
      running.worker.postMessage({ op: 'close' });
      await running.exited;
    },
  };
}
