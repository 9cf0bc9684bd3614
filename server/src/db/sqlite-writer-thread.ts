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
 * - One session at a time: the runner holds the main write connection (Kysely's, through
 *   `db.connection()`) for as long as a session of this thread is open, so no other write of the
 *   process (a transaction through `db`, the delivery worker, the checkpointer's hold) can meet
 *   this thread's transactions; they queue in Kysely as they would behind any batch.
 * - Messages, answered in order: `run` (open a transaction if none is, then run each unit in the
 *   savepoint `unit`: a unit whose statement fails, or finds other than it must, is rolled back to
 *   its savepoint alone and answered with why; its transaction-mates go on; the answer names the
 *   transaction), `finish` (commit what is open now: the session ends), `close`.
 * - Expectations: `row` (the statement must return a row: the idempotency claim, whose insert
 *   returns nothing when a live record holds the key), `equals` (the statement's single value
 *   must be this text: the fan-out's guard that the webhook endpoints are those the plan was made
 *   for). A unit that fails one is answered `{ failed: <the expectation's failure> }`.
 * - The connection commits with `synchronous = NORMAL`, as the main writer does (wal-sync.ts), and
 *   the thread commits and syncs on its own (ADR 0035). After a `run`, with no WAL sync of its
 *   in flight, it COMMITs and starts one (`fdatasync` of the WAL file on libuv's pool); while one
 *   is in flight its transaction stays open and takes what comes (up to `maxUnits`), and when the
 *   sync returns it COMMITs that and syncs again. So on a saturated server the disk goes from one
 *   sync to the next with only a COMMIT between them. When the runner decided the COMMITs and
 *   the main thread started the syncs (ADR 0030 as first built), each cycle waited for both
 *   threads' event loops (sync returns → the main thread hears it → it posts the COMMIT → the
 *   thread, busy with units, gets to it → the main thread hears of the COMMIT → it starts the
 *   next sync): 6 to 8 ms between two syncs of 1 to 4 ms, measured (docs/performance.md).
 * - Durability: each sync's end is told to the main thread (`durable`, or `syncFailed`), which
 *   answers the units of the transactions it covered (`ThreadRun.durable`); a COMMIT that fails
 *   fails its transaction's units (`failed`). Because a reader may see this thread's commit before
 *   the main thread hears of it, the thread also counts in shared memory: `begun` before each
 *   COMMIT, `ended` after it, `durable` (the `ended` count a successful sync started from) after
 *   each sync. wal-sync.ts makes a response wait for the ones begun and lets the thread's syncs,
 *   or one of its own once the thread stopped, serve them (`externalCommits`, `noteElsewhere`).
 *   Tests that hold the WAL sync (`options.sync`) hold the thread's too: it asks the main thread
 *   to run it.
 * - Failure: a thread that dies fails what it owed, committed or not (nothing says it is on disk);
 *   the next planned unit starts another thread. SQLite rolls back whatever it left uncommitted.
 *
 * The thread starts on the first planned batch, so start-up pays nothing for it, and ends after
 * 30 s without work (`WRITER_THREAD_IDLE_MS`), so a server that is not saturated keeps none.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { preparedStatementsSource } from './sqlite-thread-source.js';

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
/** COMMITs ended before the thread's last successful WAL sync started: durable. */
export const COMMITS_DURABLE = 2;

// Plain CommonJS evaluated in the worker, as sqlite-offloop-reader.ts and wal-checkpointer.ts do:
// no build step of its own, the same in tests (TypeScript sources) and in server/dist.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
for (const pragma of workerData.pragmas) db.pragma(pragma);
const counters = new Int32Array(workerData.counters);
const maxUnits = workerData.maxUnits;
${preparedStatementsSource(256)}
const exec = (text) => prepared(text).run();
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
    // I/O error): the caller loses the whole transaction.
    exec('rollback to unit');
    exec('release unit');
  }
  return outcome;
}

// Transactions are numbered as they begin; the main thread waits for a number to be durable.
let txn = 0;
let unitsInTxn = 0;
let committedTxn = 0; // the last transaction committed
let syncing = false;
let closing = false;
let walFd = null;
// Tests hold the sync as they hold the main thread's (wal-sync.ts \`sync\`): the thread asks the
// main thread to run it. Everywhere else the thread syncs the WAL itself.
const delegated = workerData.delegateSync;
const syncCallbacks = new Map();
let syncRequests = 0;
function syncWal(done) {
  if (delegated) {
    syncCallbacks.set(++syncRequests, done);
    parentPort.postMessage({ event: 'sync', id: syncRequests });
    return;
  }
  try {
    walFd ??= fs.openSync(workerData.file + '-wal', 'r');
  } catch (err) {
    return done(err);
  }
  fs.fdatasync(walFd, done);
}
function rollbackOpen() {
  if (db.inTransaction) { try { db.exec('rollback'); } catch {} }
  unitsInTxn = 0;
}
function commitOpen() {
  const at = txn;
  Atomics.add(counters, ${COMMITS_BEGUN}, 1);
  try {
    exec('commit');
    committedTxn = at;
  } catch (err) {
    rollbackOpen();
    parentPort.postMessage({ event: 'failed', txn: at, error: errorOf(err) });
  } finally {
    Atomics.add(counters, ${COMMITS_ENDED}, 1);
  }
  unitsInTxn = 0;
}
// One sync at a time; it covers every COMMIT that ended before it started (failed ones too, so
// that the main thread's count of COMMITs waited for always reaches the durable count).
let syncedEnded = 0;
function startSync() {
  if (syncing) return;
  const ended = Atomics.load(counters, ${COMMITS_ENDED});
  if (ended === syncedEnded) return closeIfDone();
  syncing = true;
  const through = committedTxn;
  syncWal((err) => {
    syncing = false;
    syncedEnded = ended;
    if (err) {
      parentPort.postMessage({ event: 'syncFailed', through, ended, error: errorOf(err) });
    } else {
      if (ended > Atomics.load(counters, ${COMMITS_DURABLE})) Atomics.store(counters, ${COMMITS_DURABLE}, ended);
      parentPort.postMessage({ event: 'durable', through, ended });
    }
    // What ran while the sync was in flight commits now: one COMMIT and one sync for all of it.
    if (db.inTransaction && !closing) commitOpen();
    startSync();
  });
}
function closeIfDone() {
  if (!closing || syncing) return;
  if (walFd !== null) fs.closeSync(walFd);
  db.close();
  parentPort.close();
}
parentPort.on('message', (message) => {
  if (message.op === 'synced') {
    const done = syncCallbacks.get(message.id);
    syncCallbacks.delete(message.id);
    done(message.error ? Object.assign(new Error(message.error.message), { code: message.error.code }) : null);
    return;
  }
  if (message.op === 'close') {
    closing = true;
    if (db.inTransaction) {
      const at = txn;
      rollbackOpen();
      parentPort.postMessage({ event: 'failed', txn: at, error: { message: 'the SQLite writer thread closed', code: 'SQLITE_IOERR_WRITER_THREAD' } });
    }
    // Waits for the sync in flight, and syncs what committed after it started.
    startSync();
    return;
  }
  if (message.op === 'pragma') {
    db.pragma(message.text);
    parentPort.postMessage({ done: true });
    return;
  }
  if (message.op === 'finish') {
    if (db.inTransaction) commitOpen();
    startSync();
    parentPort.postMessage({ done: true });
    return;
  }
  // 'run'
  try {
    if (!db.inTransaction) {
      txn++;
      exec('begin immediate');
    }
    const outcomes = [];
    for (const unit of message.units) outcomes.push(runUnit(unit));
    unitsInTxn += message.units.length;
    parentPort.postMessage({ outcomes, txn });
  } catch (err) {
    // The transaction is lost (a failed BEGIN or savepoint restore): undo what is left. Every
    // unit of it fails, also those answered before (the main thread rejects the transaction).
    rollbackOpen();
    parentPort.postMessage({ error: errorOf(err), txn });
    return;
  }
  // With no sync in flight nothing is gained by waiting: commit and sync now. While one is in
  // flight the transaction stays open and takes what comes, up to maxUnits, and commits when the
  // sync returns.
  if (!syncing || unitsInTxn >= maxUnits) {
    commitOpen();
    startSync();
  }
});
`;

type Reply =
  | { outcomes: Array<{ ok: true } | { failed: string } | { error: ThreadError }>; txn: number }
  | { done: true }
  | { error: ThreadError; txn?: number };
type RunReply = Extract<Reply, { outcomes: unknown }> & { durable: Promise<void> };
/** What the thread says unasked: a transaction's COMMIT failed, a sync returned or failed, a sync to run (tests). */
type ThreadEvent =
  | { event: 'failed'; txn: number; error: ThreadError }
  | { event: 'durable'; through: number; ended: number }
  | { event: 'syncFailed'; through: number; ended: number; error: ThreadError }
  | { event: 'sync'; id: number };

/** Units that ran in the thread: each one's outcome, and the durability of the transaction they ran in. */
export interface ThreadRun {
  outcomes: PlannedOutcome[];
  /** The thread's number of the transaction the units ran in. */
  txn: number;
  /**
   * Resolves once that transaction is committed and a WAL sync that started after its COMMIT
   * returned; rejects with the error if its COMMIT or that sync failed (then nothing of it, or
   * nothing known to be on disk). The same promise for every run of one transaction.
   */
  durable: Promise<void>;
}

export interface SqliteWriterThread {
  /** Runs units in the open transaction (opening it first). Resolves with each unit's outcome. */
  run(units: ReadonlyArray<readonly PlannedStatement[]>): Promise<ThreadRun>;
  /**
   * Commits the open transaction now, whether a sync is in flight or not, and opens none until
   * the next `run`. Resolves once committed (or failed: its `durable` says which); durability follows.
   */
  finish(): Promise<void>;
  /** The shared commit counters (`COMMITS_BEGUN`, `COMMITS_ENDED`, `COMMITS_DURABLE`), for wal-sync.ts. */
  readonly counters: Int32Array;
  /** Whether every COMMIT the thread ends is followed by a sync of its own (it is running). */
  syncsItself(): boolean;
  /** Sets a pragma on the thread's connection, now if it runs and whenever it starts again. */
  pragma(text: string): void;
  /** Whether the thread is running (it starts on the first `run`, ends after `idleMs` without work). */
  started(): boolean;
  /**
   * Stops the running thread at once, as a crash would (what it owed fails; the next `run` starts
   * another). For tests of that failure; `close` is the orderly end.
   */
  terminate(): Promise<void>;
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

export interface WriterThreadOptions {
  idleMs?: number;
  idleTimer?: IdleTimer;
  /** Most units one transaction of the thread takes while a sync is in flight (default 64). */
  maxUnits?: number;
  /**
   * The WAL sync to run instead of the thread's own `fdatasync` (tests hold it, as wal-sync.ts's
   * `sync`): the thread asks, and this thread runs it and answers.
   */
  sync?: () => Promise<void>;
  /**
   * Called after the thread's syncs (`ended`: the thread's COMMITs ended when the sync started;
   * `error` when it failed) and when the thread stopped (`ended` null): wal-sync.ts settles the
   * responses that waited for those COMMITs.
   */
  onSynced?: (ended: number | null, error: Error | null) => void;
}

export function createSqliteWriterThread(file: string, initialPragmas: readonly string[], options: WriterThreadOptions = {}): SqliteWriterThread {
  const pragmas = [...initialPragmas];
  const counters = new Int32Array(new SharedArrayBuffer(12));
  const idleMs = options.idleMs ?? WRITER_THREAD_IDLE_MS;
  const idleTimer = options.idleTimer ?? unrefTimer;
  const maxUnits = Math.max(1, options.maxUnits ?? 64);
  const delegatedSync = options.sync ?? null;
  const onSynced = options.onSynced ?? (() => undefined);
  type Waiter = { resolve: (reply: Reply) => void; reject: (err: Error) => void };
  type Durability = { promise: Promise<void>; resolve: () => void; reject: (err: Error) => void };
  // The running thread and the answers it owes, in the order of the messages.
  let current: { worker: Worker; waiting: Waiter[]; exited: Promise<void> } | null = null;
  // Transactions that ran units and are not yet durable (or failed), by the thread's number, in order.
  let undecided: Array<{ txn: number; durability: Durability }> = [];
  let inTransaction = false; // a `run` went out and its session's `finish` did not
  let cancelIdleEnd: (() => void) | null = null;
  let closed = false;

  function durabilityOf(txn: number): Promise<void> {
    const last = undecided[undecided.length - 1];
    if (last !== undefined && last.txn === txn) return last.durability.promise;
    let resolve!: () => void;
    let reject!: (err: Error) => void;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // A transaction whose units all failed has nobody waiting on it.
    promise.catch(() => undefined);
    undecided.push({ txn, durability: { promise, resolve, reject } });
    return promise;
  }

  /** Settles the transactions up to `through` (or that one alone, `only`), with `err` or as durable. */
  function decide(through: number, err: Error | null, only = false): void {
    const later: typeof undecided = [];
    for (const entry of undecided) {
      if (entry.txn > through || (only && entry.txn !== through)) later.push(entry);
      else if (err === null) entry.durability.resolve();
      else entry.durability.reject(err);
    }
    undecided = later;
  }

  function start(): NonNullable<typeof current> {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      // Not the server's preloads or profiler flags: they belong to the main thread.
      execArgv: [],
      workerData: {
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
        file,
        pragmas: [...pragmas],
        counters: counters.buffer,
        maxUnits,
        delegateSync: delegatedSync !== null,
      },
    });
    worker.unref();
    const waiting: Waiter[] = [];
    const failAll = (err: Error) => {
      for (const w of waiting.splice(0)) w.reject(err);
    };
    const settleIdle = () => {
      if (waiting.length > 0 || undecided.length > 0) return;
      worker.unref();
      if (!inTransaction) endWhenIdle();
    };
    worker.on('message', (message: Reply | ThreadEvent) => {
      if ('event' in message) {
        onEvent(worker, message);
        settleIdle();
        return;
      }
      const w = waiting.shift();
      // Made now, before any later message (an event about this transaction) is handled.
      if ('outcomes' in message) (message as RunReply).durable = durabilityOf(message.txn);
      else if ('error' in message && message.txn !== undefined) decide(message.txn, errorFrom(message.error), true);
      settleIdle();
      if (!w) return;
      if ('error' in message) w.reject(errorFrom(message.error));
      else w.resolve(message);
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
        const stopped = Object.assign(new Error('the SQLite writer thread stopped'), { code: 'SQLITE_IOERR_WRITER_THREAD' });
        failAll(stopped);
        // Committed or not, nothing says it is on disk.
        decide(Number.MAX_SAFE_INTEGER, stopped);
        onSynced(null, null);
        resolve();
      }),
    );
    return { worker, waiting, exited };
  }

  function onEvent(worker: Worker, message: ThreadEvent): void {
    if (message.event === 'durable') {
      decide(message.through, null);
      onSynced(message.ended, null);
    } else if (message.event === 'syncFailed') {
      // The error SQLite itself gives when the fsync inside a COMMIT fails (as wal-sync.ts).
      const err = Object.assign(new Error(`WAL sync failed: ${message.error.message}`), { code: 'SQLITE_IOERR_FSYNC' });
      decide(message.through, err);
      onSynced(message.ended, err);
    } else if (message.event === 'failed') {
      decide(message.txn, errorFrom(message.error), true);
    } else {
      // A sync the tests hold (`options.sync`).
      const id = message.id;
      delegatedSync!().then(
        () => worker.postMessage({ op: 'synced', id }),
        (err: unknown) => worker.postMessage({ op: 'synced', id, error: { message: err instanceof Error ? err.message : String(err), code: (err as { code?: string }).code } }),
      );
    }
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
      if (idle === null || idle.waiting.length > 0 || inTransaction || undecided.length > 0) return;
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
    else if (message.op === 'finish') inTransaction = false;
    const { worker, waiting } = current;
    // Referenced while an answer or a durability is owed: an await on it must keep the process alive.
    worker.ref();
    worker.postMessage(message);
    return new Promise<Reply>((resolve, reject) => waiting.push({ resolve, reject }));
  }

  return {
    counters,
    async run(units) {
      const reply = (await send({ op: 'run', units })) as RunReply;
      const outcomes = reply.outcomes.map((o): PlannedOutcome => ('error' in o ? { error: errorFrom(o.error) } : o));
      return { outcomes, txn: reply.txn, durable: reply.durable };
    },
    async finish() {
      // No thread running: nothing is open (SQLite rolled back what a stopped one left), and
      // starting one to commit nothing would only keep it idle.
      if (current === null && !closed) {
        inTransaction = false;
        return;
      }
      await send({ op: 'finish' });
    },
    syncsItself: () => current !== null && !closed,
    pragma(text) {
      pragmas.push(text);
      if (current !== null && !closed) void send({ op: 'pragma', text }).catch(() => undefined);
    },
    started: () => current !== null,
    async terminate() {
      const running = current;
      if (running === null) return;
      await running.worker.terminate();
      await running.exited;
    },
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
