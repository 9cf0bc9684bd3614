#!/usr/bin/env node
/**
 * The upper bound of one idea for SQLite creates: the writer connection in a worker thread, sent
 * a group-commit batch of creates as one message (units as data), instead of running every
 * statement on the event loop (docs/performance.md, "thirteenth session" under "Where a create
 * spends its time"). Not a design, a measurement of what it could take off the event loop.
 *
 *   npm run build && node bench/writer-thread-bound.mjs [--batch N] [--creates N] [--rounds N]
 *
 * 1. Captures the statements of one real soft-tier create: the server's own context and HTTP app
 *    in this process on a fresh SQLite database, a tenant from `cds tenants create`'s service, and
 *    the writer's statements between the group commit's `savepoint unit` and the unit's end
 *    recorded with their parameters (better-sqlite3's prepare, wrapped).
 * 2. Replays that unit with fresh ids (decision, application, events) into copies of that
 *    database, in batches as the group commit makes them (begin immediate, a savepoint per unit,
 *    commit; the connection set up as the server's writer), either on this thread ("inline") or
 *    posted to a worker thread that owns its own connection ("thread"), two batches in flight.
 * Reports, per create: the main thread's active time (event-loop utilisation: what the HTTP
 * server would no longer spend), and the process's CPU (both threads: what the machine pays).
 * The WAL's fsync is left out of both (the server does it on the thread pool, ADR 0017).
 */
import { createRequire } from 'node:module';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3');
const DIST = pathToFileURL(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'server', 'dist') + path.sep).href;

/**
 * A connection set up as the server's writer (`configureSqliteWriter`: WAL at NORMAL, foreign keys,
 * the statement journal in memory), with no checkpoint on it: the server checkpoints on a thread
 * of its own (wal-checkpointer.ts), so neither mode here pays for one.
 */
async function openConnection(file) {
  const { configureSqliteWriter } = await import(`${DIST}db/database.js`);
  const db = new Database(file);
  if (!configureSqliteWriter(db)) throw new Error(`${file}: not in WAL mode`);
  db.pragma('wal_autocheckpoint = 0');
  return db;
}

/** Runs batches of units (lists of [sql, parameters, isRead]) as the group commit would. */
function batchRunner(db) {
  const cache = new Map();
  const statement = (sql) => {
    let s = cache.get(sql);
    if (!s) cache.set(sql, (s = db.prepare(sql)));
    return s;
  };
  return (units) => {
    const results = [];
    statement('begin immediate').run();
    for (const unit of units) {
      statement('savepoint unit').run();
      let last = null;
      for (const [sql, parameters, read] of unit) last = read ? statement(sql).all(parameters) : statement(sql).run(parameters);
      statement('release unit').run();
      results.push(Array.isArray(last) ? last.length : last.changes);
    }
    statement('commit').run();
    return results;
  };
}

if (!isMainThread) {
  const run = batchRunner(await openConnection(workerData.file));
  parentPort.on('message', (units) => parentPort.postMessage(run(units)));
  parentPort.postMessage('ready');
} else {
  await main();
}

async function main() {
  const { values: opts } = parseArgs({
    options: {
      batch: { type: 'string', default: '18' },
      creates: { type: 'string', default: '6000' },
      rounds: { type: 'string', default: '3' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (opts.help) {
    process.stdout.write('Usage: node bench/writer-thread-bound.mjs [--batch N (18, about what a flat-out group commit makes)] [--creates N (6000)] [--rounds N (3)]\n');
    return;
  }
  const BATCH = Number(opts.batch);
  const CREATES = Math.ceil(Number(opts.creates) / BATCH) * BATCH;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cds-writer-thread-'));
  try {
    const { file, unit } = await captureCreate(dir);
    console.log(`captured one create's unit: ${unit.length} statements, ${JSON.stringify(unit.map((u) => u[1])).length} bytes of parameters`);
    for (const [sql] of unit) console.log(`  ${sql.replace(/\s+/g, ' ').slice(0, 90)}`);
    for (let round = 1; round <= Number(opts.rounds); round++) {
      for (const mode of ['inline', 'thread']) {
        const copy = path.join(dir, `replay-${mode}-${round}.sqlite`);
        copyFileSync(file, copy);
        const r = await replay(mode, copy, unit, BATCH, CREATES);
        console.log(`round ${round} ${mode.padEnd(6)} batches of ${BATCH}: ${CREATES} creates in ${r.wallMs.toFixed(0)} ms; main thread active ${r.mainUs.toFixed(1)} µs per create; process CPU ${r.cpuUs.toFixed(1)} µs per create`);
        for (const suffix of ['', '-wal', '-shm']) rmSync(copy + suffix, { force: true });
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One real create through the server's HTTP app; returns the database file and the unit's statements. */
async function captureCreate(dir) {
  const { loadConfig } = await import(`${DIST}config/config.js`);
  const { createContext } = await import(`${DIST}app/context.js`);
  const { migrateToLatest } = await import(`${DIST}db/database.js`);
  const { createLogger } = await import(`${DIST}lib/logger.js`);
  const { buildApp } = await import(`${DIST}http/build-app.js`);

  let capturing = false;
  const recorded = [];
  const prepare = Database.prototype.prepare;
  Database.prototype.prepare = function (sql) {
    const stmt = prepare.call(this, sql);
    if (this.readonly) return stmt;
    for (const method of ['run', 'all', 'get']) {
      const original = stmt[method];
      stmt[method] = function (...args) {
        if (capturing) recorded.push([sql, args.length === 1 && Array.isArray(args[0]) ? args[0] : args, method !== 'run']);
        return original.apply(this, args);
      };
    }
    return stmt;
  };

  const config = loadConfig({ CDS_DATA_DIR: dir, DATA_ENCRYPTION_KEY: '22'.repeat(32), LOG_LEVEL: 'warn', RATE_LIMIT_SANDBOX_PER_S: '100000' });
  const ctx = createContext(config, { logger: createLogger('warn') });
  await migrateToLatest(ctx.storage.db);
  const tenant = await ctx.tenants.createTenant({ name: 'Bench Lender' });
  const soft = tenant.sandbox.consumers.find((c) => c.tier === 'soft');
  const app = await buildApp(ctx);
  const create = (cents) =>
    app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { authorization: `Bearer ${tenant.sandbox.apiKey}`, 'content-type': 'application/json' },
      payload: `{"consumer":{"consumer_id":"${soft.consumerId}"},"transaction":{"amount":"${(cents / 100).toFixed(2)}","currency":"USD","merchant_name":"Bench Merchant","merchant_category":"electronics"}}`,
    });
  // Enough earlier decisions that the history read and the indexes are not empty.
  for (let i = 0; i < 60; i++) {
    const r = await create(5_000 + i * 37);
    if (r.statusCode !== 200) throw new Error(`create answered ${r.statusCode}: ${r.body}`);
  }
  capturing = true;
  const answer = await create(12_345);
  capturing = false;
  if (answer.statusCode !== 200) throw new Error(`create answered ${answer.statusCode}: ${answer.body}`);
  await app.close();
  await ctx.close();
  Database.prototype.prepare = prepare;

  const start = recorded.findIndex(([sql]) => sql.startsWith('savepoint unit'));
  // A batch of one ends with its COMMIT; in a larger one each unit ends with `release unit`.
  const end = recorded.findIndex(([sql], i) => i > start && (sql.startsWith('release unit') || sql.startsWith('commit')));
  if (start < 0 || end < 0) throw new Error(`no unit among the captured statements: ${recorded.map((r) => r[0].slice(0, 40)).join(' | ')}`);
  const unit = recorded.slice(start + 1, end);
  const file = path.join(dir, 'cds.sqlite');
  const db = new Database(file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { file, unit };
}

/** The captured unit with fresh ids: a decision, its application, its events (subject = the decision). */
function freshUnit(unit) {
  const decisionId = randomUUID();
  const applicationId = randomUUID();
  return unit.map(([sql, parameters, read]) => {
    const v = parameters.slice();
    if (sql.startsWith('insert into "decisions"')) {
      v[0] = decisionId;
      v[1] = applicationId;
    } else if (sql.startsWith('insert into "decision_audits"')) v[0] = decisionId;
    else if (sql.startsWith('insert into "events"')) {
      for (let k = 0; k < v.length; k += 7) {
        v[k] = randomUUID();
        v[k + 4] = decisionId;
      }
    }
    return [sql, v, read];
  });
}

async function replay(mode, file, unit, batchSize, creates) {
  const batches = Array.from({ length: creates / batchSize }, () => Array.from({ length: batchSize }, () => freshUnit(unit)));
  // Connections opened (and the thread started, its modules loaded) before the clock starts.
  const connection = mode === 'inline' ? await openConnection(file) : null;
  const worker = mode === 'thread' ? new Worker(fileURLToPath(import.meta.url), { workerData: { file } }) : null;
  if (worker) await new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject));
  const elu0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  if (connection) {
    const run = batchRunner(connection);
    for (const b of batches) run(b);
  } else {
    let sent = 0;
    let done = 0;
    await new Promise((resolve, reject) => {
      worker.on('error', reject);
      worker.on('message', () => {
        done += 1;
        if (sent < batches.length) worker.postMessage(batches[sent++]);
        if (done === batches.length) resolve();
      });
      for (let i = 0; i < 2 && sent < batches.length; i++) worker.postMessage(batches[sent++]);
    });
  }
  const wallMs = performance.now() - t0;
  const elu = performance.eventLoopUtilization(elu0);
  const cpu = process.cpuUsage(cpu0);
  connection?.close();
  await worker?.terminate();
  return { wallMs, mainUs: (elu.active * 1000) / creates, cpuUs: (cpu.user + cpu.system) / creates };
}
