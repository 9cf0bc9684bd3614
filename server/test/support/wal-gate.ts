/**
 * A stand-in for the WAL's fdatasync (db/wal-sync.ts) that a test can hold, and helpers to wait
 * for what the test's own connections or counters show. Nothing here waits on business time.
 */

/** An fdatasync stand-in: passes at once while open; while held, each sync waits to be released. */
export function walGate() {
  let held: Array<() => void> | null = null;
  let syncs = 0;
  let failing = false;
  return {
    get syncs() {
      return syncs;
    },
    get waiting() {
      return held?.length ?? 0;
    },
    hold() {
      held ??= [];
    },
    /** The next sync fails (an I/O error from fdatasync). */
    failNext() {
      failing = true;
    },
    /** Let the oldest held sync return. */
    releaseOne() {
      held?.shift()?.();
    },
    release() {
      const waiting = held ?? [];
      held = null;
      for (const go of waiting) go();
    },
    sync: async () => {
      syncs++;
      if (held) await new Promise<void>((resolve) => held!.push(resolve));
      if (failing) {
        failing = false;
        throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
      }
    },
  };
}

export const settledState = (p: Promise<unknown>) =>
  Promise.race([p.then(() => 'settled', () => 'settled'), new Promise((r) => setImmediate(() => r('pending')))]);

/**
 * Turns of the event loop until `check` holds (it reads the test's own connection or counters;
 * nothing here waits on business time). The bound only turns a hang into a failure.
 */
export async function until(check: () => boolean, what: string, boundMs = 15_000): Promise<void> {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > boundMs) throw new Error(`not reached within ${boundMs} ms: ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

