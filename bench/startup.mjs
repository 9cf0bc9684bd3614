#!/usr/bin/env node
/**
 * Start-up on an existing database (issue 10: ready in under 1 s), measured more finely than the
 * full bench's single restart (bench/run.mjs step 7):
 *
 *   node bench/startup.mjs [--db sqlite,postgres] [--runs N] [--decisions N] [--cli A.js,B.js]
 *
 * How it works: per database it makes one data directory (SQLite) or one throw-away PostgreSQL
 * database, starts the server once to migrate it, creates a tenant (`cds tenants create --json`)
 * and fills it with --decisions soft-tier decisions, then stops it. Then, --runs times, it spawns
 * `node <cli> serve` on that existing database exactly as a user would (role all, LOG_LEVEL=info),
 * polls GET /healthz every 2 ms and records: spawn to the first 200 from /healthz, the server's own
 * ready line (startupMs, sinceProcessStartMs, startupCpuMs), the process's CPU at that moment from
 * /proc, and then the first create and first poll the new process answers, and a second of each
 * (what lazily loaded work costs the first real requests). Then SIGTERM, and the process must exit 0.
 *
 * With several --cli paths (e.g. a copy of the branch point's build and the current one) the runs
 * alternate between them, A B A B ..., so the shared machine's drift hits both alike: compare the
 * medians side by side. Results go to stdout (a table) and, with --out FILE, as JSON.
 */
import { spawn, execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { withPg } from './lib/pg.mjs';
import { freePort, processCpuMs } from './lib/proc.mjs';
import { serverEnv } from './run.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DEFAULT_CLI = path.join(ROOT, 'server', 'dist', 'cli', 'main.js');

const USAGE = `Usage: node bench/startup.mjs [options]   (build first: npm run build)

  --db LIST          sqlite,postgres (default sqlite,postgres; postgres skipped when unreachable)
  --runs N           restarts per server build (default 7)
  --decisions N      decisions created before the restarts (default 500)
  --cli LIST         comma-separated server entry points to compare, alternating run by run
                     (default server/dist/cli/main.js)
  --postgres URL     server to create the throw-away database on
                     (default $BENCH_POSTGRES_URL or postgres://root@127.0.0.1:5432/postgres)
  --cpu-prof DIR     run each restart under node --cpu-prof, profiles into DIR
  --out FILE         also write the raw runs and medians as JSON
  -h, --help         this text
`;

const { values: opts } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite,postgres' },
    runs: { type: 'string', default: '7' },
    decisions: { type: 'string', default: '500' },
    cli: { type: 'string' },
    postgres: { type: 'string', default: process.env.BENCH_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/postgres' },
    'cpu-prof': { type: 'string' },
    out: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opts.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const clis = (opts.cli ? opts.cli.split(',') : [DEFAULT_CLI]).map((c) => path.resolve(c));
const runs = Number(opts.runs);
const decisionCount = Number(opts.decisions);
const log = (line) => process.stderr.write(`${line}\n`);

/** One request on a fresh connection (no agent: the first request pays its connection like a new client). */
function request(port, method, urlPath, { headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, headers, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started }));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
    if (body !== undefined) req.end(body);
    else req.end();
  });
}

/** Spawns `serve`, polls /healthz every 2 ms; resolves when it answers 200. */
async function start(cli, env, { cpuProfDir } = {}) {
  const nodeArgs = cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', cpuProfDir] : [];
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, cli, 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c) => (output += c));
  child.stderr.on('data', (c) => (output += c));
  let exit = null;
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve((exit = { code, signal }))));
  const port = Number(env.PORT);
  for (;;) {
    if (exit) throw new Error(`server exited during start-up ${JSON.stringify(exit)}:\n${output}`);
    try {
      const r = await request(port, 'GET', '/healthz');
      if (r.status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (performance.now() - spawnedAt > 30_000) {
      child.kill('SIGKILL');
      throw new Error(`not ready after 30 s:\n${output}`);
    }
    await sleep(2);
  }
  const spawnToReadyMs = performance.now() - spawnedAt;
  const cpuAtReadyMs = processCpuMs(child.pid);
  const readyLine = () => {
    for (const line of output.split('\n')) {
      if (!line.includes('credit decisioning service ready')) continue;
      try {
        const j = JSON.parse(line);
        return { startupMs: j.startupMs, sinceProcessStartMs: j.sinceProcessStartMs, startupCpuMs: j.startupCpuMs };
      } catch {
        /* not JSON */
      }
    }
    return {};
  };
  const stop = async () => {
    if (!exit) child.kill('SIGTERM');
    const res = await Promise.race([exited, sleep(30_000, null)]);
    if (res === null) {
      child.kill('SIGKILL');
      await exited;
      throw new Error('server did not stop within 30 s of SIGTERM');
    }
    return exit;
  };
  return { pid: child.pid, port, spawnToReadyMs, cpuAtReadyMs, readyLine, stop, output: () => output };
}

function cds(cli, env, args) {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, [cli, ...args], { cwd: ROOT, env, timeout: 60_000 }, (err, out, errOut) =>
      err ? reject(new Error(`cds ${args.join(' ')} failed: ${err.message}\n${errOut}`)) : resolve(out),
    ),
  );
}

const createBody = (consumerId, cents) =>
  JSON.stringify({
    consumer: { consumer_id: consumerId },
    transaction: { amount: `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`, currency: 'USD', merchant_name: 'Start-up Bench', merchant_category: 'electronics' },
  });

async function createDecision(port, tenant, cents) {
  const r = await request(port, 'POST', '/v1/decisions/bnpl', {
    headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
    body: createBody(tenant.softConsumerId, cents),
  });
  if (r.status !== 200 || !r.body.includes('"outcome":"approved"')) throw new Error(`create answered ${r.status}: ${r.body.slice(0, 200)}`);
  return { ms: r.ms, id: JSON.parse(r.body).decision_id };
}

async function pollDecision(port, tenant, id) {
  const r = await request(port, 'GET', `/v1/decisions/bnpl/${id}`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
  if (r.status !== 200 || !r.body.includes(id)) throw new Error(`poll answered ${r.status}: ${r.body.slice(0, 200)}`);
  return r.ms;
}

const median = (xs) => {
  const s = xs.filter((x) => typeof x === 'number').sort((a, b) => a - b);
  if (s.length === 0) return null;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function benchDatabase(kind) {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `cds-startup-${kind}-`));
  let dropDb = null;
  let databaseUrl;
  try {
    if (kind === 'postgres') {
      const name = `cds_startup_${process.pid}_${Date.now().toString(36)}`;
      await withPg(opts.postgres, (c) => c.query(`create database "${name}"`));
      dropDb = () => withPg(opts.postgres, (c) => c.query(`drop database if exists "${name}" with (force)`));
      const url = new URL(opts.postgres);
      url.pathname = `/${name}`;
      databaseUrl = url.toString();
    }
    // At `info`: the ready line's own start-up counts are read from the log.
    const env = serverEnv({ port: await freePort(), dataDir, databaseUrl, logLevel: 'info' });
    // Fill it: migrate (first start), a tenant, N decisions.
    const first = await start(clis[0], env);
    const tenantJson = JSON.parse(await cds(clis[0], env, ['tenants', 'create', '--name', 'Start-up Bench', '--json']));
    const tenant = { apiKey: tenantJson.sandbox.api_key, softConsumerId: tenantJson.sandbox.consumers.find((c) => c.tier === 'soft').consumer_id };
    for (let i = 0; i < decisionCount; i += 10) {
      await Promise.all(Array.from({ length: Math.min(10, decisionCount - i) }, (_, k) => createDecision(first.port, tenant, 2500 + ((i + k) % 17500))));
    }
    const known = (await createDecision(first.port, tenant, 4200)).id;
    await first.stop();
    log(`[${kind}] database ready: ${decisionCount + 1} decisions (${databaseUrl ?? dataDir})`);

    const rows = [];
    for (let i = 0; i < runs; i++) {
      for (const cli of clis) {
        const s = await start(cli, env, { cpuProfDir: opts['cpu-prof'] });
        // The first real requests of the new process, each on a new connection: a poll of a known
        // decision, a create, then the same again (the second pair shows the warm cost).
        const firstPollMs = await pollDecision(s.port, tenant, known);
        const firstCreate = await createDecision(s.port, tenant, 3000 + i);
        const secondPollMs = await pollDecision(s.port, tenant, firstCreate.id);
        const secondCreate = await createDecision(s.port, tenant, 3100 + i);
        const exit = await s.stop();
        if (exit.code !== 0) throw new Error(`server exited ${JSON.stringify(exit)} on SIGTERM:\n${s.output()}`);
        const row = {
          cli: path.relative(ROOT, cli),
          spawnToReadyMs: Math.round(s.spawnToReadyMs),
          cpuAtReadyMs: s.cpuAtReadyMs,
          ...s.readyLine(),
          firstPollMs: Math.round(firstPollMs * 10) / 10,
          firstCreateMs: Math.round(firstCreate.ms * 10) / 10,
          secondPollMs: Math.round(secondPollMs * 10) / 10,
          secondCreateMs: Math.round(secondCreate.ms * 10) / 10,
        };
        rows.push(row);
        log(`[${kind}] ${row.cli}: ${JSON.stringify(row)}`);
      }
    }
    return { database: kind, decisions: decisionCount + 1, rows };
  } finally {
    await dropDb?.().catch((err) => log(`dropping the database failed: ${err.message}`));
    await rm(dataDir, { recursive: true, force: true });
  }
}

const FIELDS = ['spawnToReadyMs', 'sinceProcessStartMs', 'startupMs', 'startupCpuMs', 'cpuAtReadyMs', 'firstPollMs', 'firstCreateMs', 'secondPollMs', 'secondCreateMs'];

async function main() {
  const results = [];
  for (const kind of opts.db.split(',')) {
    if (kind === 'postgres') {
      try {
        await withPg(opts.postgres, (c) => c.query('select 1'));
      } catch (err) {
        log(`PostgreSQL not reachable (${err.message}); skipped`);
        continue;
      }
    }
    results.push(await benchDatabase(kind));
  }
  const lines = [`load average at the end: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`, '', `| Database | Server | runs | ${FIELDS.join(' | ')} |`, `|---|---|--:|${FIELDS.map(() => '--:').join('|')}|`];
  for (const r of results) {
    for (const cli of clis) {
      const mine = r.rows.filter((row) => row.cli === path.relative(ROOT, cli));
      lines.push(`| ${r.database} | ${path.relative(ROOT, cli)} | ${mine.length} | ${FIELDS.map((f) => median(mine.map((row) => row[f])) ?? '–').join(' | ')} |`);
    }
  }
  process.stdout.write(`Medians (ms):\n${lines.join('\n')}\n`);
  if (opts.out) await writeFile(opts.out, JSON.stringify({ at: new Date().toISOString(), loadavg: os.loadavg(), results }, null, 2));
}

main().catch((err) => {
  log(err.stack ?? String(err));
  process.exitCode = 1;
});
