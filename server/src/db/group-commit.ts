/**
 * Group commit: concurrent state changes share one durable transaction (ADR 0014).
 *
 * How it works. `run(unit)` queues the unit and resolves with its result only after the COMMIT
 * that made it durable. A batch takes the write connection (`db.connection()`), opens ONE
 * transaction (SQLite `begin immediate`; PostgreSQL `begin` plus `set local lock_timeout`, in one
 * round trip), and runs the queued units one after another. On SQLite each runs inside the
 * savepoint `unit`: a unit that throws is rolled back to that savepoint alone and its caller gets
 * the error at once (it wrote nothing), while its batch-mates go on. On PostgreSQL a savepoint
 * would cost a round trip and a subtransaction per unit (about 7% of a create's CPU on each side,
 * ADR 0036), so there is none: a unit that throws gets its error at once, the batch is rolled
 * back, and the units it had run go back to the head of the queue and run again in the next
 * batch (nothing of them was written). When the queue is empty the batch yields
 * to the event loop once (setImmediate), so requests that arrived meanwhile can join; it COMMITs
 * when a yield brought nobody, when it holds `maxBatch` units, or `maxWaitMs` after it opened.
 * One fsync then covers every unit of the batch, which is what lifts SQLite's single writer from
 * one commit per request to one per batch.
 *
 * SQLite in WAL mode (wal-sync.ts): that fsync runs off the event loop. The batch COMMITs without
 * waiting, gives the connection back, and its units are resolved when the WAL sync that started
 * after the COMMIT returns; the next batch runs meanwhile. While a sync is in flight an open batch
 * stays open (up to `maxBatch`), taking units as they come, and commits when the sync returns:
 * its units could not be acknowledged before that sync and the next one anyway, and one commit
 * for all of them writes fewer pages than several. So a batch is what arrives during one fsync,
 * as when the fsync blocked the event loop, but requests are parsed, decided and written
 * meanwhile instead of waiting in the socket. If the COMMIT (or anything outside a unit) fails, the
 * whole transaction is rolled back and every unit of the batch fails with that error: nothing of
 * the batch is written, and a database that cannot write becomes a 503 for each of them.
 *
 * Rules for a unit: it writes only through the `trx` it is given (the batch holds the only write
 * connection on SQLite, so `db` would wait for the batch that waits for the unit), it does no slow
 * or external work (that belongs before `run`), it must not open a transaction of its own, and it
 * may run more than once (PostgreSQL, when a batch-mate failed), so all it does goes through `trx`.
 * Units run serially, so a unit sees its batch-mates' writes exactly as it would after their
 * commits; a rolled-back unit's writes are gone before the next unit starts.
 *
 * Planned units (SQLite with its writer thread, ADRs 0030 and 0035): a unit may also come as a
 * plan, its statements as data (`unit.planned`). When the first unit in line has one and the
 * event loop is the bottleneck (`offload`, `eventLoopBusy`), a session of the writer thread
 * begins (`threadSession`); otherwise every unit runs as its function on the event loop, as
 * above. During the session the main connection is held as for any batch, so nothing else of
 * the process writes meanwhile, and the planned units first in line go to the thread, which runs
 * them each in its savepoint on its own connection while the event loop goes on. The thread
 * commits and syncs the WAL on its own, by the rule above (a transaction stays open while a sync
 * is in flight), and says when each transaction is durable, which answers its units. A function
 * unit in line ends the session and runs in the next batch, on the main connection, so units
 * still run in the order they came. A plan found out of date in its transaction
 * (`RUN_AS_FUNCTION`) runs as its function instead. Both forms must write the same; everywhere
 * else only functions run.
 *
 * Pipelined batches (PostgreSQL, ADR 0037): planned units first in line run as a batch on a
 * connection in pg's pipeline mode (`storage.pipelined`) instead of one after another. The BEGIN
 * and each unit's statements go out as the units are taken, without waiting for answers (one
 * socket write per turn: `corked`), and a yield lets units that arrived meanwhile join, by the
 * same rule as above. When every answer is in, each statement's expectation is checked; all met,
 * the COMMIT goes out: two round trips for the batch instead of one per unit plus two, and a batch
 * no longer waits on the event loop between its units (the function form's round trips were what
 * bounded PostgreSQL creates with CPU to spare, docs/performance.md). PostgreSQL runs what arrives
 * in order, so the first unit whose statement fails or finds other than its plan expects is the
 * culprit: the batch is rolled back, that unit gets its failure (or runs as its function, for
 * `RUN_AS_FUNCTION`), and the others go back to the head of the queue, as in a function batch.
 * A function unit in line ends the pipelined batch and runs in the next, so units run in order.
 *
 * `maxBatches` batches may be open at once, each on its own connection: 1 on SQLite (one writer),
 * more on PostgreSQL, where a single batch would put every write behind one connection's round
 * trips. At low load a unit finds no company, so its batch is a plain transaction plus one event
 * loop turn.
 */
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn, setTimeout as delay } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';
import type { DialectName, PipelinedConnection, PipelinedPool } from './database.js';
import { COMMIT_WITHOUT_WAITING, type WalSync } from './wal-sync.js';
import type { Expectation, PlannedStatement, SqliteWriterThread, ThreadRun } from './sqlite-writer-thread.js';

export type Unit<T> = (trx: Kysely<Database>) => Promise<T>;

/**
 * The same unit as data, for the SQLite writer thread (sqlite-writer-thread.ts): its statements
 * with what each must find, and the value the unit returns when they all succeed.
 */
export interface Planned<T> {
  statements: PlannedStatement[];
  value: T;
  /** Called when the plan turned out to be out of date and the function runs instead (`RUN_AS_FUNCTION`). */
  outdated?: () => void;
}

/** A unit that may also come as a plan (`run` takes whichever form the runner can use best). */
export type PlannableUnit<T> = Unit<T> & { planned?: Planned<T> | null };

/** The unit to run and its plan, the plan's value mapped as the unit's result is. */
export function mapUnit<A, B>(unit: PlannableUnit<A>, map: (value: A) => B): PlannableUnit<B> {
  const mapped: PlannableUnit<B> = async (trx) => map(await unit(trx));
  if (unit.planned) {
    // Written out, not `{ ...unit.planned, value }`: docs/performance.md, "objects built by spreading".
    mapped.planned = { statements: unit.planned.statements, value: map(unit.planned.value) };
    if (unit.planned.outdated) mapped.planned.outdated = unit.planned.outdated;
  }
  return mapped;
}

/** A planned unit found other than a statement expected: `failure` is the expectation's. */
export class PlannedUnitFailed extends Error {
  constructor(readonly failure: string) {
    super(`planned unit failed: ${failure}`);
  }
}

/**
 * The failure of an expectation that only says the plan is out of date (the fan-out's guard):
 * the runner runs the unit's function instead, on the main connection, as if it had no plan.
 */
export const RUN_AS_FUNCTION = 'run-as-function';

export interface GroupCommitOptions {
  /** Most units one transaction holds. */
  maxBatch?: number;
  /** Longest a batch stays open waiting for company, from its BEGIN (ms). */
  maxWaitMs?: number;
  /** Batches open at once (each on its own connection). SQLite: always 1. */
  maxBatches?: number;
  /** PostgreSQL: how long a statement of a unit may wait for a row lock (set local in the BEGIN round trip). */
  lockTimeoutMs?: number;
  /** PostgreSQL: planned units run as pipelined batches (ADR 0037) when the storage has such connections. Default true. */
  pipelined?: boolean;
  /**
   * SQLite with a writer thread: asked as each batch opens, whether its planned units go to the
   * thread (true) or run as functions on the event loop. Default `eventLoopBusy()`.
   */
  offload?: () => boolean;
  /**
   * SQLite with a writer thread: longest a session of the thread holds the main write connection
   * (ms); the process's other writers wait for it meanwhile. Default 20.
   */
  sessionMaxMs?: number;
}

/**
 * Whether the event loop is the bottleneck, for `offload`: its utilisation over the last 100 ms
 * or more (measured when asked, at most once per window) above 90% turns it on, below 70% off.
 * Why only then (docs/performance.md, "fourteenth session"): with the loop saturated, the writer
 * thread takes a create's statements off it and creates rise 10 to 20%; below saturation a unit's
 * round trip to the thread only adds a millisecond or two to each create. The gap between the two
 * thresholds is because the thread itself lowers the loop's utilisation (93-95% to 80-85% at
 * saturation here), which must not switch it straight off again.
 */
export function eventLoopBusy(
  options: { onAbove?: number; offBelow?: number; windowMs?: number; now?: () => number; utilizationSince?: () => () => number } = {},
): () => boolean {
  const onAbove = options.onAbove ?? 0.9;
  const offBelow = options.offBelow ?? 0.7;
  const windowMs = options.windowMs ?? 100;
  const now = options.now ?? (() => performance.now());
  // A function that gives the loop's utilisation since it was made (tests pass their own).
  const utilizationSince =
    options.utilizationSince ??
    (() => {
      const mark = performance.eventLoopUtilization();
      return () => performance.eventLoopUtilization(performance.eventLoopUtilization(), mark).utilization;
    });
  let since = utilizationSince();
  let markedAt = now();
  let on = false;
  return () => {
    const at = now();
    if (at - markedAt < windowMs) return on;
    const utilization = since();
    since = utilizationSince();
    markedAt = at;
    on = on ? utilization >= offBelow : utilization > onAbove;
    return on;
  };
}

export interface GroupCommitStats {
  batches: number;
  /** Units taken into a batch (counted as they are taken, so an open batch shows its progress). */
  units: number;
  failedUnits: number;
  failedBatches: number;
  largestBatch: number;
  /** PostgreSQL: units run again because a batch-mate failed and rolled their batch back (ADR 0036). */
  rerunUnits: number;
}

export interface TransactionRunner {
  /**
   * Runs `unit` in a shared transaction; resolves after its COMMIT, rejects if it or the COMMIT
   * fails. A unit's plan (`unit.planned`) runs in the SQLite writer thread when there is one, in
   * a pipelined batch on PostgreSQL, the unit's function everywhere else: both must write the same.
   */
  run<T>(unit: PlannableUnit<T>): Promise<T>;
  /**
   * Whether a unit queued now would likely run as its plan (PostgreSQL with pipelined batches;
   * SQLite with its writer thread and the event loop saturated: `offload`). Elsewhere a plan would
   * be made for nothing, so callers make one only when this says so; a unit without a plan simply
   * runs as its function.
   */
  plansWanted(): boolean;
  stats(): GroupCommitStats;
}

/** A pipelined statement's answer: its rows, or the error PostgreSQL (or the connection) gave. */
type Answer = { rows: unknown[] } | { error: unknown };
const answerOf = (sent: ReturnType<PipelinedConnection['query']>): Promise<Answer> =>
  sent.then(
    (result) => ({ rows: result.rows }),
    (error: unknown) => ({ error }),
  );

/** What a planned statement's rows fail of its expectation (sqlite-writer-thread.ts, `Expectation`), or null. */
function unmetExpectation(expect: Expectation | undefined, rows: unknown[]): { failed: string } | null {
  if (expect === undefined) return null;
  const first = rows[0] as Record<string, unknown> | undefined;
  if (expect.kind === 'row') return first === undefined ? { failed: expect.failure } : null;
  for (const key in first) return first[key] === expect.value ? null : { failed: expect.failure };
  return { failed: expect.failure };
}

interface Pending {
  unit: Unit<unknown>;
  planned: Planned<unknown> | null;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export const GROUP_COMMIT_DEFAULTS = { maxBatch: 64, maxWaitMs: 2, maxBatches: 4, lockTimeoutMs: 5_000, sessionMaxMs: 20 } as const;

export function createTransactionRunner(
  storage: { db: Kysely<Database>; dialect: DialectName; walSync?: WalSync | null; writerThread?: SqliteWriterThread | null; pipelined?: PipelinedPool | null },
  options: GroupCommitOptions = {},
): TransactionRunner {
  const { db, dialect } = storage;
  const walSync = storage.walSync ?? null;
  const writer = storage.writerThread ?? null;
  const offload = writer === null ? () => false : (options.offload ?? eventLoopBusy());
  const pipelined = dialect === 'postgres' && options.pipelined !== false ? (storage.pipelined ?? null) : null;
  // Whether a planned unit first in line runs elsewhere than in a function batch (its own kind of batch).
  const plannedElsewhere = (p: Pending) => p.planned !== null && (pipelined !== null || offload());
  const commit = walSync ? COMMIT_WITHOUT_WAITING : 'commit';
  const maxBatch = Math.max(1, options.maxBatch ?? GROUP_COMMIT_DEFAULTS.maxBatch);
  const maxWaitMs = options.maxWaitMs ?? GROUP_COMMIT_DEFAULTS.maxWaitMs;
  const sessionMaxMs = options.sessionMaxMs ?? GROUP_COMMIT_DEFAULTS.sessionMaxMs;
  const maxBatches = dialect === 'sqlite' ? 1 : Math.max(1, options.maxBatches ?? GROUP_COMMIT_DEFAULTS.maxBatches);
  // SQLite: each unit in the savepoint `unit` (in-process calls, nothing to save). PostgreSQL: no
  // savepoint, which would cost a round trip per unit (ADR 0036); a unit that fails rolls its
  // batch back instead, and its batch-mates run again in the next one. Multi-statement text runs
  // as one round trip on PostgreSQL (simple protocol: no parameters).
  const savepoints = dialect === 'sqlite';
  const statements = savepoints
    ? { open: ['begin immediate', 'savepoint unit'], next: ['release unit', 'savepoint unit'], undo: ['rollback to unit'] }
    : { open: [`begin; set local lock_timeout = '${Math.round(options.lockTimeoutMs ?? GROUP_COMMIT_DEFAULTS.lockTimeoutMs)}ms'`], next: [], undo: [] };
  const queue: Pending[] = [];
  const stats: GroupCommitStats = { batches: 0, units: 0, failedUnits: 0, failedBatches: 0, largestBatch: 0, rerunUnits: 0 };
  let openBatches = 0;
  // A batch that waits for company while a WAL sync is in flight is woken by the next unit.
  let wake: (() => void) | null = null;
  const arrival = () => new Promise<void>((resolve) => (wake = resolve));

  const exec = async (trx: Kysely<Database>, list: readonly string[]) => {
    for (const text of list) await sql.raw(text).execute(trx);
  };

  function run<T>(unit: PlannableUnit<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      queue.push({ unit, planned: writer !== null || pipelined !== null ? (unit.planned ?? null) : null, resolve: resolve as (value: unknown) => void, reject });
      if (wake !== null) {
        const woken = wake;
        wake = null;
        woken();
      }
      if (openBatches < maxBatches) {
        openBatches++;
        void worker();
      }
    });
  }

  async function worker(): Promise<void> {
    try {
      while (queue.length > 0) {
        try {
          // A planned unit first in line opens a pipelined batch (PostgreSQL) or a session of the
          // writer thread (SQLite: the main connection is held meanwhile, so nothing else of the
          // process writes, sqlite-writer-thread.ts); anything else, a function batch.
          const committed =
            pipelined !== null && queue[0]!.planned
              ? await pipelinedBatch(pipelined)
              : await db.connection().execute((trx) => (queue[0]?.planned && offload() ? threadSession() : batch(trx)));
          if (committed.length > 0) settle(committed);
        } catch (err) {
          // No connection (database down): every waiting unit would meet the same error.
          for (const p of queue.splice(0)) p.reject(err);
        }
      }
    } finally {
      openBatches--;
    }
  }

  /** A committed batch's units: resolved now, or (SQLite, WAL) once the WAL sync covers the COMMIT. */
  function settle(committed: Array<{ pending: Pending; value: unknown }>): void {
    const durable = walSync?.whenDurable();
    if (!durable) {
      for (const { pending, value } of committed) pending.resolve(value);
      return;
    }
    durable.then(
      () => {
        for (const { pending, value } of committed) pending.resolve(value);
      },
      (err: unknown) => {
        // Committed but not known to be on disk: the caller gets the storage error (a 503). An
        // idempotent retry then finds what was committed, if it survived.
        stats.failedUnits += committed.length;
        for (const { pending } of committed) pending.reject(err);
      },
    );
  }

  /**
   * One transaction: never throws. Rejects the units that failed; returns the committed ones with
   * their values, for `settle`.
   */
  async function batch(trx: Kysely<Database>): Promise<Array<{ pending: Pending; value: unknown }>> {
    const committed: Array<{ pending: Pending; value: unknown }> = [];
    let current: Pending | null = null;
    let taken = 0;
    let clean = true; // the savepoint holds no writes of a finished unit
    // Taken by another batch while this one waited for its connection, or for another kind of
    // batch: no transaction for nothing.
    if (queue.length === 0 || plannedElsewhere(queue[0]!)) return committed;
    try {
      await exec(trx, statements.open);
      const opened = performance.now();
      for (;;) {
        // A planned unit ends this batch when it is to go to the writer thread or a pipelined batch (the next batch).
        while (queue.length > 0 && taken < maxBatch && !plannedElsewhere(queue[0]!)) {
          current = queue.shift()!;
          taken++;
          stats.units++;
          if (!clean) await exec(trx, statements.next);
          let value: unknown;
          try {
            value = await current.unit(trx);
          } catch (err) {
            const failed = current;
            current = null;
            stats.failedUnits++;
            failed.reject(err);
            if (!savepoints) {
              // PostgreSQL: the whole transaction goes, and the units it ran before this one go
              // back to the head of the queue, in their order, to run again in the next batch.
              // Nothing of them was written, so they run as if for the first time.
              await sql.raw('rollback').execute(trx).catch(() => undefined);
              for (let i = committed.length - 1; i >= 0; i--) queue.unshift(committed[i]!.pending);
              stats.rerunUnits += committed.length;
              return [];
            }
            // If the savepoint cannot be restored the database undid the transaction itself
            // (SQLite does on a full disk or an I/O error): the batch fails with the unit's error.
            await exec(trx, statements.undo).catch(() => {
              throw err;
            });
            continue;
          }
          clean = false;
          committed.push({ pending: current, value });
          current = null;
        }
        if (taken >= maxBatch) break;
        if (walSync?.syncing()) {
          // Committing now would not acknowledge anyone sooner (see the top): take company until
          // the sync returns.
          await Promise.race([walSync.idle(), arrival()]);
          wake = null;
          continue;
        }
        if (performance.now() - opened >= maxWaitMs) break;
        await nextTurn();
        if (queue.length === 0 || plannedElsewhere(queue[0]!)) break;
      }
      await sql.raw(commit).execute(trx);
    } catch (err) {
      stats.failedBatches++;
      await sql.raw('rollback').execute(trx).catch(() => undefined);
      current?.reject(err);
      for (const { pending } of committed) pending.reject(err);
      stats.failedUnits += committed.length + (current ? 1 : 0);
      return [];
    } finally {
      stats.batches++;
      if (taken > stats.largestBatch) stats.largestBatch = taken;
    }
    return committed;
  }

  /**
   * A session of the writer thread, for the planned units first in line: posted to the thread as
   * they come, one message at a time (the event loop goes on meanwhile). The thread commits on
   * its own (sqlite-writer-thread.ts): at once when no WAL sync of its is in flight, else when it
   * returns, so its transactions follow its syncs back to back with no turn of this event loop in
   * between. Each unit is answered when the thread says its transaction is durable, or failed.
   * The session ends when a function unit or nothing comes next, when the loop is no longer the
   * bottleneck, or after `sessionMaxMs`, and then has the thread commit what it holds: the main
   * connection, held meanwhile, goes to the process's other writers. Never throws; returns
   * nothing for `settle` (its units are answered here).
   */
  async function threadSession(): Promise<never[]> {
    const thread = writer!;
    const opened = performance.now();
    let running: Promise<void> | null = null;
    let countedFailure = 0; // the last thread transaction counted in failedBatches
    const answer = (units: Pending[], { outcomes, txn, durable }: ThreadRun) => {
      const ok: Pending[] = [];
      outcomes.forEach((outcome, i) => {
        const pending = units[i]!;
        if ('ok' in outcome) {
          ok.push(pending);
        } else if ('failed' in outcome && outcome.failed === RUN_AS_FUNCTION) {
          // Rolled back in the thread; its function runs in the next batch, on the main connection.
          pending.planned!.outdated?.();
          queue.unshift({ unit: pending.unit, planned: null, resolve: pending.resolve, reject: pending.reject });
        } else {
          stats.failedUnits++;
          pending.reject('failed' in outcome ? new PlannedUnitFailed(outcome.failed) : outcome.error);
        }
      });
      if (ok.length === 0) return;
      durable.then(
        () => {
          for (const pending of ok) pending.resolve(pending.planned!.value);
        },
        (err: unknown) => {
          // Its COMMIT or its sync failed: nothing of it is written, or nothing known to be on disk.
          if (txn > countedFailure) {
            countedFailure = txn;
            stats.failedBatches++;
          }
          stats.failedUnits += ok.length;
          for (const pending of ok) pending.reject(err);
        },
      );
    };
    const post = () => {
      const units: Pending[] = [];
      while (queue.length > 0 && units.length < maxBatch && queue[0]!.planned !== null) units.push(queue.shift()!);
      if (units.length === 0) return;
      stats.units += units.length;
      if (units.length > stats.largestBatch) stats.largestBatch = units.length;
      running = thread.run(units.map((u) => u.planned!.statements)).then(
        (ran) => {
          running = null;
          answer(units, ran);
        },
        (err: unknown) => {
          // The transaction was lost (the thread undid it and fails the units it answered before).
          running = null;
          stats.failedUnits += units.length;
          for (const pending of units) pending.reject(err);
        },
      );
    };
    try {
      for (;;) {
        if (running === null) post();
        const over = performance.now() - opened >= sessionMaxMs || !offload();
        if (running !== null) {
          // While the thread works, what arrives waits for the next message.
          await (over ? running : Promise.race([running, arrival()]));
          wake = null;
          if (over) break;
          continue;
        }
        // Nothing to post: a function unit is next (the next batch runs it), or nothing is.
        if (over || queue.length > 0) break;
        await Promise.race([arrival(), delay(maxWaitMs)]);
        wake = null;
        if (queue.length === 0) break;
      }
      // What the thread holds commits now (its durability is answered as above).
      await thread.finish();
    } catch {
      // Only `finish` can throw here, when the storage closed under the session: the thread's end
      // failed every transaction it owed, and their units through `durable` (counted there).
    } finally {
      stats.batches++;
    }
    return [];
  }

  /**
   * PostgreSQL: the planned units first in line as one transaction on a pipelined connection (see
   * the top). Never throws but for want of a connection (the caller fails the queue then);
   * returns the committed units with their values, for `settle`.
   */
  async function pipelinedBatch(pool: PipelinedPool): Promise<Array<{ pending: Pending; value: unknown }>> {
    const conn = await pool.connect();
    // Another batch may have taken them while this one waited for its connection (batches open
    // as units arrive, up to maxBatches): no transaction for nothing.
    if (queue.length === 0 || queue[0]!.planned === null) {
      conn.release();
      return [];
    }
    const sent: Array<{ pending: Pending; answers: Array<Promise<Answer>> }> = [];
    let reusable = true;
    try {
      let begin: Promise<Answer> | null = null;
      const opened = performance.now();
      const send = () => {
        begin ??= answerOf(conn.query(statements.open[0]!));
        while (queue.length > 0 && sent.length < maxBatch && queue[0]!.planned !== null) {
          const pending = queue.shift()!;
          stats.units++;
          const answers: Array<Promise<Answer>> = [];
          for (const statement of pending.planned!.statements) answers.push(answerOf(conn.query(statement.sql, statement.parameters)));
          sent.push({ pending, answers });
        }
      };
      for (;;) {
        conn.corked(send);
        // Full, or a function unit is next (it runs in the next batch, after these).
        if (sent.length >= maxBatch || queue.length > 0) break;
        if (performance.now() - opened >= maxWaitMs) break;
        await nextTurn();
        if (queue.length === 0 || queue[0]!.planned === null) break;
      }
      const opening = await begin!;
      if ('error' in opening) throw opening.error;
      const answered = await Promise.all(sent.map(({ answers }) => Promise.all(answers)));
      // What each unit's answers say: null (all as planned), or the first failure among them.
      const outcomes = sent.map(({ pending }, i) => {
        const plan = pending.planned!.statements;
        for (let j = 0; j < plan.length; j++) {
          const answer = answered[i]![j]!;
          const failure = 'error' in answer ? { error: answer.error } : unmetExpectation(plan[j]!.expect, answer.rows);
          if (failure !== null) return failure;
        }
        return null;
      });
      // The first unit that failed or found other than expected is the culprit; PostgreSQL refused
      // what came after a failed statement (the transaction had aborted), so those run again.
      const culprit = outcomes.findIndex((outcome) => outcome !== null);
      if (culprit < 0) {
        const done = await conn.query('commit');
        // Had anything failed unseen, PostgreSQL would answer the COMMIT with ROLLBACK: nothing written.
        if (done.command !== 'COMMIT') throw new Error(`the batch's COMMIT answered ${done.command}`);
        return sent.map(({ pending }) => ({ pending, value: pending.planned!.value }));
      }
      await conn.query('rollback');
      // Back to the head of the queue in their order; nothing of any of them was written. A plan
      // found out of date runs as its function, the culprit's and any after it: plans made from
      // the same stale read fail alike, and one batch per failure would run the rest again each time.
      const back: Pending[] = [];
      let rerun = 0;
      sent.forEach(({ pending }, i) => {
        const outcome = outcomes[i]!;
        if (outcome !== null && 'failed' in outcome && outcome.failed === RUN_AS_FUNCTION && i >= culprit) {
          pending.planned!.outdated?.();
          back.push({ unit: pending.unit, planned: null, resolve: pending.resolve, reject: pending.reject });
        } else if (i === culprit) {
          stats.failedUnits++;
          pending.reject('failed' in outcome! ? new PlannedUnitFailed(outcome.failed) : outcome!.error);
        } else {
          rerun++;
          back.push(pending);
        }
      });
      stats.rerunUnits += rerun;
      queue.unshift(...back);
      return [];
    } catch (err) {
      // The BEGIN, the COMMIT or the connection failed: nothing of the batch is known written.
      stats.failedBatches++;
      stats.failedUnits += sent.length;
      for (const { pending } of sent) pending.reject(err);
      await conn.query('rollback').catch(() => {
        reusable = false;
      });
      return [];
    } finally {
      stats.batches++;
      if (sent.length > stats.largestBatch) stats.largestBatch = sent.length;
      conn.release(!reusable);
    }
  }

  return { run, plansWanted: () => pipelined !== null || (writer !== null && offload()), stats: () => ({ ...stats }) };
}
