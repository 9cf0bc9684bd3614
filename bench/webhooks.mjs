#!/usr/bin/env node
/**
 * Webhook delivery throughput: deliveries per second from the real delivery worker (claim with a
 * lease, sign, POST over HTTPS, record the attempt) to a local HTTPS receiver, next to raw HTTPS
 * POSTs of the same bodies to the same receiver at the same concurrency, measured in the same run.
 * The ratio says what queueing in the database, signing and recording cost on top of the network.
 *
 *   npm run build && node bench/webhooks.mjs [--events N] [--endpoints N] [--db sqlite,postgres]
 *                                            [--delay-ms N] [--postgres URL]
 *
 * Every delivery is checked: the receiver must see each (event, endpoint) pair, every row must end
 * `delivered`, and nothing may be sent twice. Plain Node ESM over the compiled server (server/dist).
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, mkdir, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { generate } from 'selfsigned';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIST = pathToFileURL(path.join(ROOT, 'server', 'dist') + path.sep).href;
const { loadConfig } = await import(`${DIST}config/config.js`);
const { createContext } = await import(`${DIST}app/context.js`);
const { migrateToLatest } = await import(`${DIST}db/database.js`);
const { createLogger } = await import(`${DIST}lib/logger.js`);

const { values: opts } = parseArgs({
  options: {
    events: { type: 'string', default: '2000' },
    endpoints: { type: 'string', default: '4' },
    db: { type: 'string', default: 'sqlite,postgres' },
    'delay-ms': { type: 'string', default: '0' },
    postgres: { type: 'string', default: process.env.BENCH_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/postgres' },
    receiver: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (opts.help) {
  process.stdout.write('Usage: node bench/webhooks.mjs [--events N] [--endpoints N] [--db sqlite,postgres] [--delay-ms N] [--postgres URL]\n');
  process.exit(0);
}
const EVENTS = Number(opts.events);
const ENDPOINTS = Number(opts.endpoints);
const DELAY_MS = Number(opts['delay-ms']);
const PER_ENDPOINT = 8; // the worker's default per-endpoint cap
const CONCURRENCY = 64; // the worker's default slots
const IN_FLIGHT = Math.min(CONCURRENCY, PER_ENDPOINT * ENDPOINTS); // what the worker can have open at once

// ---------------------------------------------------------------------------------------------
// The receiver: HTTPS on loopback in its OWN process (so it does not share the sender's thread),
// answers 200 (after --delay-ms), counts what it got per (path, event id); driven over IPC.

async function runReceiverProcess() {
  const ca = await generate([{ name: 'commonName', value: 'bench CA' }], {
    keyType: 'ec', algorithm: 'sha256',
    extensions: [{ name: 'basicConstraints', cA: true, critical: true }, { name: 'keyUsage', keyCertSign: true, digitalSignature: true, critical: true }],
  });
  const leaf = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec', algorithm: 'sha256', ca: { cert: ca.cert, key: ca.private },
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] }, { name: 'extKeyUsage', serverAuth: true }],
  });
  const seen = new Map(); // "path event-id" -> count
  let total = 0;
  const server = https.createServer({ cert: leaf.cert, key: leaf.private, keepAliveTimeout: 30_000 }, (req, res) => {
    req.resume();
    req.on('end', () => {
      total += 1;
      const id = req.headers['svc-webhook-id'];
      if (id) {
        const key = `${req.url} ${id}`;
        seen.set(key, (seen.get(key) ?? 0) + 1);
      }
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
      };
      if (DELAY_MS > 0) setTimeout(answer, DELAY_MS);
      else answer();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.on('message', (msg) => {
    if (msg === 'reset') {
      seen.clear();
      total = 0;
      process.send({ reset: true });
    } else if (msg === 'stats') {
      process.send({ stats: { total, distinct: seen.size, duplicates: [...seen.values()].filter((c) => c > 1).length } });
    } else if (msg === 'exit') {
      server.closeAllConnections();
      server.close(() => process.exit(0));
    }
  });
  process.send({ ready: true, port: server.address().port, ca: ca.cert });
}

async function startReceiver() {
  const child = fork(fileURLToPath(import.meta.url), ['--receiver', '--delay-ms', String(DELAY_MS)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = (msg, key) =>
    new Promise((resolve) => {
      const on = (m) => {
        if (m && key in m) {
          child.off('message', on);
          resolve(m[key]);
        }
      };
      child.on('message', on);
      if (msg) child.send(msg);
    });
  const ready = await new Promise((resolve) => child.once('message', resolve));
  return {
    ca: ready.ca,
    url: (p) => `https://127.0.0.1:${ready.port}${p}`,
    reset: () => ask('reset', 'reset'),
    stats: () => ask('stats', 'stats'),
    close: async () => {
      child.send('exit');
      await once(child, 'exit');
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Raw HTTPS POSTs: same bodies, same receiver, same number in flight, keep-alive.

async function rawPosts(receiver, bodies) {
  const agent = new https.Agent({ keepAlive: true, ca: receiver.ca });
  let next = 0;
  const post = (body) =>
    new Promise((resolve, reject) => {
      const req = https.request(receiver.url('/raw'), { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < bodies.length) await post(bodies[next++]);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  return { requests: bodies.length, seconds, perSecond: bodies.length / seconds };
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

async function benchDeliveries(dialect, receiver) {
  const database = await openDatabase(dialect);
  const config = loadConfig({ ...database.env, DATA_ENCRYPTION_KEY: '22'.repeat(32), WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1', LOG_LEVEL: 'warn' });
  const ctx = createContext(config, { logger: createLogger('warn'), webhookDelivery: { ca: receiver.ca, pollIntervalMs: 50 } });
  try {
    await migrateToLatest(ctx.storage.db);
    const tenant = await ctx.tenants.createTenant({ name: 'Bench Lender' });
    const scope = { tenantId: tenant.tenantId, environment: 'sandbox' };
    for (let i = 0; i < ENDPOINTS; i++) await ctx.webhooks.createEndpoint(scope, { url: receiver.url(`/hook-${i}`) });
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
    const started = performance.now();
    ctx.webhookDelivery.start();
    for (;;) {
      const { n } = await ctx.storage.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll().as('n')).where('state', '=', 'delivered').executeTakeFirstOrThrow();
      if (Number(n) >= expected) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const seconds = (performance.now() - started) / 1000;
    await ctx.webhookDelivery.stop();
    const stats = ctx.webhookDelivery.stats();
    process.stderr.write(`  worker: ${JSON.stringify(stats)}\n`);

    const seen = await receiver.stats();
    const duplicates = seen.duplicates;
    if (seen.distinct !== expected) throw new Error(`${dialect}: receiver saw ${seen.distinct} distinct deliveries, expected ${expected}`);
    const sample = await ctx.storage.db.selectFrom('webhook_attempts').select('request_body').limit(1).executeTakeFirstOrThrow();
    return { dialect, deliveries: expected, seconds, perSecond: expected / seconds, duplicates, enqueueSeconds, sampleBody: sample.request_body };
  } finally {
    await ctx.close();
    await database.drop();
  }
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const receiver = await startReceiver();
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
      const bodies = Array.from({ length: deliveries.deliveries }, () => deliveries.sampleBody);
      await receiver.reset();
      const raw = await rawPosts(receiver, bodies);
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
    '| database | deliveries/s (worker) | raw HTTPS POSTs/s (same receiver) | ratio | duplicates | enqueue (fan-out) |',
    '|---|---|---|---|---|---|',
    ...results.map((r) => `| ${r.dialect} | ${r.deliveries.perSecond.toFixed(0)} | ${r.raw.perSecond.toFixed(0)} | ${(r.deliveries.perSecond / r.raw.perSecond).toFixed(2)} | ${r.deliveries.duplicates} | ${(r.deliveries.deliveries / r.deliveries.enqueueSeconds).toFixed(0)} deliveries/s |`),
  ];
  process.stdout.write(lines.join('\n') + '\n');
  await mkdir(path.join(ROOT, 'bench', 'results'), { recursive: true });
  await writeFile(path.join(ROOT, 'bench', 'results', 'webhooks.md'), lines.join('\n') + '\n');
  await writeFile(
    path.join(ROOT, 'bench', 'results', 'webhooks.json'),
    JSON.stringify({ events: EVENTS, endpoints: ENDPOINTS, inFlight: IN_FLIGHT, delayMs: DELAY_MS, results: results.map((r) => ({ ...r, deliveries: { ...r.deliveries, sampleBody: undefined } })) }, null, 2) + '\n',
  );
  process.exit(failed || results.length === 0 ? 1 : 0);
}

if (opts.receiver) await runReceiverProcess();
else await main();
