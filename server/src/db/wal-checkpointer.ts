/**
 * WAL checkpoints off the request path (SQLite).
 *
 * How it works. With SQLite's default, the COMMIT that pushes the WAL past 1,000 pages runs the
 * checkpoint itself: it copies the WAL into the database file and fsyncs it, synchronously, on the
 * event loop, so one request in a thousand pages waits for it and every other request waits behind
 * it (the 12 to 72 ms maxima in docs/performance.md). The writer therefore turns automatic
 * checkpoints off (`wal_autocheckpoint = 0`, set in database.ts) and this worker thread, with a
 * connection of its own, runs `wal_checkpoint(PASSIVE)` every `intervalMs`: PASSIVE never takes the
 * write lock, so commits go on while it copies and fsyncs. After a complete checkpoint the next
 * write starts the WAL from its beginning again, so the WAL stays about one interval of writes
 * long. If it still grows past `truncateAboveBytes` (readers kept old snapshots, a burst) the
 * worker runs `wal_checkpoint(TRUNCATE)`, which waits for the writer and then briefly blocks new
 * writes: rare, bounded, and still not on the event loop of the request that happened to commit.
 *
 * If the worker fails or exits unexpectedly, `onStopped` is called and database.ts turns the
 * writer's automatic checkpoints back on: the WAL must never grow without bound.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface CheckpointerOptions {
  /** The database file (the WAL is `<file>-wal`). */
  file: string;
  intervalMs?: number;
  truncateAboveBytes?: number;
  onError?: (err: Error) => void;
  /** After each checkpoint that found frames in the WAL (tests, diagnostics). */
  onCheckpoint?: (result: CheckpointResult) => void;
  /** The worker is gone (error or unexpected exit): take checkpoints back on the writer. */
  onStopped?: () => void;
}

export interface CheckpointResult {
  /** Frames in the WAL and how many of them the PASSIVE checkpoint copied into the database. */
  frames: number;
  copied: number;
  /** Size of the WAL file afterwards (before a TRUNCATE only when none ran). */
  walBytes: number;
  truncated: boolean;
}

export interface Checkpointer {
  stop(): Promise<void>;
}

export const CHECKPOINT_DEFAULTS = { intervalMs: 200, truncateAboveBytes: 64 * 1024 * 1024 } as const;

// Plain CommonJS evaluated in the worker: no build step of its own, the same in tests (TypeScript
// sources) and in server/dist. better-sqlite3 is loaded by its resolved path.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { statSync } = require('node:fs');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 5000');
const walSize = () => { try { return statSync(workerData.file + '-wal').size; } catch { return 0; } };
const timer = setInterval(() => {
  try {
    const [passive] = db.pragma('wal_checkpoint(PASSIVE)');
    const before = walSize();
    const truncated = before > workerData.truncateAboveBytes ? db.pragma('wal_checkpoint(TRUNCATE)')[0].busy === 0 : false;
    if (passive.log > 0 || truncated) parentPort.postMessage({ frames: passive.log, copied: passive.checkpointed, walBytes: truncated ? walSize() : before, truncated });
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message) });
  }
}, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {}
  db.close();
  parentPort.close();
});
`;

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
      truncateAboveBytes: options.truncateAboveBytes ?? CHECKPOINT_DEFAULTS.truncateAboveBytes,
    },
  });
  // Never what keeps a process alive (a CLI command that opened storage exits when it is done).
  worker.unref();
  let stopping = false;
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.on('message', (message: CheckpointResult | { error: string }) => {
    if ('error' in message) options.onError?.(new Error(`WAL checkpoint failed: ${message.error}`));
    else options.onCheckpoint?.(message);
  });
  worker.on('error', (err) => options.onError?.(err));
  worker.once('exit', () => {
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
