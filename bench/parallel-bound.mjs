#!/usr/bin/env node
/**
 * What spreading requests over more cores could give on this machine, at best: the same create
 * load (50 connections, the bench's soft-tier create of a returning sandbox consumer) against one
 * server, then split evenly over N servers that share nothing on the event loop, alternating.
 *
 *   npm run build && node bench/parallel-bound.mjs [--db sqlite|postgres] [--servers 2] [--rounds 2]
 *                                                 [--duration 8] [--postgres URL]
 *
 * SQLite: each server has a data folder and database file of its own, so no writer lock, no
 * shared WAL, nothing to coordinate: an upper bound for request threads or processes in front of
 * one database, which would have to share its single writer. PostgreSQL: `cds serve` processes on
 * one fresh database (the supported scale-out shape, stateless API nodes), with one shared
 * DATA_ENCRYPTION_KEY. `/healthz` is measured the same way as a check that the load generator
 * (autocannon, in this process) can drive the servers. Each line also gives the whole machine's
 * busy cores (servers, load generator, PostgreSQL: /proc/stat) and the servers' own CPU per
 * request. Throw-away data folders and databases.
 * docs/performance.md, "seventeenth session", has what it measured.
 */
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { withPg } from './lib/pg.mjs';
import { cpuOfProcesses, freePort, machineBusyMs } from './lib/proc.mjs';
import { serverEnv } from './run.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(ROOT, 'server', 'dist', 'cli', 'main.js');
const { values: opts } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite' },
    servers: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '2' },
    duration: { type: 'string', default: '8' },
    postgres: { type: 'string', default: process.env.BENCH_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/postgres' },
  },
  strict: true,
});
const CONNECTIONS = 50;
const KEY = randomBytes(32).toString('hex');

async function startServers(count) {
  let databaseUrl = null;
  let dropDatabase = async () => {};
  if (opts.db === 'postgres') {
    const name = `cds_parallel_${Date.now()}_${randomBytes(3).toString('hex')}`;
    await withPg(opts.postgres, (c) => c.query(`create database "${name}"`));
    const url = new URL(opts.postgres);
    url.pathname = `/${name}`;
    databaseUrl = url.href;
    dropDatabase = () => withPg(opts.postgres, (c) => c.query(`drop database if exists "${name}" with (force)`));
  }
  const servers = [];
  let tenant = null;
  for (let i = 0; i < count; i++) {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cds-parallel-'));
    const port = await freePort();
    // The bench's server environment (bench/run.mjs), with one key for all: the PostgreSQL servers share a database.
    const env = { ...serverEnv({ port, dataDir, databaseUrl }), DATA_ENCRYPTION_KEY: KEY };
    // One tenant per database: on PostgreSQL the servers share the first one's.
    if (databaseUrl === null || tenant === null) {
      execFileSync(process.execPath, [CLI, 'migrate'], { env, stdio: 'ignore' });
      tenant = JSON.parse(execFileSync(process.execPath, [CLI, 'tenants', 'create', '--name', 'Parallel Bench', '--json'], { env, encoding: 'utf8' }));
    }
    const child = spawn(process.execPath, [CLI, 'serve'], { env, stdio: 'ignore' });
    servers.push({ child, dataDir, port, apiKey: tenant.sandbox.api_key, consumerId: tenant.sandbox.consumers.find((c) => c.tier === 'soft').consumer_id });
  }
  for (const s of servers) {
    for (;;) {
      try {
        if ((await fetch(`http://127.0.0.1:${s.port}/healthz`)).ok) break;
      } catch {
        /* not listening yet */
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    servers,
    stop: async () => {
      await Promise.all(servers.map((s) => new Promise((r) => (s.child.once('exit', r), s.child.kill()))));
      for (const s of servers) rmSync(s.dataDir, { recursive: true, force: true });
      await dropDatabase();
    },
  };
}

function load(server, connections, seconds, create) {
  let n = 0;
  const headers = { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' };
  const body = () => {
    const cents = 2500 + ((n++ * 7919) % 17501);
    return `{"consumer":{"consumer_id":"${server.consumerId}"},"transaction":{"amount":"${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}","currency":"USD","merchant_name":"Bench Merchant","merchant_category":"electronics"}}`;
  };
  return new Promise((resolve, reject) =>
    autocannon(
      {
        url: `http://127.0.0.1:${server.port}`, connections, duration: seconds,
        requests: [create ? { method: 'POST', path: '/v1/decisions/bnpl', headers, setupRequest: (r) => ({ ...r, body: body() }) } : { method: 'GET', path: '/healthz' }],
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    ),
  );
}

async function measure(count) {
  const { servers, stop } = await startServers(count);
  try {
    const per = CONNECTIONS / count;
    await Promise.all(servers.map((s) => load(s, per, 3, true))); // warm-up
    const line = [];
    for (const [label, create] of [['/healthz', false], ['create', true]]) {
      const [machine0, servers0, started] = [machineBusyMs(), cpuOfProcesses(servers.map((s) => s.child)), performance.now()];
      const results = await Promise.all(servers.map((s) => load(s, per, Number(opts.duration), create)));
      const [machine1, servers1, wallMs] = [machineBusyMs(), cpuOfProcesses(servers.map((s) => s.child)), performance.now() - started];
      const rate = results.reduce((sum, r) => sum + r.requests.average, 0);
      const requests = results.reduce((sum, r) => sum + r.requests.total, 0);
      // The whole machine (servers, load generator, PostgreSQL) in cores, and the servers' own CPU per request.
      const cpu = machine0 === null || servers0 === null ? '' : `, machine ${((machine1 - machine0) / wallMs).toFixed(2)} cores busy, servers ${((servers1 - servers0) / requests).toFixed(3)} ms CPU each`;
      const bad = results.reduce((sum, r) => sum + r.non2xx + r.errors, 0);
      line.push(`${label} ${Math.round(rate).toLocaleString('en-US')}/s${count > 1 ? ` (${results.map((r) => Math.round(r.requests.average)).join(' + ')})` : ''}, p99 ${Math.max(...results.map((r) => r.latency.p99))} ms${cpu}${bad ? `, ${bad} NOT 2xx` : ''}`);
    }
    process.stdout.write(`${opts.db}, ${count} server${count > 1 ? 's' : ''}: ${line.join('; ')}\n`);
  } finally {
    await stop();
  }
}

for (let round = 0; round < Number(opts.rounds); round++) {
  await measure(1);
  await measure(Number(opts.servers));
}
