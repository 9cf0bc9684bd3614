#!/usr/bin/env node
/**
 * `npm run soak:traffic`: a long run of mixed traffic against the real server, then a reconciliation
 * of everything it acknowledged against the database and the webhook receivers (issue 11, item 5;
 * the memory "no growth across a 10-minute soak" of issue 10). docs/reliability.md ("Soak") says
 * what it does, how to read the report and which thresholds fail it.
 *
 *   node soak/run.mjs [--minutes N | --quick] [--db sqlite|postgres] [--rate N] [--out NAME]
 *   node soak/run.mjs --db postgres --scale-out [--api N] [--workers N] [--redis URL] [--no-restart]
 *
 * How it works:
 * 1. Setup as a user would: a fresh data folder (and, for PostgreSQL, a uniquely named database
 *    that is dropped at the end), `cds tenants create --json`, five HTTPS receivers in their own
 *    process (soak/receivers.mjs: healthy, healthy on fewer types, failing 10% with 500, slow with
 *    some answers past the 10 s time-out, and one that goes down for a stretch and comes back),
 *    each registered with `cds webhooks create`; then `cds serve` with the probe preloaded
 *    (soak/probe.mjs), raised rate limits, WEBHOOK_ALLOW_PRIVATE_NETWORKS=1, the receivers' CA in
 *    NODE_EXTRA_CA_CERTS and a retry schedule of seconds (WEBHOOK_RETRY_DELAYS_MS) so retries
 *    finish within the run. With --scale-out, instead of the one `cds serve`: API processes
 *    (`serve --role api`) that the client below sends requests to in turn, as a round-robin
 *    balancer would, and worker processes (`serve --role worker`), with REDIS_URL; at a quarter of
 *    the load a rolling restart (rollingRestart) stops and starts one process of each role.
 * 2. Load: an open-loop generator starts requests at a fixed rate whatever the server's answer
 *    time (latency is measured from when a request was due, so a stall is not hidden): BNPL soft
 *    creates (approved, and the sandbox's decline/refer magic values), new consumers decided from
 *    synthetic files, enhanced and hard creates left pending and then completed through
 *    POST /v1/sandbox/decisions/{id}/verification (pass and fail; some left pending), auto-loan
 *    creates (soft and pending), polls of earlier decisions, idempotent retries of earlier requests
 *    (must replay byte for byte), and event history reads. Every answer is checked.
 *    Every 5 s, for each server process: its RSS and open file descriptors from /proc, and its
 *    heap, event-loop delay and active handles from the probe.
 * 3. After the load: requests that failed are retried with their keys (so each one's fate is
 *    known), then the webhook backlog drains (bounded), the server is stopped with SIGTERM (it must
 *    exit 0), and the database is read: every acknowledged decision present with its outcome, no
 *    unacknowledged decision, one decision per idempotency key, no event twice, every event
 *    delivered to every subscribed endpoint (checked at the receiver), duplicates counted.
 * 4. Report: soak/results/NAME.{json,md} and a summary on stdout; exit 1 when something was lost,
 *    duplicated or answered wrongly, when the server misbehaved, or when its memory grew steadily.
 *
 * Plain Node ESM over the compiled server (run `npm run build` first; `npm run soak` does).
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { execFile, fork, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { analyse, renderMarkdown, renderSummary } from './report.mjs';
import { withPg } from '../bench/lib/pg.mjs';
import { redisReachable } from '../bench/lib/redis.mjs';
import { freePort, processCpuMs } from '../bench/lib/proc.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');
const CLI = path.join(ROOT, 'server', 'dist', 'cli', 'main.js');
const RESULTS_DIR = path.join(HERE, 'results');

/**
 * The environment that chooses or tunes the servers' memory allocator (they inherit this process's
 * environment): `LD_PRELOAD` (jemalloc, say) and glibc's `MALLOC_*`. RSS after a webhook backlog
 * depends on it (docs/reliability.md, "Memory kept after a backlog"), so the report says which.
 */
function allocatorEnv() {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => name === 'LD_PRELOAD' || name.startsWith('MALLOC_')));
}

/** Quiet time after the drain before the last sample (longer than the receivers' 30 s keep-alive). */
const IDLE_SETTLE_MS = 40_000;

const USAGE = `Usage: node soak/run.mjs [options]   (npm run soak:traffic -- [options] builds first)

  --minutes N        minutes of load (default 30); the drain and checks come after
  --quick            90 s of load with a 20 s receiver outage and second-scale retries (development)
  --db NAME          sqlite (default) or postgres
  --rate N           requests started per second, open loop (default 50), reached after a ramp
                     over the first 10% of the load (at most 60 s)
  --postgres URL     server to create the throw-away database on
                     (default $SOAK_POSTGRES_URL or postgres://root@127.0.0.1:5432/postgres)
  --drain-seconds N  longest wait for webhook retries after the load (default: the retry schedule's sum + 60 s)
  --out NAME         soak/results/NAME.{json,md} (default soak-<db>-<minutes>min, or quick-<db>); a path
                     (absolute, or relative to soak/results/) writes PATH.{json,md}
  --scale-out        the production shape instead of one \`cds serve\`: --api \`cds serve --role api\`
                     processes behind a round-robin (this harness, as a load balancer would) and
                     --workers \`cds serve --role worker\` processes, on one PostgreSQL database and
                     one Redis (needs --db postgres); a rolling restart of one API process and one
                     worker at a quarter of the load (SIGTERM, exit 0, started again)
  --api N            API processes with --scale-out (default 2)
  --workers N        worker processes with --scale-out (default 2)
  --redis URL        Redis for the shared rate limits with --scale-out
                     (default $SOAK_REDIS_URL or redis://127.0.0.1:6379)
  --no-restart       --scale-out without the rolling restart
  --keep             keep the data folder (and PostgreSQL database) for inspection
  -h, --help         this text
`;

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

function options() {
  const { values } = parseArgs({
    options: {
      minutes: { type: 'string' },
      quick: { type: 'boolean', default: false },
      db: { type: 'string', default: 'sqlite' },
      rate: { type: 'string', default: '50' },
      postgres: { type: 'string', default: process.env.SOAK_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/postgres' },
      'drain-seconds': { type: 'string' },
      out: { type: 'string' },
      keep: { type: 'boolean', default: false },
      'scale-out': { type: 'boolean', default: false },
      api: { type: 'string' },
      workers: { type: 'string' },
      redis: { type: 'string', default: process.env.SOAK_REDIS_URL ?? 'redis://127.0.0.1:6379' },
      'no-restart': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const positive = (name, v) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got "${v}"`);
    return n;
  };
  if (values.db !== 'sqlite' && values.db !== 'postgres') throw new Error(`--db must be sqlite or postgres, got "${values.db}"`);
  if (values.quick && values.minutes) throw new Error('--quick and --minutes exclude each other');
  const scaleOut = values['scale-out'];
  if (!scaleOut && (values.api || values.workers || values['no-restart'])) throw new Error('--api, --workers and --no-restart go with --scale-out');
  if (scaleOut && values.db !== 'postgres') throw new Error('--scale-out shares one PostgreSQL database between its processes: add --db postgres');
  const count = (name, v, fallback) => {
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > 8) throw new Error(`--${name} must be a whole number from 1 to 8, got "${v}"`);
    return n;
  };
  const minutes = values.quick ? 1.5 : values.minutes ? positive('minutes', values.minutes) : 30;
  const loadMs = Math.round(minutes * 60_000);
  // Retry waits short enough that every retry finishes within the run, long enough to be retries.
  const retryDelaysMs = values.quick ? [500, 1000, 2000, 4000, 8000, 15_000, 30_000] : [1000, 5000, 15_000, 30_000, 60_000, 120_000, 240_000];
  const retryTotalMs = retryDelaysMs.reduce((a, b) => a + b, 0);
  // The outage receiver is down for a stretch in the middle of the load, shorter than the whole
  // retry schedule (so no delivery runs out of attempts) and starting after the warm-up.
  const outageMs = values.quick ? 20_000 : Math.min(Math.round(loadMs * 0.15), 270_000, retryTotalMs - 60_000);
  const outageStartMs = Math.round(loadMs * 0.35);
  const rampMs = Math.min(60_000, Math.round(loadMs * 0.1));
  const dbLabel = scaleOut ? `${values.db}-scale-out` : values.db;
  return {
    quick: values.quick,
    minutes,
    loadMs,
    rampMs,
    db: values.db,
    rate: positive('rate', values.rate),
    postgresUrl: values.postgres,
    retryDelaysMs,
    drainMs: values['drain-seconds'] ? positive('drain-seconds', values['drain-seconds']) * 1000 : retryTotalMs + 60_000,
    outage: { startMs: outageStartMs, endMs: outageStartMs + outageMs },
    out: values.out ?? (values.quick ? `quick-${dbLabel}` : `soak-${dbLabel}-${minutes}min`),
    keep: values.keep,
    // The rolling restart at a quarter of the load: after the ramp, before the outage (35%) and
    // before the second half, over which memory is judged (so a restarted process is judged too).
    scaleOut: scaleOut
      ? { api: count('api', values.api, 2), workers: count('workers', values.workers, 2), redisUrl: values.redis, restartAtMs: values['no-restart'] ? null : Math.round(loadMs * 0.25) }
      : null,
  };
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

const log = (...parts) => process.stderr.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${parts.join(' ')}\n`);
const sha = (text) => createHash('sha256').update(text).digest('hex');
const pick = (arr) => arr[Math.floor(Math.random() * arr.length)];
const randInt = (lo, hi) => lo + Math.floor(Math.random() * (hi - lo + 1));
const round1 = (x) => Math.round(x * 10) / 10;
const money = (cents) => `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** Event ids: version 7 (time-ordered, ADR 0022) since 2026-11-26, version 4 before (docs/events.md). */
const EVENT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[47][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function procStatus(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name) => {
      const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text);
      return m ? Number(m[1]) * 1024 : null;
    };
    const threads = /^Threads:\s+(\d+)/m.exec(text);
    return { rss: kb('VmRSS'), rssAnon: kb('RssAnon'), rssFile: kb('RssFile'), hwm: kb('VmHWM'), threads: threads ? Number(threads[1]) : null };
  } catch {
    return null;
  }
}

/** TCP sockets of the machine by inode: local and remote port (from /proc/<pid>/net/tcp and tcp6). */
function tcpSockets(pid) {
  const byInode = new Map();
  for (const file of ['tcp', 'tcp6']) {
    let text = '';
    try {
      text = readFileSync(`/proc/${pid}/net/${file}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const port = (addr) => parseInt(addr.split(':')[1], 16);
      byInode.set(f[9], { localPort: port(f[1]), remotePort: port(f[2]) });
    }
  }
  return byInode;
}

/**
 * Open file descriptors of a process by kind, from /proc; sockets by peer: `clients` (connections
 * to the server's port), `receivers` (to the webhook receivers), `database` (PostgreSQL), other.
 * Null off Linux.
 */
function openFds(pid, peers) {
  try {
    const kinds = { total: 0, clients: 0, receivers: 0, database: 0, otherSockets: 0, pipe: 0, file: 0, other: 0, targets: {} };
    const tcp = tcpSockets(pid);
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      let target = '';
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue; // closed between the listing and the look
      }
      kinds.total += 1;
      // What each descriptor is, without the per-instance numbers: "socket", "anon_inode:[eventfd]", a path.
      const what = target.replace(/^(socket|pipe):\[\d+\]$/, '$1');
      kinds.targets[what] = (kinds.targets[what] ?? 0) + 1;
      const socket = /^socket:\[(\d+)\]$/.exec(target);
      if (socket) {
        const t = tcp.get(socket[1]);
        if (t && t.localPort === peers.serverPort && t.remotePort !== 0) kinds.clients += 1;
        else if (t && peers.receiverPorts.has(t.remotePort)) kinds.receivers += 1;
        else if (t && t.remotePort === peers.databasePort) kinds.database += 1;
        else kinds.otherSockets += 1;
      } else if (target.startsWith('pipe:')) kinds.pipe += 1;
      else if (target.startsWith('/')) kinds.file += 1;
      else kinds.other += 1;
    }
    return kinds;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// Cleanup that also runs on Ctrl-C
// ---------------------------------------------------------------------------------------------

const cleanups = [];
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, async () => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: stopping the server and cleaning up`);
    for (const fn of cleanups.reverse()) await fn().catch((err) => log(`cleanup failed: ${err.message}`));
    process.exit(130);
  });
}

// ---------------------------------------------------------------------------------------------
// Databases
// ---------------------------------------------------------------------------------------------

async function openDatabase(opts, dataDir) {
  if (opts.db === 'sqlite') return { kind: 'sqlite', dataDir, url: null, drop: async () => {} };
  const name = `cds_soak_${process.pid}_${randomBytes(3).toString('hex')}`;
  await withPg(opts.postgresUrl, (c) => c.query(`create database "${name}"`));
  const url = new URL(opts.postgresUrl);
  url.pathname = `/${name}`;
  return { kind: 'postgres', dataDir, name, url: url.toString(), drop: () => withPg(opts.postgresUrl, (c) => c.query(`drop database if exists "${name}" with (force)`)) };
}

/** Read-only queries with `?` placeholders on either database. */
async function reader(database) {
  if (database.kind === 'sqlite') {
    const db = new Database(path.join(database.dataDir, 'cds.sqlite'), { readonly: true, fileMustExist: true });
    return { all: async (sql, params = []) => db.prepare(sql).all(...params), close: async () => db.close() };
  }
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  return {
    all: async (sql, params = []) => {
      let i = 0;
      return (await client.query(sql.replace(/\?/g, () => `$${++i}`), params)).rows;
    },
    close: () => client.end(),
  };
}

// ---------------------------------------------------------------------------------------------
// Receivers (their own process)
// ---------------------------------------------------------------------------------------------

/**
 * The endpoints, what each subscribes to and how its receiver behaves. Subscriptions differ so
 * fan-out is exercised; the failing ones get fewer event types so their retries stay a fraction
 * of the load.
 */
const RECEIVERS = [
  { name: 'healthy-all', behaviour: 'healthy', events: '*' },
  { name: 'healthy-final', behaviour: 'healthy', events: 'decision.finalized,decision.adjusted' },
  { name: 'flaky-500', behaviour: 'flaky', failRate: 0.1, events: 'decision.created,decision.finalized,application.kyc_completed,application.kyc_failed' },
  { name: 'slow-timeout', behaviour: 'slow', slowRate: 0.1, hangRate: 0.003, events: 'decision.finalized' },
  { name: 'outage', behaviour: 'healthy', events: 'decision.created,decision.finalized' },
];

async function startReceivers(dir) {
  const child = fork(path.join(HERE, 'receivers.mjs'), [JSON.stringify(RECEIVERS)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let nextId = 0;
  const ask = (msg) =>
    new Promise((resolve, reject) => {
      const id = ++nextId;
      const on = (m) => {
        if (m?.re !== id) return;
        child.off('message', on);
        if (m.error) reject(new Error(`receivers: ${m.error}`));
        else resolve(m);
      };
      child.on('message', on);
      child.send({ ...msg, id });
    });
  const ready = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`receivers exited during start-up (${code})`)));
  });
  const caFile = path.join(dir, 'soak-ca.pem');
  await writeFile(caFile, ready.ca);
  const close = async () => {
    if (child.exitCode !== null) return;
    child.send({ op: 'exit' });
    await new Promise((resolve) => child.once('exit', resolve));
  };
  cleanups.push(close);
  return {
    caFile,
    ports: ready.ports,
    url: (name) => `https://127.0.0.1:${ready.ports[name]}/hook`,
    setSecrets: (secrets) => ask({ op: 'secrets', secrets }),
    down: (name) => ask({ op: 'down', name }),
    up: (name) => ask({ op: 'up', name }),
    stats: async () => (await ask({ op: 'stats' })).stats,
    dump: async (file) => {
      await ask({ op: 'dump', file });
      return JSON.parse(readFileSync(file, 'utf8'));
    },
    close,
  };
}

// ---------------------------------------------------------------------------------------------
// The CLI and the server, as a user runs them
// ---------------------------------------------------------------------------------------------

function runCli(args, env) {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env, timeout: 120_000 }, (err, out, errOut) =>
      err ? reject(new Error(`cds ${args[0]} ${args[1] ?? ''} failed: ${err.message}\n${errOut}`)) : resolve(out),
    ),
  );
}

function serverEnv({ port, dataDir, database, caFile, retryDelaysMs, probeFile, redisUrl }) {
  const env = { ...process.env };
  for (const name of ['DATABASE_URL', 'REDIS_URL', 'DATA_ENCRYPTION_KEY', 'NODE_ENV', 'TLS_CERT_FILE', 'TLS_KEY_FILE', 'PUBLIC_BASE_URL', 'NODE_OPTIONS']) delete env[name];
  Object.assign(env, {
    PORT: String(port),
    HOST: '127.0.0.1',
    CDS_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_LIVE_PER_S: '1000000',
    RATE_LIMIT_SANDBOX_PER_S: '1000000',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1',
    WEBHOOK_RETRY_DELAYS_MS: retryDelaysMs.join(','),
    NODE_EXTRA_CA_CERTS: caFile,
    SOAK_PROBE_FILE: probeFile,
    SOAK_PROBE_INTERVAL_MS: '5000',
  });
  if (database.url) env.DATABASE_URL = database.url;
  if (redisUrl) env.REDIS_URL = redisUrl;
  return env;
}

/**
 * The processes the soak runs, one slot each: `server` (`cds serve`, role all) in the default
 * shape; `api-N` and `worker-N` with --scale-out. A slot outlives its process: a rolling restart
 * stops the process and starts another in the same slot (same port, log and probe file), and the
 * samples name the pid they came from.
 */
function processSlots(opts, dataDir, envFor) {
  const slots = opts.scaleOut
    ? [
        ...Array.from({ length: opts.scaleOut.api }, (_, i) => ({ name: `api-${i + 1}`, role: 'api' })),
        ...Array.from({ length: opts.scaleOut.workers }, (_, i) => ({ name: `worker-${i + 1}`, role: 'worker' })),
      ]
    : [{ name: 'server', role: 'all' }];
  return Promise.all(
    slots.map(async (slot) => {
      const port = slot.role === 'worker' ? null : await freePort();
      const probeFile = path.join(dataDir, `probe-${slot.name}.jsonl`);
      // A worker serves no HTTP: it says it is ready in its log ('worker ready', at info; it logs
      // no request lines).
      const env = { ...envFor({ port: port ?? 0, probeFile }), ...(slot.role === 'worker' ? { LOG_LEVEL: 'info' } : {}) };
      return { ...slot, port, probeFile, logFile: path.join(dataDir, `${slot.name}.log`), env, current: null, samples: [], restarts: [], restarting: false };
    }),
  );
}

async function startServer(slot) {
  const { env, logFile } = slot;
  let logOffset = 0;
  try {
    logOffset = statSync(logFile).size;
  } catch {
    /* first start */
  }
  const out = createWriteStream(logFile, { flags: 'a' });
  const roleArgs = slot.role === 'all' ? [] : ['--role', slot.role];
  const child = spawn(process.execPath, ['--import', pathToFileURL(path.join(HERE, 'probe.mjs')).href, CLI, 'serve', ...roleArgs], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(out, { end: false });
  child.stderr.pipe(out, { end: false });
  let exitInfo = null;
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve((exitInfo = { code, signal }))));
  const ownLog = () => {
    try {
      return readFileSync(logFile).subarray(logOffset).toString('utf8');
    } catch {
      return '';
    }
  };
  const tail = () => ownLog().split('\n').slice(-25).join('\n');
  let stopping = null;
  // Once: the harness stops it (the end of the run, a rolling restart) and the clean-up may again.
  const stop = () =>
    (stopping ??= (async () => {
      if (exitInfo === null) {
        const started = Date.now();
        child.kill('SIGTERM');
        const res = await Promise.race([exited, sleep(40_000, null)]);
        if (res === null) {
          log(`${slot.name} did not stop within 40 s of SIGTERM; SIGKILL`);
          child.kill('SIGKILL');
          await exited;
        }
        exitInfo.stopMs = Date.now() - started;
      }
      await new Promise((resolve) => out.end(resolve));
      return exitInfo;
    })());
  cleanups.push(stop);
  const url = slot.port ? `http://127.0.0.1:${slot.port}` : null;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exitInfo) throw new Error(`${slot.name} exited during start-up (${JSON.stringify(exitInfo)}):\n${tail()}`);
    if (url) {
      try {
        const r = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) });
        if (r.ok) break;
      } catch {
        /* not listening yet */
      }
    } else if (ownLog().includes('"msg":"worker ready"')) break;
    if (Date.now() > deadline) throw new Error(`${slot.name} not ready after 60 s:\n${tail()}`);
    await sleep(100);
  }
  return { pid: child.pid, url, alive: () => exitInfo === null, exitInfo: () => exitInfo, stop, tail };
}

/**
 * A rolling restart, as a deploy does it: each slot in turn is taken out of the round-robin (an
 * API process; a load balancer's drain), stopped with SIGTERM (it must exit 0, finishing what it
 * had in flight), started again, and put back. Each slot records it in `slot.restarts`.
 */
async function rollingRestart(slots, startedAt) {
  for (const slot of slots) {
    // Out of the rotation while restarting (createClient's ports() skips it): requests already sent
    // to it finish during its graceful stop; none new are sent.
    slot.restarting = true;
    const stoppingAt = performance.now();
    const exit = await slot.current.stop();
    const stoppedAt = performance.now();
    slot.current = await startServer(slot);
    slot.restarting = false;
    const record = { atS: round1((stoppingAt - startedAt) / 1000), exit, stopMs: Math.round(stoppedAt - stoppingAt), downMs: Math.round(performance.now() - stoppingAt), newPid: slot.current.pid };
    slot.restarts.push(record);
    log(`rolling restart: ${slot.name} stopped in ${record.stopMs} ms (${JSON.stringify({ code: exit.code, signal: exit.signal })}), pid ${slot.current.pid} ready ${record.downMs} ms after the SIGTERM`);
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP client: keep-alive, every outcome a value
// ---------------------------------------------------------------------------------------------

/**
 * `ports()` lists the API processes in rotation; each request goes to the next one (round-robin,
 * as a load balancer would), and a request sent again after a stale socket goes to the same one.
 */
function createClient(ports, apiKey) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const auth = `Bearer ${apiKey}`;
  const counters = { staleSocketRetries: 0 };
  let turn = 0;
  function once(port, method, pathName, { body, idempotencyKey }) {
    return new Promise((resolve) => {
      const headers = { authorization: auth };
      if (body !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(body);
      }
      if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
      const req = http.request({ host: '127.0.0.1', port, method, path: pathName, headers, agent, timeout: 30_000 }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (err) => resolve({ error: err.code ?? err.message }));
      });
      req.on('timeout', () => req.destroy(Object.assign(new Error('client time-out (30 s)'), { code: 'CLIENT_TIMEOUT' })));
      req.on('error', (err) => resolve({ error: err.code ?? err.message, staleSocket: req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE') }));
      req.end(body);
    });
  }
  return {
    agent,
    counters,
    /**
     * → { status, headers, body } or { error: code }. A reset on a REUSED keep-alive socket before
     * any answer is the server closing an idle connection as the request left (HTTP/1.1's
     * keep-alive race; the server never read it): sent again once on a fresh socket, as Node's
     * documentation advises and as our webhook sender does, and counted.
     */
    async request(method, pathName, options = {}) {
      const open = ports();
      const port = open[turn++ % open.length];
      const res = await once(port, method, pathName, options);
      if (!res.staleSocket) return res;
      counters.staleSocketRetries += 1;
      return once(port, method, pathName, options);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Traffic: what is sent, what must come back
// ---------------------------------------------------------------------------------------------

/** Relative weights of the request kinds the open loop starts. */
const MIX = [
  ['bnpl_soft', 28],
  ['bnpl_magic', 8],
  ['bnpl_synthetic', 5],
  ['bnpl_enhanced', 6],
  ['bnpl_hard', 2],
  ['auto_soft', 7],
  ['auto_enhanced', 2],
  ['poll', 22],
  ['replay', 12],
  ['events', 8],
];
const MIX_TOTAL = MIX.reduce((a, [, w]) => a + w, 0);
function chooseKind() {
  let r = Math.random() * MIX_TOTAL;
  for (const [kind, w] of MIX) if ((r -= w) < 0) return kind;
  return MIX[0][0];
}

/** Magic ssn_last4 values of new sandbox consumers and the outcome each must give (docs/sandbox.md). */
const MAGIC = [
  { ssn: '0000', outcome: 'declined' },
  { ssn: '1111', outcome: 'referred' },
  { ssn: '2222', outcome: 'referred' },
  { ssn: '3333', outcome: 'referred' },
];
const FIRST = ['Avery', 'Blake', 'Casey', 'Drew', 'Elliot', 'Finley', 'Gray', 'Hayden', 'Jordan', 'Kai', 'Logan', 'Morgan', 'Noel', 'Parker', 'Quinn', 'Reese', 'Sage', 'Taylor'];
const LAST = ['Adams', 'Brooks', 'Carter', 'Diaz', 'Evans', 'Foster', 'Garcia', 'Hughes', 'Ito', 'Jensen', 'Kim', 'Lopez', 'Moreno', 'Nguyen', 'Okafor', 'Patel', 'Reyes', 'Singh'];

function newConsumer(ssn) {
  const first = pick(FIRST);
  const last = pick(LAST);
  const tag = randomBytes(4).toString('hex');
  return {
    first_name: first,
    last_name: `${last}${tag.slice(0, 3)}`,
    email: `${first.toLowerCase()}.${tag}@soak.example.com`,
    dob: `${randInt(1950, 2000)}-${String(randInt(1, 12)).padStart(2, '0')}-${String(randInt(1, 28)).padStart(2, '0')}`,
    ssn_last4: ssn,
    address: { line1: `${randInt(1, 9999)} Soak Street`, city: 'Austin', state: 'TX', zip: '73301' },
  };
}

const bnplBody = (consumer, cents) =>
  JSON.stringify({ consumer, transaction: { amount: money(cents), currency: 'USD', merchant_name: 'Soak Outfitters', merchant_category: pick(['electronics', 'furniture', 'apparel', 'general']) } });

function autoLoanBody(consumerId, financedCents) {
  // value = financed / 0.8 keeps the LTV at 80% whatever the amount; down payment and trade-in fixed.
  const down = 200_000;
  const trade = 100_000;
  const value = Math.round(financedCents / 0.8 / 100) * 100;
  return JSON.stringify({
    consumer: { consumer_id: consumerId },
    vehicle: { vin: '1HGCM8262RA004352', year: 2024, make: 'Honda', model: 'Accord', mileage: randInt(5000, 40000), condition: 'used', value: money(value) },
    loan: { amount: money(financedCents + down + trade), down_payment: money(down), trade_in_value: money(trade), term_months: pick([36, 48, 60]), currency: 'USD' },
    channel: 'direct',
  });
}

/**
 * The run's ledger: every decision acknowledged and what it must be at the end, every keyed
 * request (for replays and the end-of-run checks), errors by kind, latencies by minute.
 */
function newLedger() {
  return {
    decisions: new Map(), // id -> { product, kind, key, status, outcome, phase: 'final'|'pending'|'completing'|'left-pending' }
    keyed: new Map(), // idempotency key -> { method, path, body, status, bodyHash, decisionId, kind }
    replayable: [], // keys of finished, stored requests
    pollable: [], // decision ids
    unresolved: [], // requests whose fate is unknown (socket error or 5xx): retried after the load
    errors: new Map(), // class -> { count, examples: [] }
    counts: new Map(), // kind -> { sent, ok }
    latency: [], // minute -> { group -> [ms] }
    pendingCompletions: new Set(), // timers of scheduled completions
    noKeyCreates: { sent: 0, acked: 0, unresolved: 0 },
  };
}

function recordError(ledger, cls, example) {
  let e = ledger.errors.get(cls);
  if (!e) ledger.errors.set(cls, (e = { count: 0, examples: [] }));
  e.count += 1;
  if (example && e.examples.length < 5) e.examples.push(String(example).slice(0, 300));
}

function recordLatency(ledger, minute, group, ms) {
  const row = (ledger.latency[minute] ??= {});
  (row[group] ??= []).push(ms);
}

function countKind(ledger, kind, ok) {
  let c = ledger.counts.get(kind);
  if (!c) ledger.counts.set(kind, (c = { sent: 0, ok: 0 }));
  c.sent += 1;
  if (ok) c.ok += 1;
}

/** The error body's code, when the answer has one. */
function errorCode(res) {
  try {
    return JSON.parse(res.body).error ?? '?';
  } catch {
    return 'not-json';
  }
}

function createTraffic({ client, tenant, ledger, startedAt }) {
  const seeded = tenant.consumers;
  let seq = 0;

  /** Send one request and classify its outcome; `check(json)` returns a problem text or null. */
  async function exchange(kind, group, method, pathName, { body, idempotencyKey, dueAt, check }) {
    const res = await client.request(method, pathName, { body, idempotencyKey });
    const ms = performance.now() - dueAt;
    const minute = Math.floor((dueAt - startedAt) / 60_000);
    if (minute >= 0) recordLatency(ledger, minute, group, ms);
    if (res.error) {
      recordError(ledger, `${kind}: socket ${res.error}`, `${method} ${pathName}`);
      countKind(ledger, kind, false);
      return { failed: 'socket', res };
    }
    if (res.status < 200 || res.status > 299) {
      recordError(ledger, `${kind}: HTTP ${res.status} ${errorCode(res)}`, `${method} ${pathName}: ${res.body}`);
      countKind(ledger, kind, false);
      return { failed: res.status >= 500 ? 'server' : 'client', res };
    }
    let json;
    try {
      json = JSON.parse(res.body);
    } catch {
      recordError(ledger, `${kind}: wrong body (not JSON)`, res.body);
      countKind(ledger, kind, false);
      return { failed: 'body', res };
    }
    const problem = check ? check(json, res) : null;
    if (problem) {
      recordError(ledger, `${kind}: wrong body (${problem.split(':')[0]})`, `${problem} | request ${res.headers['request-id'] ?? ''}`);
      countKind(ledger, kind, false);
      return { failed: 'body', res, json };
    }
    countKind(ledger, kind, true);
    return { res, json };
  }

  function keyFor(kind) {
    return `soak-${kind}-${++seq}-${randomBytes(4).toString('hex')}`;
  }

  /** A decision create: sent, checked, recorded; pending ones get their completion scheduled. */
  async function create(kind, dueAt) {
    let pathName = '/v1/decisions/bnpl';
    let body;
    let expect; // { status, outcome? , amount? }
    switch (kind) {
      case 'bnpl_soft': {
        const cents = randInt(2500, 49_999);
        body = bnplBody({ consumer_id: seeded.soft }, cents);
        expect = { status: 'complete', outcome: 'approved', amount: money(cents) };
        break;
      }
      case 'bnpl_magic': {
        const m = pick(MAGIC);
        body = bnplBody(newConsumer(m.ssn), randInt(2500, 49_999));
        expect = { status: 'complete', outcome: m.outcome };
        break;
      }
      case 'bnpl_synthetic': {
        let ssn;
        do ssn = String(randInt(0, 9999)).padStart(4, '0');
        while (/^(\d)\1{3}$/.test(ssn));
        body = bnplBody(newConsumer(ssn), randInt(2500, 49_999));
        expect = { status: 'complete' };
        break;
      }
      case 'bnpl_enhanced':
        body = bnplBody({ consumer_id: seeded.enhanced }, randInt(50_000, 499_999));
        expect = { status: 'needs_consumer_action', tier: 'enhanced' };
        break;
      case 'bnpl_hard':
        body = bnplBody({ consumer_id: seeded.hard }, randInt(500_000, 900_000));
        expect = { status: 'needs_consumer_action', tier: 'hard' };
        break;
      case 'auto_soft':
        pathName = '/v1/decisions/auto-loan';
        body = autoLoanBody(seeded.soft, randInt(500_000, 1_400_000));
        expect = { status: 'complete', outcome: 'approved' };
        break;
      case 'auto_enhanced':
        pathName = '/v1/decisions/auto-loan';
        body = autoLoanBody(seeded.soft, randInt(1_600_000, 3_500_000));
        expect = { status: 'needs_consumer_action', tier: 'enhanced' };
        break;
      default:
        throw new Error(`unknown create kind ${kind}`);
    }
    // One create in ten goes without a key: the unkeyed path must hold too (it cannot be replayed).
    const idempotencyKey = Math.random() < 0.1 ? null : keyFor(kind);
    if (!idempotencyKey) ledger.noKeyCreates.sent += 1;
    const product = pathName.endsWith('auto-loan') ? 'auto_loan' : 'bnpl';
    const check = (j) => {
      if (typeof j.decision_id !== 'string' || !UUID.test(j.decision_id)) return `decision_id: not a UUID (${j.decision_id})`;
      if (j.status !== expect.status) return `status: ${j.status}, expected ${expect.status}`;
      if (expect.outcome && j.outcome !== expect.outcome) return `outcome: ${j.outcome}, expected ${expect.outcome}`;
      if (expect.status === 'complete' && !['approved', 'declined', 'referred'].includes(j.outcome)) return `outcome: ${j.outcome} on a complete decision`;
      if (expect.status === 'needs_consumer_action' && (j.outcome !== null || j.kyc_tier !== expect.tier || typeof j.consumer_complete_url !== 'string')) {
        return `pending shape: outcome ${j.outcome}, tier ${j.kyc_tier}, url ${typeof j.consumer_complete_url}`;
      }
      if (expect.amount && j.approved_amount !== expect.amount) return `approved_amount: ${j.approved_amount}, expected ${expect.amount}`;
      if (j.polling_url !== undefined && j.polling_url !== `/v1/decisions/${product === 'bnpl' ? 'bnpl' : 'auto-loan'}/${j.decision_id}`) return `polling_url: ${j.polling_url}`;
      return null;
    };
    const r = await exchange(kind, 'create', 'POST', pathName, { body, idempotencyKey, dueAt, check });
    if (r.failed === 'socket' || r.failed === 'server') {
      if (idempotencyKey) ledger.unresolved.push({ kind, method: 'POST', path: pathName, body, idempotencyKey, product, expect });
      else ledger.noKeyCreates.unresolved += 1;
      return;
    }
    if (!r.json || r.failed) return;
    acceptCreate({ kind, product, idempotencyKey, pathName, body, res: r.res, json: r.json });
  }

  function acceptCreate({ kind, product, idempotencyKey, pathName, body, res, json }) {
    if (!idempotencyKey) ledger.noKeyCreates.acked += 1;
    if (ledger.decisions.has(json.decision_id)) {
      recordError(ledger, `${kind}: a second request returned an existing decision`, json.decision_id);
      return;
    }
    const pending = json.status === 'needs_consumer_action';
    ledger.decisions.set(json.decision_id, { product, kind, key: idempotencyKey, status: json.status, outcome: json.outcome ?? null, phase: pending ? 'pending' : 'final' });
    ledger.pollable.push(json.decision_id);
    if (idempotencyKey) {
      ledger.keyed.set(idempotencyKey, { kind, method: 'POST', path: pathName, body, status: res.status, bodyHash: sha(res.body), decisionId: json.decision_id });
      ledger.replayable.push(idempotencyKey);
    }
    if (pending) scheduleCompletion(json.decision_id);
  }

  /** 45% pass, 45% fail, 10% stay pending (their 24 h expiry is past any soak). */
  function scheduleCompletion(decisionId) {
    const r = Math.random();
    if (r >= 0.9) {
      ledger.decisions.get(decisionId).phase = 'left-pending';
      return;
    }
    const result = r < 0.45 ? 'pass' : 'fail';
    const delay = randInt(500, 8000);
    const timer = setTimeout(() => {
      ledger.pendingCompletions.delete(timer);
      void complete(decisionId, result);
    }, delay);
    ledger.pendingCompletions.add(timer);
  }

  async function complete(decisionId, result, dueAt = performance.now()) {
    const d = ledger.decisions.get(decisionId);
    d.phase = 'completing';
    const idempotencyKey = keyFor('complete');
    const pathName = `/v1/sandbox/decisions/${decisionId}/verification`;
    const body = JSON.stringify({ result });
    const check = (j) => {
      if (j.decision_id !== decisionId) return `decision_id: ${j.decision_id}, expected ${decisionId}`;
      if (j.status !== 'complete') return `status: ${j.status} after a ${result}`;
      if (result === 'fail' && j.outcome !== 'referred') return `outcome: ${j.outcome} after a fail, expected referred`;
      if (!['approved', 'declined', 'referred'].includes(j.outcome)) return `outcome: ${j.outcome}`;
      return null;
    };
    const r = await exchange(`complete_${result}`, 'complete', 'POST', pathName, { body, idempotencyKey, dueAt, check });
    if (r.failed === 'socket' || r.failed === 'server') {
      ledger.unresolved.push({ kind: `complete_${result}`, method: 'POST', path: pathName, body, idempotencyKey, completes: decisionId });
      return;
    }
    if (!r.json || r.failed) return;
    finishCompletion(decisionId, idempotencyKey, pathName, body, r.res, r.json);
  }

  function finishCompletion(decisionId, idempotencyKey, pathName, body, res, json) {
    const d = ledger.decisions.get(decisionId);
    Object.assign(d, { status: json.status, outcome: json.outcome, phase: 'final' });
    ledger.keyed.set(idempotencyKey, { kind: 'complete', method: 'POST', path: pathName, body, status: res.status, bodyHash: sha(res.body), decisionId });
    ledger.replayable.push(idempotencyKey);
  }

  async function poll(dueAt) {
    const id = pick(ledger.pollable);
    const d = ledger.decisions.get(id);
    const pathName = `/v1/decisions/${d.product === 'bnpl' ? 'bnpl' : 'auto-loan'}/${id}`;
    // What it is when the poll is sent; a completion may land while it is in flight.
    const phaseAtSend = d.phase;
    const known = { status: d.status, outcome: d.outcome };
    await exchange('poll', 'poll', 'GET', pathName, {
      dueAt,
      check: (j) => {
        if (j.decision_id !== id) return `decision_id: ${j.decision_id}, expected ${id}`;
        if (phaseAtSend === 'final' && (j.status !== known.status || j.outcome !== known.outcome)) return `state: ${j.status}/${j.outcome}, acknowledged ${known.status}/${known.outcome}`;
        // A 'pending' one may have a completion sent after this poll and served before it.
        if (phaseAtSend === 'left-pending' && (j.status !== 'needs_consumer_action' || j.outcome !== null)) return `state: ${j.status}/${j.outcome} of a decision nobody completed`;
        return null;
      },
    });
  }

  async function replay(dueAt) {
    // Half from the recent past, half from anywhere in the run: the key store must hold them all.
    const pool = ledger.replayable;
    const key = Math.random() < 0.5 ? pool[Math.max(0, pool.length - 1 - Math.floor(Math.random() * Math.min(pool.length, 500)))] : pick(pool);
    const original = ledger.keyed.get(key);
    await exchange('replay', 'replay', original.method, original.path, {
      body: original.body,
      idempotencyKey: key,
      dueAt,
      check: (j, res) => {
        if (res.status !== original.status) return `status: ${res.status}, first answer ${original.status}`;
        if (res.headers['idempotent-replayed'] !== 'true') return 'not replayed: Idempotent-Replayed header missing (a second decision?)';
        if (sha(res.body) !== original.bodyHash) return `body: differs from the first answer (decision ${j.decision_id} vs ${original.decisionId})`;
        return null;
      },
    });
  }

  async function events(dueAt) {
    const filtered = Math.random() < 0.4;
    const pathName = filtered ? '/v1/events?limit=50&type=decision.finalized' : `/v1/events?limit=${pick([10, 20, 100])}`;
    await exchange(filtered ? 'events_filtered' : 'events', 'events', 'GET', pathName, {
      dueAt,
      check: (j) => {
        if (j.object !== 'list' || !Array.isArray(j.data) || typeof j.has_more !== 'boolean') return 'list shape: object/data/has_more';
        for (const e of j.data) {
          if (!EVENT_ID.test(e.id) || typeof e.type !== 'string' || !Number.isInteger(e.created) || typeof e.data !== 'object') return `event shape: ${JSON.stringify(e).slice(0, 120)}`;
          if (filtered && e.type !== 'decision.finalized') return `type filter: got ${e.type}`;
        }
        return null;
      },
    });
  }

  function start(kind, dueAt) {
    if ((kind === 'poll' && ledger.pollable.length === 0) || (kind === 'replay' && ledger.replayable.length === 0)) kind = 'bnpl_soft';
    if (kind === 'poll') return poll(dueAt);
    if (kind === 'replay') return replay(dueAt);
    if (kind === 'events') return events(dueAt);
    return create(kind, dueAt);
  }

  /** After the load: settle every request whose fate is unknown by retrying it with its key. */
  async function resolveUnresolved() {
    const list = ledger.unresolved.splice(0);
    const outcomes = [];
    for (const u of list) {
      let res;
      for (let i = 0; i < 10; i++) {
        res = await client.request(u.method, u.path, { body: u.body, idempotencyKey: u.idempotencyKey });
        if (!res.error && res.status < 500) break;
        await sleep(1000);
      }
      const replayed = res.headers?.['idempotent-replayed'] === 'true';
      outcomes.push({ kind: u.kind, status: res.status ?? res.error, replayed });
      if (res.status !== 200) continue;
      const json = JSON.parse(res.body);
      if (u.completes) finishCompletion(u.completes, u.idempotencyKey, u.path, u.body, res, json);
      else acceptCreate({ kind: u.kind, product: u.product, idempotencyKey: u.idempotencyKey, pathName: u.path, body: u.body, res, json });
    }
    return outcomes;
  }

  /** Completions still scheduled when the load ends are sent now, so every decision ends as planned. */
  async function flushCompletions() {
    const due = [];
    for (const [id, d] of ledger.decisions) if (d.phase === 'pending') due.push(id);
    for (const t of ledger.pendingCompletions) clearTimeout(t);
    ledger.pendingCompletions.clear();
    await Promise.all(due.map((id) => complete(id, Math.random() < 0.5 ? 'pass' : 'fail')));
    return due.length;
  }

  return { start, resolveUnresolved, flushCompletions };
}

/**
 * When requests are due: the rate climbs linearly from 0 to `rate` over `rampMs` (a cold server
 * compiles its code and fills its pools first), then holds. count(t) is how many are due by t ms,
 * timeOf(k) when the k-th (0-based) is due: its inverse.
 */
function openLoopSchedule(rate, rampMs) {
  const perMs = rate / 1000;
  const rampCount = (perMs * rampMs) / 2;
  return {
    count: (t) => (t < rampMs ? (perMs * t * t) / (2 * rampMs) : rampCount + perMs * (t - rampMs)),
    timeOf: (k) => (k < rampCount ? Math.sqrt((2 * rampMs * k) / perMs) : rampMs + (k - rampCount) / perMs),
  };
}

// ---------------------------------------------------------------------------------------------
// Sampling the server
// ---------------------------------------------------------------------------------------------

/**
 * Every 5 s, for each slot's current process: RSS and descriptors from /proc, CPU, and the last
 * line its probe wrote (only lines of the current pid: after a restart the file holds both).
 * Samples go to `slot.samples`, each naming its pid.
 */
function startSampler(slots, startedAt, phaseOf, peersOf, requestsAnswered) {
  const probes = new Map(slots.map((slot) => [slot, { offset: 0, last: null }]));
  const readProbe = (slot) => {
    const probe = probes.get(slot);
    try {
      const text = readFileSync(slot.probeFile, 'utf8');
      const fresh = text.slice(probe.offset);
      const end = fresh.lastIndexOf('\n');
      if (end >= 0) {
        probe.offset += end + 1;
        for (const line of fresh.slice(0, end).split('\n')) if (line) probe.last = JSON.parse(line);
      }
    } catch {
      /* not written yet */
    }
    return probe.last?.pid === slot.current.pid ? probe.last : null;
  };
  const takeOne = (slot) => {
    const pid = slot.current?.pid;
    if (!pid || !slot.current.alive()) return;
    const lastProbe = readProbe(slot);
    const st = procStatus(pid);
    if (!st) return;
    const fds = openFds(pid, peersOf(slot));
    slot.samples.push({
      tMs: Math.round(performance.now() - startedAt),
      phase: phaseOf(),
      pid,
      rssMb: st.rss / 2 ** 20,
      rssAnonMb: st.rssAnon / 2 ** 20,
      rssFileMb: st.rssFile / 2 ** 20,
      threads: st.threads,
      cpuMs: processCpuMs(pid),
      requests: requestsAnswered(),
      fds: fds?.total ?? null,
      fdKinds: fds,
      heapUsedMb: lastProbe ? lastProbe.heapUsed / 2 ** 20 : null,
      heapTotalMb: lastProbe ? lastProbe.heapTotal / 2 ** 20 : null,
      externalMb: lastProbe ? lastProbe.external / 2 ** 20 : null,
      lagP99Ms: lastProbe?.lagP99Ms ?? null,
      lagMaxMs: lastProbe?.lagMaxMs ?? null,
      elu: lastProbe?.elu ?? null,
      handles: lastProbe ? Object.values(lastProbe.resources).reduce((a, b) => a + b, 0) : null,
      resources: lastProbe?.resources ?? null,
    });
  };
  const take = () => {
    for (const slot of slots) takeOne(slot);
  };
  take();
  const timer = setInterval(take, 5000);
  return {
    stop() {
      clearInterval(timer);
      take();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Reconciliation: the database and the receivers against what was acknowledged
// ---------------------------------------------------------------------------------------------

function subscribes(spec, type) {
  return spec.events === '*' || spec.events.split(',').includes(type);
}

async function pendingDeliveries(database, tenantId) {
  const db = await reader(database);
  try {
    const rows = await db.all("select state, count(*) as n from webhook_deliveries where tenant_id = ? group by state", [tenantId]);
    return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
  } finally {
    await db.close();
  }
}

/** The server's SecretBox over the encryption key it generated into `dataDir` (no DATA_ENCRYPTION_KEY is passed to it). */
async function secretBoxOf(dataDir) {
  const { createSecretBox } = await import(pathToFileURL(path.join(ROOT, 'server', 'dist', 'lib', 'crypto.js')).href);
  return createSecretBox(Buffer.from(readFileSync(path.join(dataDir, 'encryption.key'), 'utf8').trim(), 'hex'));
}

async function reconcile({ database, tenant, ledger, endpoints, received }) {
  const db = await reader(database);
  const findings = { problems: [], notes: [] };
  const problem = (cls, detail) => findings.problems.push({ cls, detail });
  try {
    // Decisions: every acknowledged one present with the acknowledged outcome; none unacknowledged.
    const rows = await db.all('select id, product, status, outcome from decisions where tenant_id = ?', [tenant.tenantId]);
    const stored = new Map(rows.map((r) => [r.id, r]));
    let missing = 0;
    let wrong = 0;
    for (const [id, d] of ledger.decisions) {
      const row = stored.get(id);
      if (!row) {
        missing += 1;
        if (missing <= 5) problem('acknowledged decision missing from the database', id);
        continue;
      }
      const want = d.phase === 'final' ? { status: d.status, outcome: d.outcome } : { status: 'needs_consumer_action', outcome: null };
      if (d.phase === 'completing') continue; // its completion's fate is unknown (counted as an error already)
      if (row.status !== want.status || (row.outcome ?? null) !== want.outcome || row.product !== d.product) {
        wrong += 1;
        if (wrong <= 5) problem('decision stored with another state than acknowledged', `${id}: ${row.status}/${row.outcome}, acknowledged ${want.status}/${want.outcome}`);
      }
    }
    const unknown = rows.filter((r) => !ledger.decisions.has(r.id));
    // An unkeyed create that failed on the socket may have committed: those are not duplicates.
    const unexplainedUnknown = Math.max(0, unknown.length - ledger.noKeyCreates.unresolved);
    if (unexplainedUnknown > 0) problem('decisions in the database that no request acknowledged (duplicates?)', `${unknown.length} (unkeyed creates with unknown fate: ${ledger.noKeyCreates.unresolved}); e.g. ${unknown.slice(0, 3).map((r) => r.id).join(', ')}`);
    findings.decisions = { acknowledged: ledger.decisions.size, stored: rows.length, missing, wrongState: wrong, unacknowledged: unknown.length };

    // Idempotency keys: each of ours stored once, pointing at the decision its first answer named.
    const keyRows = await db.all('select idempotency_key, status_code, response_body from idempotency_keys where tenant_id = ?', [tenant.tenantId]);
    // Stored answers are sealed at rest (ADR 0003), bound to their tenant, environment and key: open
    // them with the key the server generated into its data folder, as the server itself does.
    const box = await secretBoxOf(database.dataDir);
    for (const r of keyRows) {
      if (typeof r.response_body === 'string' && r.response_body.startsWith('v1.')) {
        r.response_body = box.openText(r.response_body, `idempotency:${tenant.tenantId}:sandbox:${r.idempotency_key}`);
      }
    }
    const byKey = new Map(keyRows.map((r) => [r.idempotency_key, r]));
    let keyMissing = 0;
    let keyMismatch = 0;
    const decisionsByCreateKey = new Map();
    for (const [key, k] of ledger.keyed) {
      const row = byKey.get(key);
      if (!row) {
        keyMissing += 1;
        if (keyMissing <= 5) problem('idempotency key not stored', key);
        continue;
      }
      let id = null;
      try {
        id = JSON.parse(row.response_body).decision_id;
      } catch {
        /* compared below */
      }
      if (Number(row.status_code) !== k.status || id !== k.decisionId || sha(row.response_body) !== k.bodyHash) {
        keyMismatch += 1;
        if (keyMismatch <= 5) problem('idempotency key stores another answer than the one given', `${key}: ${row.status_code} ${id}`);
      }
      if (k.kind !== 'complete') {
        const seen = decisionsByCreateKey.get(id);
        if (seen) problem('one decision under two idempotency keys', `${id}: ${seen}, ${key}`);
        decisionsByCreateKey.set(id, key);
      }
    }
    findings.idempotency = { keysUsed: ledger.keyed.size, stored: keyRows.length, missing: keyMissing, mismatched: keyMismatch };

    // Events: none twice, each decision with its lifecycle events exactly once.
    const eventRows = await db.all('select id, type, subject_id, data_json from events where tenant_id = ?', [tenant.tenantId]);
    const events = new Map();
    const perDecision = new Map(); // decision id -> type -> count
    for (const e of eventRows) {
      if (events.has(e.id)) problem('event id stored twice', e.id);
      events.set(e.id, e.type);
      let decisionId = null;
      try {
        decisionId = JSON.parse(e.data_json).decision_id ?? null;
      } catch {
        problem('event data is not JSON', e.id);
      }
      if (!decisionId) continue;
      const m = perDecision.get(decisionId) ?? new Map();
      m.set(e.type, (m.get(e.type) ?? 0) + 1);
      perDecision.set(decisionId, m);
    }
    let duplicatedTypes = 0;
    let missingLifecycle = 0;
    for (const [id, types] of perDecision) {
      for (const [type, n] of types) {
        if (n > 1) {
          duplicatedTypes += 1;
          if (duplicatedTypes <= 5) problem('event emitted twice for one decision', `${id} ${type} x${n}`);
        }
      }
      const row = stored.get(id);
      const need = ['application.created', 'decision.created'];
      if (row?.status === 'complete') need.push('decision.finalized');
      for (const t of need) {
        if (!types.has(t)) {
          missingLifecycle += 1;
          if (missingLifecycle <= 5) problem('decision without one of its events', `${id} has no ${t}`);
        }
      }
      if (row?.status === 'needs_consumer_action' && types.has('decision.finalized')) problem('pending decision with decision.finalized', id);
    }
    for (const r of rows) {
      if (!perDecision.has(r.id)) {
        missingLifecycle += 1;
        if (missingLifecycle <= 5) problem('decision without any event', r.id);
      }
    }
    findings.events = { stored: eventRows.length, decisionsWithEvents: perDecision.size, duplicatedPerDecision: duplicatedTypes, missingLifecycle };

    // Deliveries: one row per (subscribed endpoint, event), delivered, and accepted by the receiver.
    const deliveryRows = await db.all('select endpoint_id, event_id, state, attempts from webhook_deliveries where tenant_id = ?', [tenant.tenantId]);
    const rowsByEndpoint = new Map();
    for (const d of deliveryRows) {
      const m = rowsByEndpoint.get(d.endpoint_id) ?? new Map();
      if (m.has(d.event_id)) problem('two delivery rows for one event and endpoint', `${d.endpoint_id} ${d.event_id}`);
      m.set(d.event_id, d);
      rowsByEndpoint.set(d.endpoint_id, m);
    }
    findings.endpoints = [];
    for (const spec of RECEIVERS) {
      const endpointId = endpoints[spec.name];
      const rowsHere = rowsByEndpoint.get(endpointId) ?? new Map();
      const got = received[spec.name];
      const expected = [...events].filter(([, type]) => subscribes(spec, type)).map(([id]) => id);
      const states = {};
      const attemptsHist = {};
      for (const d of rowsHere.values()) {
        states[d.state] = (states[d.state] ?? 0) + 1;
        attemptsHist[d.attempts] = (attemptsHist[d.attempts] ?? 0) + 1;
      }
      let noRow = 0;
      let notAccepted = 0;
      const notAcceptedStates = {};
      for (const id of expected) {
        const d = rowsHere.get(id);
        if (!d) {
          noRow += 1;
          if (noRow <= 3) problem(`${spec.name}: subscribed event without a delivery`, id);
        }
        const r = got.events[id];
        if (!r || r.accepted === 0) {
          notAccepted += 1;
          const st = d?.state ?? 'no row';
          notAcceptedStates[st] = (notAcceptedStates[st] ?? 0) + 1;
          if (notAccepted <= 3) problem(`${spec.name}: event never delivered`, `${id} (${events.get(id)}), delivery ${st}, ${d?.attempts ?? 0} attempts`);
        }
      }
      const unexpected = rowsHere.size - expected.filter((id) => rowsHere.has(id)).length;
      if (unexpected > 0) problem(`${spec.name}: deliveries of events it does not subscribe to`, String(unexpected));
      // Duplicates at the receiver: the same event accepted (2xx written) more than once.
      let duplicates = 0;
      const why = { 'same attempt again (a lease expired before the result was recorded)': 0, 'a later attempt (the sender recorded a failure the receiver did not see)': 0 };
      let phantom = 0;
      for (const [id, r] of Object.entries(got.events)) {
        if (!events.has(id)) phantom += 1;
        if (r.accepted > 1) {
          duplicates += r.accepted - 1;
          const attempts = r.attempts;
          if (new Set(attempts).size < attempts.length) why['same attempt again (a lease expired before the result was recorded)'] += 1;
          else why['a later attempt (the sender recorded a failure the receiver did not see)'] += 1;
        }
      }
      if (phantom > 0) problem(`${spec.name}: received events that are not in the database`, String(phantom));
      if (got.invalidCount > 0) problem(`${spec.name}: deliveries that failed the receiver's checks (signature, envelope)`, got.invalid.slice(0, 3).join('; '));
      findings.endpoints.push({
        name: spec.name,
        behaviour: spec.behaviour,
        events: spec.events,
        subscribedEvents: expected.length,
        deliveryRows: rowsHere.size,
        states,
        attempts: attemptsHist,
        notDelivered: notAccepted,
        notDeliveredStates: notAcceptedStates,
        receiverRequests: got.requests,
        receiverAnswers: got.answered,
        hung: got.hung,
        abandonedBySender: got.late,
        duplicatesAccepted: duplicates,
        duplicateCauses: why,
        outages: got.outages,
        invalid: got.invalidCount,
      });
    }
  } finally {
    await db.close();
  }
  return findings;
}

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

async function main() {
  const opts = options();
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cds-soak-'));
  const database = await openDatabase(opts, dataDir);
  if (!opts.keep) {
    cleanups.push(async () => {
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    });
  }
  const shape = opts.scaleOut
    ? `${opts.scaleOut.api} API process${opts.scaleOut.api > 1 ? 'es' : ''} and ${opts.scaleOut.workers} worker${opts.scaleOut.workers > 1 ? 's' : ''}, Redis ${opts.scaleOut.redisUrl}`
    : 'one cds serve';
  log(`${opts.db}, ${opts.minutes} min of load at ${opts.rate} req/s on ${shape}; data ${dataDir}${database.name ? `, database ${database.name}` : ''}`);
  if (opts.scaleOut && !(await redisReachable(opts.scaleOut.redisUrl))) throw new Error(`--scale-out needs Redis for the shared rate limits: ${opts.scaleOut.redisUrl} does not answer PING (--redis URL)`);

  const receivers = await startReceivers(dataDir);
  const envFor = ({ port, probeFile }) =>
    serverEnv({ port, dataDir, database, caFile: receivers.caFile, retryDelaysMs: opts.retryDelaysMs, probeFile, redisUrl: opts.scaleOut?.redisUrl });
  const env = envFor({ port: 0, probeFile: '' });

  // Tenant and endpoints through the operator CLI, as the quickstart does.
  const tenantJson = JSON.parse(await runCli(['tenants', 'create', '--name', 'Soak Lending', '--json'], env));
  const consumers = Object.fromEntries(tenantJson.sandbox.consumers.map((c) => [c.tier, c.consumer_id]));
  const tenant = { tenantId: tenantJson.tenant_id, apiKey: tenantJson.sandbox.api_key, consumers };
  const endpoints = {};
  const secrets = {};
  for (const spec of RECEIVERS) {
    const out = JSON.parse(
      await runCli(['webhooks', 'create', '--tenant', tenant.tenantId, '--env', 'sandbox', '--url', receivers.url(spec.name), '--events', spec.events, '--description', `soak ${spec.name}`, '--json'], env),
    );
    endpoints[spec.name] = out.id;
    secrets[spec.name] = out.secret;
  }
  await receivers.setSecrets(secrets);

  const slots = await processSlots(opts, dataDir, envFor);
  await Promise.all(
    slots.map(async (slot) => {
      slot.current = await startServer(slot);
    }),
  );
  log(slots.map((slot) => `${slot.name} pid ${slot.current.pid}${slot.current.url ? ` on ${slot.current.url}` : ''}`).join('; '));
  const apiSlots = slots.filter((slot) => slot.role !== 'worker');
  const client = createClient(() => apiSlots.filter((slot) => !slot.restarting).map((slot) => slot.port), tenant.apiKey);
  const ledger = newLedger();
  const startedAt = performance.now();
  const startedWall = new Date();
  // Read here, not when the report is built: after ten minutes of load it would be the run's own.
  const loadAverageAtStart = os.loadavg();
  let phase = 'load';
  const receiverPorts = new Set(Object.values(receivers.ports));
  const databasePort = database.url ? Number(new URL(database.url).port || 5432) : null;
  const peersOf = (slot) => ({ serverPort: slot.port, receiverPorts, databasePort });
  const answered = () => [...ledger.counts.values()].reduce((a, c) => a + c.sent, 0);
  const sampler = startSampler(slots, startedAt, () => phase, peersOf, answered);
  // A process that exits without being asked to (not during a rolling restart) ends the load.
  const exitedUnasked = () => slots.find((slot) => !slot.restarting && !slot.current.alive());
  const traffic = createTraffic({ client, tenant, ledger, startedAt });

  // The open loop: a request is due every 1/rate s (after the ramp); late ticks catch up, so a
  // stall shows up as latency (measured from the due time) instead of as fewer requests.
  const schedule = openLoopSchedule(opts.rate, opts.rampMs);
  const inFlight = new Set();
  let started = 0;
  let skipped = 0;
  const MAX_IN_FLIGHT = 2000;
  let outageState = 'before';
  const outageName = 'outage';
  let crashed = null;
  let restart = opts.scaleOut?.restartAtMs != null ? 'before' : 'none';
  let restarted = Promise.resolve();
  await new Promise((resolve) => {
    let lastReport = startedAt;
    const timer = setInterval(() => {
      const now = performance.now();
      const elapsed = now - startedAt;
      const gone = exitedUnasked();
      if (gone) {
        crashed = { process: gone.name, ...gone.current.exitInfo() };
        clearInterval(timer);
        return resolve();
      }
      if (crashed) {
        clearInterval(timer);
        return resolve();
      }
      if (restart === 'before' && elapsed >= opts.scaleOut.restartAtMs) {
        restart = 'running';
        // The first API process, then the first worker: each out of rotation, SIGTERM, started
        // again. A lone API process is not restarted: a balancer has nowhere to send its traffic.
        const restartable = [apiSlots.length > 1 ? apiSlots[0] : null, slots.find((slot) => slot.role === 'worker')].filter(Boolean);
        restarted = rollingRestart(restartable, startedAt)
          .catch((err) => {
            crashed = { process: 'rolling restart', error: err.message };
          })
          .finally(() => {
            restart = 'done';
          });
      }
      if (outageState === 'before' && elapsed >= opts.outage.startMs) {
        outageState = 'down';
        log(`receiver "${outageName}" down`);
        void receivers.down(outageName);
      } else if (outageState === 'down' && elapsed >= opts.outage.endMs) {
        outageState = 'after';
        log(`receiver "${outageName}" back`);
        void receivers.up(outageName);
      }
      // Request k is due at timeOf(k): by `elapsed`, requests 0 to floor(count(elapsed)) are due,
      // one more than floor(count(elapsed)); those due before the load ends, ceil(count(loadMs)).
      // (Until 2026-12-02 it started floor(count) of them, so each request left one interval, 1/rate,
      // after its due time, and every latency in the reports carried those 20 ms at 50/s.)
      const due = Math.min(Math.floor(schedule.count(elapsed)) + 1, Math.ceil(schedule.count(opts.loadMs)));
      while (started < due) {
        const dueAt = startedAt + schedule.timeOf(started);
        started += 1;
        if (inFlight.size >= MAX_IN_FLIGHT) {
          skipped += 1;
          continue;
        }
        const p = traffic.start(chooseKind(), dueAt).catch((err) => recordError(ledger, `harness: ${err.message}`, err.stack));
        inFlight.add(p);
        p.finally(() => inFlight.delete(p));
      }
      if (now - lastReport >= 30_000) {
        lastReport = now;
        const errs = [...ledger.errors.values()].reduce((a, e) => a + e.count, 0);
        const health = slots.map((slot) => {
          const s = slot.samples.at(-1);
          return `${slots.length > 1 ? `${slot.name} ` : ''}RSS ${s?.rssMb.toFixed(0)} MB, heap ${s?.heapUsedMb?.toFixed(0) ?? '–'} MB, fds ${s?.fds}`;
        });
        log(`${Math.round(elapsed / 1000)} s: ${started} started, ${inFlight.size} in flight, ${ledger.decisions.size} decisions, ${errs} errors; ${health.join('; ')}`);
      }
      if (elapsed >= opts.loadMs) {
        clearInterval(timer);
        resolve();
      }
    }, 5);
  });
  const loadEndedMs = performance.now() - startedAt;
  phase = 'settle';
  log(`load over: ${started} requests started${skipped ? `, ${skipped} skipped (generator saturated)` : ''}; waiting for ${inFlight.size} in flight`);
  await Promise.all(inFlight);
  await restarted;
  if (outageState === 'down') await receivers.up(outageName);

  let completedAtEnd = 0;
  let resolved = [];
  if (!crashed) {
    completedAtEnd = await traffic.flushCompletions();
    resolved = await traffic.resolveUnresolved();
  }

  // Drain: wait (bounded) until no delivery of the tenant is pending. Our connections close first,
  // so the descriptor count after the drain shows what the server itself still holds.
  client.agent.destroy();
  phase = 'drain';
  const drainStarted = performance.now();
  let deliveryStates = {};
  while (!crashed && !exitedUnasked()) {
    deliveryStates = await pendingDeliveries(database, tenant.tenantId);
    if (!deliveryStates.pending) break;
    if (performance.now() - drainStarted > opts.drainMs) {
      log(`drain: ${deliveryStates.pending} deliveries still pending after ${Math.round(opts.drainMs / 1000)} s`);
      break;
    }
    await sleep(2000);
  }
  const drainMs = performance.now() - drainStarted;
  log(`drain: ${Math.round(drainMs / 1000)} s; deliveries ${JSON.stringify(deliveryStates)}; idle ${IDLE_SETTLE_MS / 1000} s before the last sample`);
  // Idle, so keep-alive sockets time out (the receivers close theirs after 30 s): what is still
  // open after that is held by the server itself.
  phase = 'idle';
  if (!crashed && !exitedUnasked()) await sleep(IDLE_SETTLE_MS);
  sampler.stop();
  if (!crashed && exitedUnasked()) crashed = { process: exitedUnasked().name, ...exitedUnasked().current.exitInfo() };
  // The API processes first (as a deploy drains the balancer), then the workers.
  for (const slot of [...apiSlots, ...slots.filter((x) => x.role === 'worker')]) slot.exit = await slot.current.stop();

  const received = await receivers.dump(path.join(dataDir, 'receivers.json'));
  await receivers.close();
  const findings = await reconcile({ database, tenant, ledger, endpoints, received });
  const serverLog = slots.map((slot) => readFileSync(slot.logFile, 'utf8')).join('\n');

  const result = analyse({
    opts,
    machine: { nproc: os.availableParallelism?.() ?? os.cpus().length, cpuModel: os.cpus()[0]?.model ?? 'unknown', node: process.version, loadAverageAtStart, allocatorEnv: allocatorEnv() },
    startedWall,
    loadEndedMs,
    drainMs,
    started,
    skipped,
    ledger,
    processes: slots.map((slot) => ({ name: slot.name, role: slot.role, pid: slot.current.pid, samples: slot.samples, exit: slot.exit, restarts: slot.restarts })),
    scaleOut: opts.scaleOut,
    findings,
    crashed,
    completedAtEnd,
    resolved,
    deliveryStates,
    serverLog,
    databaseKind: database.kind,
    staleSocketRetries: client.counters.staleSocketRetries,
  });
  // A name, or a path (absolute, or relative to soak/results/): the suite's run writes to its own temporary folder.
  const base = path.resolve(RESULTS_DIR, opts.out);
  await mkdir(path.dirname(base), { recursive: true });
  await writeFile(`${base}.json`, JSON.stringify(result, null, 2) + '\n');
  await writeFile(`${base}.md`, renderMarkdown(result));
  process.stdout.write(renderSummary(result) + `\nReport: ${path.relative(ROOT, base)}.{md,json}\n`);

  for (const fn of cleanups.reverse()) await fn().catch((err) => log(`cleanup failed: ${err.message}`));
  cleanups.length = 0;
  if (opts.keep) log(`kept ${dataDir}${database.name ? ` and database ${database.name}` : ''}`);
  process.exit(result.verdict.pass ? 0 : 1);
}

// Only when run (never on import), so nothing starts a soak by accident.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main().catch(async (err) => {
  log(`failed: ${err instanceof Error ? err.stack : String(err)}`);
  for (const fn of cleanups.reverse()) await fn().catch(() => {});
  process.exit(2);
});
