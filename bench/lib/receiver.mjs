/**
 * The HTTPS webhook receiver of bench/webhooks.mjs (`--receiver`), started in a process of its own
 * so it does not share the sender's thread, and driven over IPC: it answers 200 (after `delayMs`)
 * and counts what it got per (path, event id). Shared by bench/webhooks.mjs and bench/scale-out.mjs.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { processCpuMs } from './proc.mjs';

const WEBHOOKS_SCRIPT = fileURLToPath(new URL('../webhooks.mjs', import.meta.url));

/** Starts the receiver; resolves once it listens. `stats()`: total, connections, distinct, duplicates. */
export async function startReceiverProcess({ delayMs = 0 } = {}) {
  const child = fork(WEBHOOKS_SCRIPT, ['--receiver', '--delay-ms', String(delayMs)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = (msg, key) =>
    new Promise((resolve) => {
      const on = (m) => {
        if (m && key in m) {
          child.off('message', on);
          resolve(m[key]);
        }
      };
      child.on('message', on);
      child.send(msg);
    });
  const ready = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`the webhook receiver exited (${code})`)));
  });
  return {
    pid: child.pid,
    ca: ready.ca,
    cpuMs: () => processCpuMs(child.pid),
    url: (p) => `https://127.0.0.1:${ready.port}${p}`,
    reset: () => ask('reset', 'reset'),
    stats: () => ask('stats', 'stats'),
    close: async () => {
      if (child.exitCode !== null) return;
      child.send('exit');
      await once(child, 'exit');
    },
  };
}
