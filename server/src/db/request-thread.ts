/**
 * A worker thread that answers requests, one reply each (the off-loop reader and writer of
 * SQLite: sqlite-offloop-reader.ts, sqlite-offloop-writer.ts).
 *
 * How it works. The thread is started on the first request, from `source` (CommonJS evaluated in
 * the worker) and the `workerData` of that moment. Each request is posted with an `id`; the thread
 * posts back `{ id, ... }`, or `{ id, error: { message, code } }`, which rejects the request with an
 * Error carrying SQLite's code (so `isDatabaseUnavailable` still sees a busy or failing disk).
 * The thread is referenced only while a request is out (an await on one must keep the process
 * alive; an idle thread must not). A thread that dies fails every request it still owed with
 * `stopped()`, and the next request starts another. `close` posts `closeMessage` and waits for the
 * thread's end; a request after it is refused.
 */
import { Worker } from 'node:worker_threads';

export interface RequestThreadOptions {
  source: string;
  /** The thread's workerData, taken at each start. */
  workerData: () => unknown;
  /** What tells the thread to close its resources and end. */
  closeMessage: unknown;
  /** The error of the requests a thread that ended still owed. */
  stopped: () => Error;
  /** The error of a request after `close`. */
  closed: () => Error;
}

export interface RequestThread {
  /** Posts the message with an `id` added; resolves with the thread's reply to it. */
  request<R>(message: Record<string, unknown>): Promise<R>;
  /** Posts a message that gets no reply, when the thread runs (a thread started later gets `workerData`). */
  notify(message: unknown): void;
  started(): boolean;
  close(): Promise<void>;
}

type Reply = { id: number; error?: { message: string; code?: string } };

export function createRequestThread(options: RequestThreadOptions): RequestThread {
  let worker: Worker | null = null;
  let exited: Promise<void> | null = null;
  let closed = false;
  let nextId = 1;
  const waiting = new Map<number, { resolve: (reply: unknown) => void; reject: (err: Error) => void }>();

  const failAll = (err: Error) => {
    for (const w of waiting.values()) w.reject(err);
    waiting.clear();
  };

  function start(): Worker {
    const started = new Worker(options.source, {
      eval: true,
      // Not the server's preloads or profiler flags: they belong to the main thread.
      execArgv: [],
      workerData: options.workerData(),
    });
    started.unref();
    started.on('message', (reply: Reply) => {
      const w = waiting.get(reply.id);
      if (!w) return;
      waiting.delete(reply.id);
      if (waiting.size === 0) started.unref();
      if (reply.error) w.reject(Object.assign(new Error(reply.error.message), reply.error.code ? { code: reply.error.code } : {}));
      else w.resolve(reply);
    });
    started.on('error', (err) => failAll(err));
    exited = new Promise<void>((resolve) =>
      started.once('exit', () => {
        if (worker === started) worker = null;
        failAll(options.stopped());
        resolve();
      }),
    );
    return started;
  }

  return {
    request<R>(message: Record<string, unknown>): Promise<R> {
      if (closed) return Promise.reject(options.closed());
      worker ??= start();
      const id = nextId++;
      worker.ref();
      worker.postMessage(Object.assign({ id }, message));
      return new Promise<R>((resolve, reject) => waiting.set(id, { resolve: resolve as (reply: unknown) => void, reject }));
    },
    notify(message) {
      if (worker !== null && !closed) worker.postMessage(message);
    },
    started: () => worker !== null,
    async close() {
      closed = true;
      const running = worker;
      if (running === null) return;
      running.ref();
      running.postMessage(options.closeMessage);
      await exited;
    },
  };
}
