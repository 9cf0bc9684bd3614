/**
 * WAL checkpoints off the request path (SQLite).
 *
 * How it works. With SQLite's default, the COMMIT that pushes the WAL past 1,000 pages runs the
 * checkpoint itself: it copies the WAL into the database file and fsyncs it, synchronously, on the
 * event loop, so one request in a thousand pages waits for it and every other request waits behind
 * it (the 12 to 72 ms maxima in docs/performance.md). The writer therefore turns automatic
 * checkpoints off (`wal_autocheckpoint = 0`, set in database.ts) and this worker thread, with a
 * connection of its own, runs `wal_checkpoint(PASSIVE)` every `intervalMs`: PASSIVE never takes the
 * write lock, so commits go on while it copies and fsyncs.
 *
 * Starting the WAL over. SQLite writes the WAL from its beginning again only when a write
 * transaction starts while every frame has been copied. Under steady writes that moment never
 * comes: a PASSIVE pass copies what was there when it began, and commits have added frames by the
 * time it ends. So once the WAL holds more than `restartAboveBytes` the worker asks the main thread
 * to hold the writer (`holdWriter`: it takes the writer's connection through Kysely, as any
 * transaction does, so it waits for the transaction in progress and the next ones queue behind it,
 * without blocking the event loop), copies the few frames written since its last pass while
 * nothing can add any, and lets go; the next write starts the WAL over. Writes pause for the hold
 * (measured flat out: 2 ms median, 11 ms at p90, every 0.2 to 0.6 s; nothing at all while the load
 * leaves gaps, since SQLite then starts the WAL over by itself); reads go on throughout.
 *
 * The worker never takes the write lock while the writer may want it. It used to run
 * `wal_checkpoint(TRUNCATE)` past 64 MB on its own: that holds the write lock while it copies,
 * syncs and truncates, and the writer's next BEGIN waited for it inside SQLite's busy handler, in
 * sleeps of 1, 2, 5, 10 ms, with the whole event loop standing still. A TRUNCATE still runs when
 * the WAL file passes `truncateAboveBytes` (a reader held an old snapshot so long that the WAL could
 * not start over), but only while the writer is held, and with a short busy timeout so a slow
 * reader cannot stretch the hold: it then gives up and tries again at the next pass.
 *
 * If the worker fails or exits unexpectedly, `onStopped` is called and database.ts turns the
 * writer's automatic checkpoints back on: the WAL must never grow without bound. A hold the worker
 * does not end within `HOLD_LIMIT_MS` is ended by the main thread.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface CheckpointerOptions {
  /** The database file (the WAL is `<file>-wal`). */
  file: string;
  intervalMs?: number;
  /** Hold the writer and start the WAL over once it holds more than this many bytes of frames. */
  restartAboveBytes?: number;
  /** Truncate the WAL file (while holding the writer) once it is larger than this. */
  truncateAboveBytes?: number;
  /**
   * Takes the writer's connection (waiting for the transaction in progress) and resolves with the
   * function that gives it back. Without it the worker never holds the writer: it only copies
   * frames with PASSIVE (for a process that does not write, such as a read-only tool).
   */
  holdWriter?: () => Promise<() => void>;
  onError?: (err: Error) => void;
  /** After each pass that found frames in the WAL, and after each hold (tests, diagnostics). */
  onCheckpoint?: (result: CheckpointResult) => void;
  /** The worker is gone (error or unexpected exit): take checkpoints back on the writer. */
  onStopped?: () => void;
}

export interface CheckpointResult {
  /** Frames in the WAL and how many of them the checkpoint copied into the database. */
  frames: number;
  copied: number;
  /** Size of the WAL file afterwards. */
  walBytes: number;
  /** This checkpoint ran while the writer was held (the next write starts the WAL over when it copied every frame). */
  held: boolean;
  /** A TRUNCATE emptied the WAL file. */
  truncated: boolean;
  /** How long the checkpoint took, and how long writes waited for it (held ones; 0 otherwise), in ms. */
  checkpointMs: number;
  heldMs: number;
}

export interface Checkpointer {
  stop(): Promise<void>;
}

export const CHECKPOINT_DEFAULTS = {
  intervalMs: 200,
  restartAboveBytes: 16 * 1024 * 1024,
  truncateAboveBytes: 64 * 1024 * 1024,
  /** The busy timeout of a checkpoint run while the writer is held: how long it waits for readers. */
  heldBusyMs: 100,
  /**
   * Before it asks for the hold, the worker runs up to this many more PASSIVE passes, until one finds
   * no more than `catchUpFrames` frames written since the pass before: a hold lasts as long as the
   * copy of what is left (measured under load: 7 ms median and 24 ms at p90 after a single extra
   * pass, 4 and 13 ms with these).
   */
  catchUpPasses: 5,
  catchUpFrames: 128,
} as const;

/** A hold the worker has not ended by then is ended by the main thread (a stuck worker must not stop every write). */
export const HOLD_LIMIT_MS = 2_000;
/** A hold at least this long is logged as a warning (`logCheckpoint`): writes waited that long. Measured holds are 2 ms at the median, 11 ms at p90. */
export const CHECKPOINT_HOLD_WARN_MS = 250;

/**
 * The server's `onCheckpoint`: a hold is logged at debug, and as a warning once it reaches
 * CHECKPOINT_HOLD_WARN_MS, since every write, and every create's answer, waited for it; a pass that
 * did not hold the writer kept nobody waiting and is not logged.
 */
export function logCheckpoint(logger: { warn(fields: object, message: string): void; debug(fields: object, message: string): void }, r: CheckpointResult): void {
  if (!r.held) return;
  const fields = { frames: r.frames, truncated: r.truncated, checkpointMs: Math.round(r.checkpointMs * 100) / 100, heldMs: Math.round(r.heldMs * 100) / 100 };
  if (r.heldMs >= CHECKPOINT_HOLD_WARN_MS) logger.warn(fields, 'WAL checkpoint held writes; they waited for it');
  else logger.debug(fields, 'WAL checkpoint with the writer held');
}

// Plain CommonJS evaluated in the worker: no build step of its own, the same in tests (TypeScript
// sources) and in server/dist. better-sqlite3 is loaded by its resolved path.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { statSync } = require('node:fs');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
const BUSY_MS = 5000;
db.pragma('busy_timeout = ' + BUSY_MS);
const pageSize = db.pragma('page_size', { simple: true });
const walSize = () => { try { return statSync(workerData.file + '-wal').size; } catch { return 0; } };
const checkpoint = (mode) => {
  const started = performance.now();
  const [r] = db.pragma('wal_checkpoint(' + mode + ')');
  return { frames: r.log, copied: r.checkpointed, busy: r.busy, ms: performance.now() - started };
};
let timer = null;
let stopped = false;
// The checkpoint to run once the main thread holds the writer ('PASSIVE' or 'TRUNCATE'); null when no hold was asked for.
let heldMode = null;
const schedule = () => { if (!stopped) timer = setTimeout(pass, workerData.intervalMs); };
function pass() {
  timer = null;
  try {
    const result = checkpoint('PASSIVE');
    const walBytes = walSize();
    if (result.frames > 0) parentPort.postMessage({ frames: result.frames, copied: result.copied, walBytes, held: false, truncated: false, checkpointMs: result.ms, heldMs: 0 });
    const restart = workerData.canHold && result.frames * pageSize > workerData.restartAboveBytes;
    const truncate = workerData.canHold && walBytes > workerData.truncateAboveBytes;
    if (restart || truncate) {
      // More passes first, while they still find many new frames: each copies what was written
      // during the one before, so the held one has only the last few to copy.
      for (let last = result, i = 0; i < workerData.catchUpPasses; i++) {
        const next = checkpoint('PASSIVE');
        const fresh = next.frames - last.copied;
        last = next;
        if (fresh <= workerData.catchUpFrames) break;
      }
      heldMode = truncate ? 'TRUNCATE' : 'PASSIVE';
      parentPort.postMessage({ hold: true });
      return; // the pass goes on in held(), when the main thread says the writer is held
    }
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message) });
  }
  schedule();
}
function held() {
  const mode = heldMode;
  heldMode = null;
  let report = null;
  try {
    db.pragma('busy_timeout = ' + workerData.heldBusyMs);
    const result = checkpoint(mode);
    report = { frames: result.frames, copied: result.copied, walBytes: walSize(), held: true, truncated: mode === 'TRUNCATE' && result.busy === 0, checkpointMs: result.ms, heldMs: 0 };
  } catch (err) {
    report = { error: String(err && err.message) };
  } finally {
    try { db.pragma('busy_timeout = ' + BUSY_MS); } catch {}
  }
  parentPort.postMessage({ released: true, report });
  schedule();
}
parentPort.on('message', (message) => {
  if (message === 'held') {
    if (heldMode && !stopped) return held();
    // Nothing to do under it (stopping): give the writer straight back.
    return parentPort.postMessage({ released: true, report: null });
  }
  if (message === 'not-held') {
    // The main thread could not hold the writer (closing): this pass ends without the held step.
    if (heldMode) { heldMode = null; schedule(); }
    return;
  }
  if (message !== 'stop') return;
  stopped = true;
  if (timer) clearTimeout(timer);
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {}
  db.close();
  parentPort.close();
});
schedule();
`;

type WorkerMessage = { hold: true } | { released: true; report: CheckpointResult | { error: string } | null } | CheckpointResult | { error: string };

export function startCheckpointer(options: CheckpointerOptions): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    // Not the server's preloads or profiler flags (bench --sql-timing, --cpu-prof): they belong to the main thread.
    execArgv: [],
    workerData: {
      driver,
      file: options.file,
      intervalMs: options.intervalMs ?? CHECKPOINT_DEFAULTS.intervalMs,
      restartAboveBytes: options.restartAboveBytes ?? CHECKPOINT_DEFAULTS.restartAboveBytes,
      truncateAboveBytes: options.truncateAboveBytes ?? CHECKPOINT_DEFAULTS.truncateAboveBytes,
      heldBusyMs: CHECKPOINT_DEFAULTS.heldBusyMs,
      catchUpPasses: CHECKPOINT_DEFAULTS.catchUpPasses,
      catchUpFrames: CHECKPOINT_DEFAULTS.catchUpFrames,
      canHold: options.holdWriter !== undefined,
    },
  });
  // Never what keeps a process alive (a CLI command that opened storage exits when it is done).
  worker.unref();
  let stopping = false;
  let gone = false;
  // Gives the writer back; set while the worker holds it.
  let releaseWriter: (() => void) | null = null;
  let holdLimit: NodeJS.Timeout | null = null;
  let heldSince = 0;
  /** Gives the writer back; how long it was held (ms). */
  const endHold = (): number => {
    if (holdLimit) clearTimeout(holdLimit);
    holdLimit = null;
    const release = releaseWriter;
    releaseWriter = null;
    release?.();
    return release ? performance.now() - heldSince : 0;
  };
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));

  async function hold(holdWriter: () => Promise<() => void>): Promise<void> {
    let release: () => void;
    try {
      release = await holdWriter();
    } catch (err) {
      // The writer is closing (or failed): the worker's pass ends without holding it.
      options.onError?.(err instanceof Error ? err : new Error(String(err)));
      if (!gone) worker.postMessage('not-held');
      return;
    }
    if (gone) return release();
    releaseWriter = release;
    heldSince = performance.now();
    holdLimit = setTimeout(() => {
      options.onError?.(new Error(`WAL checkpoint held the writer for ${HOLD_LIMIT_MS} ms; let go`));
      endHold();
    }, HOLD_LIMIT_MS);
    holdLimit.unref();
    worker.postMessage('held');
  }

  worker.on('message', (message: WorkerMessage) => {
    if ('hold' in message) {
      if (options.holdWriter) void hold(options.holdWriter);
      return;
    }
    if ('released' in message) {
      const heldMs = endHold();
      if (message.report === null) return;
      if ('error' in message.report) options.onError?.(new Error(`WAL checkpoint failed: ${message.report.error}`));
      else options.onCheckpoint?.({ ...message.report, heldMs });
      return;
    }
    if ('error' in message) options.onError?.(new Error(`WAL checkpoint failed: ${message.error}`));
    else options.onCheckpoint?.(message);
  });
  worker.on('error', (err) => options.onError?.(err));
  worker.once('exit', () => {
    gone = true;
    endHold();
    if (!stopping) options.onStopped?.();
  });
  return {
    async stop() {
      stopping = true;
      // Referenced again while it finishes: awaiting the exit of an unreferenced worker does not
      // keep the event loop alive, so a script whose last step is close() would end mid-await (exit 13).
      worker.ref();
      worker.postMessage('stop');
      await exited;
    },
  };
}
