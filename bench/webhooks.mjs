#!/usr/bin/env node
/**
 * Webhook delivery throughput: deliveries per second from the real delivery worker (claim with a
 * lease, sign, POST over HTTPS, record the attempt) to a local HTTPS receiver, next to raw HTTPS
 * POSTs of the same request (a delivery's recorded headers and body) to the same receiver, with as
 * many in flight as the worker can have (endpoints x per-endpoint cap, at most its concurrency),
 * over keep-alive connections, measured in the same run. The ratio says what queueing in the
 * database, signing and recording cost on top of the network.
 *
 *   npm run build && node bench/webhooks.mjs [--events N] [--endpoints N] [--db sqlite,postgres]
 *                                            [--delay-ms N] [--idle-endpoints N] [--postgres URL]
 *                                            [--out NAME] [--dist DIR]
 *
 * CPU per delivery is reported next to the rates (it is much steadier than the rate on a shared
 * machine): this process (the worker, plus the bench's check of the worker's own counters every
 * 5 ms, which puts nothing on the database), the PostgreSQL backends serving the bench database,
 * and the receiver. Profile the worker with
 * `node --cpu-prof --cpu-prof-dir DIR bench/webhooks.mjs ...` (the receiver writes its own profile).
 *
 * Every delivery is checked: the receiver must see each (event, endpoint) pair, every row must end
 * `delivered`, and nothing may be sent twice. Plain Node ESM over the compiled server (server/dist).
 */
import { mkdtemp, rm, mkdir, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import pg from 'pg';
import { processCpuMs } from './lib/proc.mjs';
import { startReceiverProcess } from './lib/receiver.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const { values: opts } = parseArgs({
  options: {
    // 40,000 deliveries at 4 endpoints: sustained long enough that what builds up over a run (dead
    // row versions on PostgreSQL, the WAL on SQLite) shows in the figure (ADR 0021).
    events: { type: 'string', default: '10000' },
    endpoints: { type: 'string', default: '4' },
    db: { type: 'string', default: 'sqlite,postgres' },
    'delay-ms': { type: 'string', default: '0' },
    postgres: { type: 'string', default: process.env.BENCH_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/postgres' },
    out: { type: 'string', default: 'webhooks' },
    dist: { type: 'string', default: path.join(ROOT, 'server', 'dist') },
    'sql-stats': { type: 'boolean', default: false },
    'idle-endpoints': { type: 'string', default: '0' },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (opts.help) {
  process.stdout.write(`Usage: node bench/webhooks.mjs [options]
  --events N         events to enqueue (default 10000); each goes to every endpoint
  --endpoints N      receiver endpoints (default 4); the worker has at most 8 in flight per endpoint, 64 in all
  --db LIST          sqlite,postgres (default both; PostgreSQL is skipped when unreachable)
  --delay-ms N       the receiver answers after N ms (default 0)
  --idle-endpoints N also N active endpoints of other lenders with nothing to deliver (default 0):
                     what a claim costs in a service with many endpoints (ADR 0025)
  --postgres URL     admin URL (default $BENCH_POSTGRES_URL or postgres://root@127.0.0.1:5432/postgres)
  --out NAME         result files bench/results/NAME.{md,json} (default webhooks); a NAME with a / is a path prefix
  --dist DIR         the compiled server to load (default server/dist), e.g. a copy of another build for A/B runs
  --sql-stats        count the worker's SQL statements during the deliveries (per statement shape: count,
                     per 1,000 deliveries, time until answered); adds a little overhead of its own
Profile: node --cpu-prof --cpu-prof-dir DIR bench/webhooks.mjs ...
`);
  process.exit(0);
}
// The receiver process loads nothing of the server.
const serverModules = await loadServer(path.resolve(opts.dist));
async function loadServer(dir) {
  const dist = pathToFileURL(dir + path.sep).href;
  return {
    ...(await import(`${dist}config/config.js`)),
    ...(await import(`${dist}app/context.js`)),
    ...(await import(`${dist}db/database.js`)),
    ...(await import(`${dist}lib/logger.js`)),
    ...(await import(`${dist}modules/webhooks/webhooks.service.js`)),
  };
}
const EVENTS = Number(opts.events);
const ENDPOINTS = Number(opts.endpoints);
const DELAY_MS = Number(opts['delay-ms']);
const PER_ENDPOINT = 8; // the worker's default per-endpoint cap
const CONCURRENCY = 64; // the worker's default slots
const IN_FLIGHT = Math.min(CONCURRENCY, PER_ENDPOINT * ENDPOINTS); // what the worker can have open at once

/** CPU ms of this process so far (user + system). */
function ownCpuMs() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

// ---------------------------------------------------------------------------------------------
// Raw HTTPS POSTs: the same request a delivery sent (its recorded headers, signature included, and
// body), to the same receiver, with as many in flight as the worker can have at most, keep-alive.

async function rawPosts(receiver, sample, requests) {
  const agent = new https.Agent({ keepAlive: true, ca: receiver.ca });
  const headers = { ...sample.headers, 'Content-Length': String(Buffer.byteLength(sample.body)) };
  let sent = 0;
  const post = () =>
    new Promise((resolve, reject) => {
      const req = https.request(receiver.url('/raw'), { method: 'POST', agent, headers }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(sample.body);
    });
  const cpu0 = ownCpuMs();
  const receiverCpu0 = receiver.cpuMs();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (sent < requests) {
        sent += 1;
        await post();
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuMsPer = (ownCpuMs() - cpu0) / requests;
  const receiverCpuMsPer = receiverCpu0 === null ? null : (receiver.cpuMs() - receiverCpu0) / requests;
  agent.destroy();
  const { connections, total } = await receiver.stats();
  if (total !== requests) throw new Error(`raw POSTs: the receiver counted ${total}, expected ${requests}`);
  return { requests, seconds, perSecond: requests / seconds, cpuMsPer, receiverCpuMsPer, connections };
}

// ---------------------------------------------------------------------------------------------
// Webhook deliveries through the real worker.

async function openDatabase(dialect) {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cds-bench-webhooks-'));
  if (dialect === 'sqlite') return { env: { CDS_DATA_DIR: dataDir }, drop: () => rm(dataDir, { recursive: true, force: true }) };
  const name = `cds_bench_webhooks_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: opts.postgres, connectionTimeoutMillis: 2_000 });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(opts.postgres);
  url.pathname = `/${name}`;
  return {
    name,
    env: { CDS_DATA_DIR: dataDir, DATABASE_URL: url.toString() },
    async drop() {
      const c = new pg.Client({ connectionString: opts.postgres });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function postgresReachable() {
  const c = new pg.Client({ connectionString: opts.postgres, connectionTimeoutMillis: 2_000 });
  try {
    await c.connect();
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** CPU ms used so far by the PostgreSQL backends connected to the bench database (null on SQLite or without /proc). */
async function postgresBackendsCpuMs(databaseName) {
  if (!databaseName) return null;
  const c = new pg.Client({ connectionString: opts.postgres });
  await c.connect();
  try {
    const { rows } = await c.query('select pid from pg_stat_activity where datname = $1', [databaseName]);
    let total = 0;
    for (const { pid } of rows) total += processCpuMs(pid) ?? 0;
    return { total, pids: rows.length };
  } finally {
    await c.end();
  }
}

/**
 * --sql-stats: wrap pg's Client#query and better-sqlite3's statements (the same module instances the
 * server's build loads, from the root node_modules) to count statements by shape while `on`.
 */
const sqlStats = { on: false, shapes: new Map() };
function shapeOf(text) {
  return text.replace(/\s+/g, ' ').replace(/\((\$\d+|\?)(, (\$\d+|\?))*\)/g, '(…)').replace(/(\(…\), )+\(…\)/g, '(…), …').slice(0, 150);
}
function countStatement(text, ms, cpuMs = null) {
  if (!sqlStats.on) return;
  const key = shapeOf(text);
  const entry = sqlStats.shapes.get(key) ?? { count: 0, ms: 0, cpuMs: null };
  entry.count += 1;
  entry.ms += ms;
  if (cpuMs !== null) entry.cpuMs = (entry.cpuMs ?? 0) + cpuMs;
  sqlStats.shapes.set(key, entry);
}
if (opts['sql-stats']) {
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, values, callback) {
    const text = typeof config === 'string' ? config : config?.text;
    const started = performance.now();
    const result = query.call(this, config, values, callback);
    if (text && result && typeof result.then === 'function') result.then(() => countStatement(text, performance.now() - started), () => undefined);
    return result;
  };
  const BetterSqlite = createRequire(import.meta.url)('better-sqlite3');
  const probe = new BetterSqlite(':memory:');
  const statementProto = Object.getPrototypeOf(probe.prepare('select 1'));
  probe.close();
  for (const method of ['run', 'get', 'all']) {
    const original = statementProto[method];
    // SQLite runs on this thread, synchronously: its CPU time is measured too (a busy machine
    // inflates the wall time by whatever else it runs meanwhile).
    statementProto[method] = function (...args) {
      const started = performance.now();
      const cpu = process.cpuUsage();
      try {
        return original.apply(this, args);
      } finally {
        const used = process.cpuUsage(cpu);
        countStatement(this.source, performance.now() - started, (used.user + used.system) / 1000);
      }
    };
  }
}

function printSqlStats(dialect, deliveries) {
  const rows = [...sqlStats.shapes].sort((a, b) => b[1].ms - a[1].ms);
  const total = rows.reduce((sum, [, e]) => sum + e.count, 0);
  const ms = rows.reduce((sum, [, e]) => sum + e.ms, 0);
  process.stderr.write(`  ${dialect} SQL during deliveries: ${total} statements (${((total / deliveries) * 1000).toFixed(0)} per 1,000 deliveries), ${ms.toFixed(0)} ms until answered in all\n`);
  const cpu = rows.reduce((sum, [, e]) => sum + (e.cpuMs ?? 0), 0);
  if (cpu > 0) process.stderr.write(`  (SQLite: ${cpu.toFixed(0)} ms of CPU in all, ${((cpu / deliveries) * 1000).toFixed(0)} µs per delivery)\n`);
  for (const [shape, e] of rows) {
    const cpuPart = e.cpuMs === null ? '' : ` ${e.cpuMs.toFixed(0).padStart(6)} ms CPU`;
    process.stderr.write(`    ${String(e.count).padStart(6)} ${((e.count / deliveries) * 1000).toFixed(0).padStart(5)}/1k ${e.ms.toFixed(0).padStart(6)} ms${cpuPart}  ${shape}\n`);
  }
  sqlStats.shapes.clear();
}

async function benchDeliveries(dialect, receiver) {
  const { loadConfig, createContext, migrateToLatest, createLogger, openStorage } = serverModules;
  const database = await openDatabase(dialect);
  const config = loadConfig({ ...database.env, DATA_ENCRYPTION_KEY: '22'.repeat(32), WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1', LOG_LEVEL: 'warn' });
  // SQLite: the storage as the server opens it, plus a report of each background WAL checkpoint
  // (how much the deliveries write to the WAL, and whether a TRUNCATE had to stop the writer).
  // A checkpoint reports the WAL's frames so far (since the WAL last started over), so the frames
  // written in between are the growth from one report to the next.
  const wal = { checkpoints: 0, frames: 0, last: 0, truncates: 0, on: false };
  const storage =
    dialect === 'sqlite'
      ? openStorage({
          databaseUrl: null,
          dataDir: config.dataDir,
          checkpoints: {
            onCheckpoint: (r) => {
              const grown = r.frames >= wal.last ? r.frames - wal.last : r.frames;
              wal.last = r.truncated ? 0 : r.frames;
              if (!wal.on) return;
              wal.checkpoints += 1;
              wal.frames += grown;
              if (r.truncated) wal.truncates += 1;
            },
          },
        })
      : undefined;
  const ctx = createContext(config, { logger: createLogger('warn'), webhookDelivery: { ca: receiver.ca, pollIntervalMs: 50 }, ...(storage ? { storage } : {}) });
  try {
    await migrateToLatest(ctx.storage.db);
    const tenant = await ctx.tenants.createTenant({ name: 'Bench Lender' });
    const scope = { tenantId: tenant.tenantId, environment: 'sandbox' };
    for (let i = 0; i < ENDPOINTS; i++) await ctx.webhooks.createEndpoint(scope, { url: receiver.url(`/hook-${i}`) });
    // Other lenders' endpoints with nothing to deliver: what a claim costs in a service with many.
    const idle = Number(opts['idle-endpoints']);
    const perLender = serverModules.MAX_ENDPOINTS_PER_ENVIRONMENT;
    let otherScope = null;
    for (let i = 0; i < idle; i++) {
      // A new lender whenever the last one has as many endpoints as an environment may.
      if (i % perLender === 0) otherScope = { tenantId: (await ctx.tenants.createTenant({ name: `Idle Lender ${i / perLender}` })).tenantId, environment: 'sandbox' };
      await ctx.webhooks.createEndpoint(otherScope, { url: receiver.url(`/idle-${i}`) });
    }
    // A realistic payload: the shape of decision.finalized.
    const data = (i) => ({
      decision_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, application_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      outcome: 'approved', score: 712, confidence: 0.82, recommended_amount: 120, recommended_rate_pct: 0, risk_grade: 'B', reason_codes: [], engine_version: 'bnpl-scorecard-v1+bnpl-policy-v1',
    });
    const enqueueStarted = performance.now();
    for (let i = 0; i < EVENTS; i += 250) {
      const batch = Array.from({ length: Math.min(250, EVENTS - i) }, (_, k) => ({ type: 'decision.finalized', subjectId: null, data: data(i + k) }));
      await ctx.storage.db.transaction().execute((trx) => ctx.outbox.append(trx, scope, batch));
    }
    const enqueueSeconds = (performance.now() - enqueueStarted) / 1000;
    const expected = EVENTS * ENDPOINTS;

    await receiver.reset();
    // The pool's connections exist by now (migrations, enqueue); a backend opened during the run and
    // closed before its end would be missed, which the pool's idle time-out (longer than a run) avoids.
    const pg0 = await postgresBackendsCpuMs(database.name);
    const cpu0 = ownCpuMs();
    const usage0 = process.cpuUsage();
    const receiverCpu0 = receiver.cpuMs();
    // The worker's event loop, which a server of role `all` shares with the API: how much of it the
    // deliveries take, and how long anything else queued on it would wait (ADR 0048).
    const elu0 = performance.eventLoopUtilization();
    const loopDelay = monitorEventLoopDelay({ resolution: 1 });
    loopDelay.enable();
    const started = performance.now();
    sqlStats.on = true;
    wal.on = true;
    // For profiles: the deliveries' span on the monotonic clock the .cpuprofile's timestamps use (µs).
    const phaseStart = process.hrtime.bigint() / 1000n;
    ctx.webhookDelivery.start();
    // Progress from the worker's own counters (results written), so the measurement puts no load of
    // its own on the database; the stored states are checked once it is done.
    for (;;) {
      const progress = ctx.webhookDelivery.stats();
      if (progress.delivered >= expected) break;
      // An attempt that did not deliver would be retried a minute later: report it rather than wait.
      if (progress.attempts > progress.delivered) throw new Error(`${dialect}: ${progress.attempts - progress.delivered} attempts did not deliver: ${JSON.stringify(progress)}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    const seconds = (performance.now() - started) / 1000;
    loopDelay.disable();
    const elu = performance.eventLoopUtilization(elu0);
    const eventLoop = { busy: elu.utilization, msPerDelivery: elu.active / expected, delayP99Ms: loopDelay.percentile(99) / 1e6, delayMaxMs: loopDelay.max / 1e6 };
    sqlStats.on = false;
    wal.on = false;
    if (dialect === 'sqlite') process.stderr.write(`  WAL: ${wal.frames} pages written (${((wal.frames * 4096) / expected / 1024).toFixed(1)} KiB per delivery at 4 KiB pages), ${wal.checkpoints} background checkpoints, ${wal.truncates} of them TRUNCATE\n`);
    process.stderr.write(`  deliveries span (µs, monotonic): ${phaseStart} ${process.hrtime.bigint() / 1000n}\n`);
    const cpuMsPer = (ownCpuMs() - cpu0) / expected;
    const usage = process.cpuUsage(usage0);
    process.stderr.write(`  worker process CPU per delivery: user ${(usage.user / 1000 / expected).toFixed(3)} ms, system ${(usage.system / 1000 / expected).toFixed(3)} ms\n`);
    const receiverCpuMsPer = receiverCpu0 === null ? null : (receiver.cpuMs() - receiverCpu0) / expected;
    const pg1 = await postgresBackendsCpuMs(database.name);
    const postgresCpuMsPer = pg0 && pg1 ? (pg1.total - pg0.total) / expected : null;
    await ctx.webhookDelivery.stop();
    const stats = ctx.webhookDelivery.stats();
    process.stderr.write(`  worker: ${JSON.stringify(stats)}\n`);
    if (opts['sql-stats']) printSqlStats(dialect, expected);

    const { n: stored } = await ctx.storage.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll().as('n')).where('state', '=', 'delivered').executeTakeFirstOrThrow();
    if (Number(stored) !== expected) throw new Error(`${dialect}: ${stored} deliveries stored as delivered, expected ${expected}`);
    const seen = await receiver.stats();
    const duplicates = seen.duplicates;
    if (seen.distinct !== expected) throw new Error(`${dialect}: receiver saw ${seen.distinct} distinct deliveries, expected ${expected}`);
    const sample = await ctx.storage.db.selectFrom('webhook_attempts').select(['request_body', 'request_headers_json']).limit(1).executeTakeFirstOrThrow();
    return {
      dialect, deliveries: expected, seconds, perSecond: expected / seconds, duplicates, connections: seen.connections, enqueueSeconds, cpuMsPer, postgresCpuMsPer, receiverCpuMsPer, stats, eventLoop,
      sample: { body: sample.request_body, headers: JSON.parse(sample.request_headers_json) },
    };
  } finally {
    await ctx.close();
    await database.drop();
  }
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const receiver = await startReceiverProcess({ delayMs: DELAY_MS });
  const dialects = opts.db.split(',').map((d) => d.trim()).filter(Boolean);
  const results = [];
  let failed = false;
  try {
    for (const dialect of dialects) {
      if (dialect === 'postgres' && !(await postgresReachable())) {
        process.stderr.write(`PostgreSQL unreachable at ${opts.postgres}: skipped\n`);
        continue;
      }
      process.stderr.write(`${dialect}: ${EVENTS} events x ${ENDPOINTS} endpoints...\n`);
      const deliveries = await benchDeliveries(dialect, receiver);
      // The raw baseline right after, with the same number of requests and bodies of the same size.
      await receiver.reset();
      const raw = await rawPosts(receiver, deliveries.sample, deliveries.deliveries);
      results.push({ dialect, deliveries, raw });
    }
  } catch (err) {
    failed = true;
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  } finally {
    await receiver.close();
  }

  const lines = [
    `Webhook delivery throughput (${new Date().toISOString()}, ${os.cpus().length} CPU ${os.cpus()[0]?.model ?? ''}, Node ${process.version})`,
    `${EVENTS} events x ${ENDPOINTS} endpoints; ${IN_FLIGHT} in flight at most (per-endpoint cap ${PER_ENDPOINT}); receiver delay ${DELAY_MS} ms`,
    '',
    '| database | deliveries/s (worker) | raw HTTPS POSTs/s (same receiver) | ratio | duplicates | enqueue (fan-out) | CPU ms/delivery: worker (+ PostgreSQL) | CPU ms/raw POST: client | receiver CPU ms/request: deliveries, raw | claims, result writes | TLS connections: deliveries, raw | worker\'s event loop: busy, ms/delivery, delay p99 / max ms |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...results.map((r) => {
      const d = r.deliveries;
      const ms = (v) => (v === null || v === undefined ? '–' : v.toFixed(3));
      return `| ${r.dialect} | ${d.perSecond.toFixed(0)} | ${r.raw.perSecond.toFixed(0)} | ${(d.perSecond / r.raw.perSecond).toFixed(2)} | ${d.duplicates} | ${(d.deliveries / d.enqueueSeconds).toFixed(0)} deliveries/s | ${ms(d.cpuMsPer)}${d.postgresCpuMsPer === null ? '' : ` (+ ${ms(d.postgresCpuMsPer)})`} | ${ms(r.raw.cpuMsPer)} | ${ms(d.receiverCpuMsPer)}, ${ms(r.raw.receiverCpuMsPer)} | ${d.stats.claims}, ${d.stats.writes} | ${d.connections}, ${r.raw.connections} | ${(d.eventLoop.busy * 100).toFixed(0)}%, ${ms(d.eventLoop.msPerDelivery)}, ${d.eventLoop.delayP99Ms.toFixed(1)} / ${d.eventLoop.delayMaxMs.toFixed(1)} |`;
    }),
  ];
  process.stdout.write(lines.join('\n') + '\n');
  const prefix = opts.out.includes('/') ? path.resolve(opts.out) : path.join(ROOT, 'bench', 'results', opts.out);
  await mkdir(path.dirname(prefix), { recursive: true });
  await writeFile(`${prefix}.md`, lines.join('\n') + '\n');
  await writeFile(
    `${prefix}.json`,
    JSON.stringify({ events: EVENTS, endpoints: ENDPOINTS, inFlight: IN_FLIGHT, delayMs: DELAY_MS, results: results.map((r) => ({ ...r, deliveries: { ...r.deliveries, sample: undefined } })) }, null, 2) + '\n',
  );
  process.exit(failed || results.length === 0 ? 1 : 0);
}

await main();
