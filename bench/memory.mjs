#!/usr/bin/env node
/**
 * `npm run bench:memory -- --decisions 1000000`: resident memory of the real server while it
 * creates N decisions (issue 10: under 300 MB after one million, no growth over a soak).
 *
 * Starts `cds serve` exactly as bench/run.mjs does (fresh data folder or throw-away PostgreSQL
 * database, LOG_LEVEL=warn, limits lifted), creates a tenant, then sends soft-tier creates in
 * chunks of `--chunk` (autocannon, `--connections` connections) with a poll after every tenth
 * create, sampling the server's RSS from /proc every `--sample-s` seconds. Every response is checked
 * as in bench/run.mjs and, at the end, the decisions stored are reconciled with the creates
 * acknowledged. Writes bench/results/NAME.json and NAME.md (default NAME "memory"): the samples, RSS
 * after warm-up, at the end and at its highest, and the trend over the second half (MB per 100,000
 * decisions; near zero means no growth).
 */
import autocannon from 'autocannon';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  RESULTS_DIR, ROOT, createPostgresDatabase, createRequests, createTenant, freePort, log, machine, newCheck, newLedger, postgresReachable, processRssMb, serverEnv, startServer,
} from './run.mjs';

const { values } = parseArgs({
  options: {
    decisions: { type: 'string', default: '100000' },
    db: { type: 'string', default: 'sqlite' },
    connections: { type: 'string', default: '20' },
    chunk: { type: 'string', default: '10000' },
    'sample-s': { type: 'string', default: '2' },
    postgres: { type: 'string', default: process.env.BENCH_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/postgres' },
    out: { type: 'string', default: 'memory' },
  },
  strict: true,
});
const target = Number(values.decisions);
const connections = Number(values.connections);
const chunk = Number(values.chunk);
const sampleMs = Number(values['sample-s']) * 1000;
if (![target, connections, chunk, sampleMs].every((n) => Number.isInteger(n) && n > 0)) throw new Error('--decisions, --connections, --chunk and --sample-s must be positive integers');
if (!['sqlite', 'postgres'].includes(values.db)) throw new Error('--db must be sqlite or postgres');

const report = { mode: 'memory', date: new Date().toISOString(), machine: machine(), database: values.db, settings: { decisions: target, connections, chunk, sampleSeconds: sampleMs / 1000, pollsPerCreate: 0.1 }, samples: [], checks: [] };
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cds-memory-'));
let pgDb = null;
let server = null;
const t0 = performance.now();
try {
  if (values.db === 'postgres') {
    if (!(await postgresReachable(values.postgres))) throw new Error(`PostgreSQL not reachable at ${values.postgres}`);
    pgDb = await createPostgresDatabase(values.postgres);
  }
  const env = serverEnv({ port: await freePort(), dataDir, databaseUrl: pgDb?.url });
  server = await startServer({ env, dataDir, cpuProfDir: null, sqlTiming: false });
  const tenant = await createTenant(env);
  report.rssMbAtStart = processRssMb(server.pid);
  log(`[memory] ${values.db}: server pid ${server.pid}, RSS ${report.rssMbAtStart} MB before any decision; creating ${target.toLocaleString('en-US')} decisions`);

  const ledger = newLedger();
  const check = newCheck();
  let polls = 0;
  let pollFailures = 0;
  const sample = () => {
    const s = { s: Math.round((performance.now() - t0) / 100) / 10, decisions: ledger.ackedIds.length, rssMb: processRssMb(server.pid) };
    report.samples.push(s);
    return s;
  };
  const timer = setInterval(sample, sampleMs);
  const pollOnce = async () => {
    const id = ledger.pollIds[Math.floor(Math.random() * ledger.pollIds.length)];
    const r = await fetch(`${server.url}/v1/decisions/bnpl/${id}`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
    const body = await r.text();
    polls++;
    if (r.status !== 200 || !body.startsWith(`{"decision_id":"${id}"`)) pollFailures++;
  };

  let warmedUp = false;
  while (ledger.ackedIds.length < target) {
    if (!server.alive()) throw new Error(`server died:\n${server.tail()}`);
    const amount = Math.min(chunk, target - ledger.ackedIds.length);
    // Keep only a window of ids for polls: the ledger itself must not be what grows here.
    if (ledger.pollIds.length > 50_000) ledger.pollIds.splice(0, ledger.pollIds.length - 10_000);
    const result = await autocannon({
      url: server.url, connections, pipelining: 1, amount, timeout: 30,
      requests: createRequests({ tenant, ledger, check, idempotent: false, runTag: 'memory', collectIds: true }),
    });
    if (result.non2xx || result.errors) check.fail(`chunk: non-2xx ${result.non2xx}, errors ${result.errors}`);
    const pollsThisChunk = Math.round(amount / 10);
    for (let i = 0; i < pollsThisChunk; i += connections) await Promise.all(Array.from({ length: Math.min(connections, pollsThisChunk - i) }, pollOnce));
    const s = sample();
    if (!warmedUp) {
      warmedUp = true;
      report.rssMbAfterFirstChunk = s.rssMb;
    }
    const rate = Math.round(ledger.ackedIds.length / ((performance.now() - t0) / 1000));
    log(`[memory] ${s.decisions.toLocaleString('en-US')} decisions, RSS ${s.rssMb} MB (${rate}/s overall, ${check.failures + pollFailures} failures)`);
  }
  clearInterval(timer);
  await sleep(2_000); // idle a moment: what stays resident once the load stops
  report.rssMbIdleAfter = sample().rssMb;
  report.polls = polls;

  const stored = await countDecisions(pgDb, dataDir, tenant.tenantId);
  const unanswered = ledger.createsSent - ledger.createResponses;
  report.reconciliation = { createsSent: ledger.createsSent, acknowledged: ledger.ackedIds.length, stored };
  report.checks.push({ name: 'every response 2xx with the expected body (creates and polls)', ok: check.failures === 0 && pollFailures === 0, detail: `${check.failures} create failures, ${pollFailures} poll failures of ${polls}${check.samples[0] ? ` (${check.samples[0]})` : ''}` });
  report.checks.push({ name: 'decisions stored = acknowledged (+ at most those in flight when a chunk stopped)', ok: stored >= ledger.ackedIds.length && stored <= ledger.ackedIds.length + unanswered, detail: `${stored} stored, ${ledger.ackedIds.length} acknowledged` });
} catch (err) {
  report.error = err instanceof Error ? err.message : String(err);
  log(`[memory] FAILED: ${report.error}`);
} finally {
  if (server) report.serverExit = await server.stop();
  if (pgDb) await pgDb.drop().catch((err) => log(`could not drop ${pgDb.name}: ${err.message}`));
  await rm(dataDir, { recursive: true, force: true });
}

report.totalSeconds = Math.round((performance.now() - t0) / 1000);
summarise(report);
const md = markdown(report);
process.stdout.write('\n' + md + '\n');
const prefix = values.out.includes('/') ? path.resolve(values.out) : path.join(RESULTS_DIR, values.out);
await mkdir(path.dirname(prefix), { recursive: true });
await writeFile(`${prefix}.json`, JSON.stringify(report, null, 2) + '\n');
await writeFile(`${prefix}.md`, md);
log(`wrote ${path.relative(ROOT, prefix)}.json and .md`);
process.exitCode = report.error || report.checks.some((c) => !c.ok) ? 1 : 0;

async function countDecisions(pg, dir, tenantId) {
  if (pg) {
    const { default: pgModule } = await import('pg');
    const client = new pgModule.Client({ connectionString: pg.url });
    await client.connect();
    try {
      return (await client.query('select count(*)::int as n from decisions where tenant_id = $1', [tenantId])).rows[0].n;
    } finally {
      await client.end();
    }
  }
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(path.join(dir, 'cds.sqlite'), { readonly: true });
  try {
    return Number(db.prepare('select count(*) from decisions where tenant_id = ?').pluck().get(tenantId));
  } finally {
    db.close();
  }
}

/** Highest RSS, and the least-squares slope of RSS against decisions over the second half. */
function summarise(r) {
  const withRss = r.samples.filter((s) => s.rssMb !== null);
  r.rssMbMax = withRss.length ? Math.max(...withRss.map((s) => s.rssMb)) : null;
  r.rssMbAtEnd = withRss.at(-1)?.rssMb ?? null;
  const half = withRss.filter((s) => s.decisions >= (withRss.at(-1)?.decisions ?? 0) / 2);
  if (half.length >= 3) {
    const n = half.length;
    const mx = half.reduce((a, s) => a + s.decisions, 0) / n;
    const my = half.reduce((a, s) => a + s.rssMb, 0) / n;
    const sxx = half.reduce((a, s) => a + (s.decisions - mx) ** 2, 0);
    const sxy = half.reduce((a, s) => a + (s.decisions - mx) * (s.rssMb - my), 0);
    r.rssTrendMbPer100k = sxx > 0 ? Math.round((sxy / sxx) * 100_000 * 10) / 10 : null;
  } else {
    r.rssTrendMbPer100k = null;
  }
}

function markdown(r) {
  const m = r.machine;
  const decided = r.reconciliation?.acknowledged ?? r.samples.at(-1)?.decisions ?? 0;
  const lines = [
    `# Memory under load (${r.database})`,
    '',
    `${r.date} · ${m.nproc} CPUs (${m.cpuModel}), ${m.memoryGb} GB · ${m.platform} · Node ${m.node} · load average at start ${m.loadAverageAtStart.join(' / ')}`,
    `\`node bench/memory.mjs --decisions ${r.settings.decisions} --db ${r.database}\`: soft-tier creates in chunks of ${r.settings.chunk.toLocaleString('en-US')} on ${r.settings.connections} connections, a poll per 10 creates, server RSS from /proc every ${r.settings.sampleSeconds} s; ${r.totalSeconds} s in all.`,
    '',
    `| | RSS MB |`,
    `|---|--:|`,
    `| before any decision | ${r.rssMbAtStart ?? '–'} |`,
    `| after the first chunk | ${r.rssMbAfterFirstChunk ?? '–'} |`,
    `| highest | ${r.rssMbMax ?? '–'} |`,
    `| at the end (${decided.toLocaleString('en-US')} decisions) | ${r.rssMbAtEnd ?? '–'} |`,
    `| idle 2 s after the load | ${r.rssMbIdleAfter ?? '–'} |`,
    '',
    `Trend over the second half: ${r.rssTrendMbPer100k ?? '–'} MB per 100,000 decisions (least squares; near 0 means no growth). Target: under 300 MB after 1,000,000 decisions: ${r.rssMbMax === null ? '–' : r.rssMbMax < 300 ? `highest ${r.rssMbMax} MB` : `**highest ${r.rssMbMax} MB**`}${decided < 1_000_000 ? ` (at ${decided.toLocaleString('en-US')} decisions)` : ''}.`,
    '',
    '## Checks',
    '',
    ...(r.error ? [`- **FAILED**: ${r.error.split('\n')[0]}`] : []),
    ...r.checks.map((c) => `- ${c.ok ? 'ok' : '**FAILED**'}: ${c.name}: ${c.detail}`),
    '',
    '## Samples',
    '',
    '| s | decisions | RSS MB |',
    '|--:|--:|--:|',
  ];
  const every = Math.max(1, Math.ceil(r.samples.length / 40));
  r.samples.forEach((s, i) => {
    if (i % every === 0 || i === r.samples.length - 1) lines.push(`| ${s.s} | ${s.decisions.toLocaleString('en-US')} | ${s.rssMb ?? '–'} |`);
  });
  return lines.join('\n') + '\n';
}
