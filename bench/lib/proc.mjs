/**
 * Process helpers shared by the bench and soak scripts (plain Node ESM, no build step): a free
 * loopback port, and CPU time of a process or of the whole machine read from /proc (Linux; null
 * elsewhere).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * A port nothing listens on right now, for a server the script starts: a random one below the
 * kernel's ephemeral range (32768 and up on Linux), where an outgoing connection's source port
 * cannot take it before the server listens (as server/test/support/server-process.ts does).
 */
export async function freePort() {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const free = await new Promise((resolve) => {
      const s = net.createServer();
      s.unref();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port between 20000 and 31999 after 100 tries');
}

export let clockTicks = 100;
try {
  clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
} catch {
  /* the Linux default */
}

/**
 * A /proc/<pid>/stat file's fields after the command name (which may hold spaces): index 0 is
 * field 3 (state), so utime and stime are 11 and 12, cutime and cstime 13 and 14.
 */
function statFields(file) {
  const stat = readFileSync(file, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU time (ms) a process has used so far, user + system, from /proc (Linux only; else null). */
export function processCpuMs(pid) {
  try {
    const fields = statFields(`/proc/${pid}/stat`);
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
  } catch {
    return null;
  }
}

/**
 * CPU time (ms) of this process's children that have exited and been reaped, user + system
 * (/proc/self/stat's cutime and cstime): a child's whole CPU, read after it is gone.
 */
export function reapedChildrenCpuMs() {
  const fields = statFields('/proc/self/stat');
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / clockTicks;
}

/** Sum of the CPU time (ms) of these processes (`{ pid }`) so far, or null where one cannot be read. */
export function cpuOfProcesses(processes) {
  let sum = 0;
  for (const p of processes) {
    const ms = processCpuMs(p.pid);
    if (ms === null) return null;
    sum += ms;
  }
  return sum;
}

/** Busy CPU time of the whole machine so far (ms, all cores), from /proc/stat (Linux only; else null). */
export function machineBusyMs() {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, idle, iowait, irq, softirq, steal] = cpu;
    void idle;
    void iowait;
    return ((user + nice + system + irq + softirq + (steal ?? 0)) * 1000) / clockTicks;
  } catch {
    return null;
  }
}
