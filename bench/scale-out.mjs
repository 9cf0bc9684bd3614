#!/usr/bin/env node
/**
 * `npm run bench:scale-out`: the multi-node shape under load, with every decision and every
 * event accounted for (issue 10, "How it will be checked"; docs/deployment.md).
 *
 *   npm run build && node bench/scale-out.mjs [--api N] [--workers N] [--rate N] [--duration S]
 *                                             [--endpoints N] [--delay-ms N] [--out NAME] ...
 *
 * N `cds serve --role api` and N `cds serve --role worker` processes (default 2 and 2), started as
 * a user would, on one throw-away PostgreSQL database and one Redis (rate limits shared), with
 * their data folder (and so their encryption key) in common. The load generator (autocannon, in
 * this process) sends keyed soft-tier creates at a fixed rate, split evenly over the API processes
 * as a round-robin balancer would; every endpoint of the tenant (HTTPS, on loopback, in a process
 * of its own: bench/lib/receiver.mjs) is subscribed to every event type. Then:
 * 1. Every create is checked as in bench/run.mjs (200, approved, the amount asked for).
 * 2. Replays: a sample of the acknowledged keys is sent again to EVERY API process: each answer must
 *    be the same decision, marked `Idempotent-Replayed: true`.
 * 3. Drain: the run waits until every delivery row is `delivered` (the time it took after the load
 *    is reported), then stops the workers, which log what each sent.
 * 4. Accounting, from the database and the receiver: every acknowledged decision stored, and
 *    nothing else beyond what was cut off in flight; four events per decision; one delivery per
 *    event and endpoint, each delivered in one attempt; the receiver got each (endpoint, event)
 *    pair, none twice; the workers' own counts add up to the deliveries, and each worker sent.
 * Reported: creates/s and latency, deliveries/s during the load and overall, event-to-delivered lag
 * (p50/p90/p99/max, from the rows' own times), CPU per create of the API processes, the workers and
 * the PostgreSQL backends, and what every check found. Exit code 1 when a check fails.
 * Writes bench/results/NAME.json and NAME.md (default NAME "scale-out").
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import {
  RESULTS_DIR, ROOT, cleanups, createPostgresDatabase, createRequests, createTenant, freePort, log, machine, newLedger, percentile, postgresBackendSampler,
  postgresReachable, processRssMb, reconcileCreates, round, runCli, runLoad, serverEnv, startServer, storedCounts,
} from './run.mjs';
import { cpuOfProcesses } from './lib/proc.mjs';
import { startReceiverProcess } from './lib/receiver.mjs';
import { redisReachable } from './lib/redis.mjs';

const EVENTS_PER_DECISION = 4; // a soft-tier approval: application.created, decision.created, score.completed, decision.finalized
const REPLAYS = 100;

const USAGE = `Usage: node bench/scale-out.mjs [options]   (after npm run build)
  --api N            API processes (serve --role api), default 2
  --workers N        worker processes (serve --role worker), default 2
  --rate N           creates per second offered, default 100 (each makes 4 events, each delivered to every endpoint)
  --duration S       seconds of load, default 20
  --connections N    load generator connections, default 40
  --endpoints N      webhook endpoints of the tenant, all events, default 2
  --worker-concurrency N
                     WEBHOOK_CONCURRENCY of each worker, default 8: with the per-endpoint cap of 8 across
                     workers, one worker of the default 64 would hold every slot of a few endpoints and
                     leave the other nothing to do (a standby); below endpoints x 8, they share the work
  --delay-ms N       the receiver answers after N ms, default 0
  --drain-timeout S  how long the deliveries may take to catch up after the load, default 120
  --warm-up S        seconds of the same load first (JIT, pools), accounted for but not measured, default 3
  --vacuum-every S   VACUUM the delivery queue every S seconds during the run, as autovacuum would on a
                     deployment (migration 0014: after 5,000 dead rows); 0: never. Default 5. The bench's
                     PostgreSQL may run with autovacuum off (the report says), and then the queue's dead
                     row versions pile up and every claim walks them
  --postgres URL     admin URL (default $BENCH_POSTGRES_URL or postgres://root@127.0.0.1:5432/postgres)
  --redis URL        default $BENCH_REDIS_URL or redis://127.0.0.1:6379
  --out NAME         bench/results/NAME.{json,md} (default scale-out); a NAME with a / is a path prefix
  --cpu-prof DIR     run every server process under node --cpu-prof, writing .cpuprofile files into DIR
  -h, --help         this text
`;

const { values } = parseArgs({
  options: {
    api: { type: 'string', default: '2' },
    workers: { type: 'string', default: '2' },
    rate: { type: 'string', default: '100' },
    duration: { type: 'string', default: '20' },
    connections: { type: 'string', default: '40' },
    endpoints: { type: 'string', default: '2' },
    'worker-concurrency': { type: 'string', default: '8' },
    'delay-ms': { type: 'string', default: '0' },
    'drain-timeout': { type: 'string', default: '120' },
    'warm-up': { type: 'string', default: '3' },
    'vacuum-every': { type: 'string', default: '5' },
    postgres: { type: 'string', default: process.env.BENCH_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/postgres' },
    redis: { type: 'string', default: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379' },
    out: { type: 'string', default: 'scale-out' },
    'cpu-prof': { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const opts = {
  api: positive('api'),
  workers: positive('workers'),
  rate: positive('rate'),
  duration: positive('duration'),
  connections: positive('connections'),
  endpoints: positive('endpoints'),
  workerConcurrency: positive('worker-concurrency'),
  delayMs: Number(values['delay-ms']),
  drainTimeoutS: positive('drain-timeout'),
  warmUp: positive('warm-up'),
  vacuumEveryS: Number(values['vacuum-every']),
  cpuProfDir: values['cpu-prof'] ? path.resolve(values['cpu-prof']) : null,
};
function positive(name) {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(`--${name} must be a positive whole number\n${USAGE}`);
    process.exit(2);
  }
  return n;
}

/** The benches' HTTPS receiver (bench/lib/receiver.mjs), closed by Ctrl-C's cleanup too. */
async function startReceiver(delayMs) {
  const receiver = await startReceiverProcess({ delayMs });
  cleanups.add(receiver.close);
  return receiver;
}

/** One request to each API process with a remembered key and body: the same decision, replayed. */
async function replay(apis, tenant, sample) {
  const found = { sent: 0, sameDecision: 0, markedReplayed: 0, failures: [] };
  for (const { key, body, decisionId } of sample) {
    for (const api of apis) {
      found.sent++;
      const r = await fetch(`${api.url}/v1/decisions/bnpl`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json', 'idempotency-key': key },
        body,
      });
      const text = await r.text();
      const same = r.status === 200 && text.startsWith(`{"decision_id":"${decisionId}"`);
      if (same) found.sameDecision++;
      if (r.headers.get('idempotent-replayed') === 'true') found.markedReplayed++;
      if ((!same || r.headers.get('idempotent-replayed') !== 'true') && found.failures.length < 3) found.failures.push(`${api.url} ${key}: ${r.status} ${text.slice(0, 160)}`);
    }
  }
  return found;
}

async function main() {
  // As bench/run.mjs does for PostgreSQL: a machine without the services skips this with a warning.
  const missing = [!(await postgresReachable(values.postgres)) && `PostgreSQL (${values.postgres})`, !(await redisReachable(values.redis)) && `Redis (${values.redis})`].filter(Boolean);
  if (missing.length) {
    log(`WARNING: the multi-node shape needs ${missing.join(' and ')}, not reachable: skipped.`);
    return;
  }
  const report = {
    date: new Date().toISOString(),
    machine: machine(),
    settings: { ...opts, loadGenerator: 'autocannon in this process, the rate split evenly over the API processes (10 staggered slices)' },
    checks: [],
  };
  const started = performance.now();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cds-bench-scale-out-'));
  const database = await createPostgresDatabase(values.postgres);
  cleanups.add(database.drop);
  const receiver = await startReceiver(opts.delayMs);
  const processes = [];
  let sql = null;
  let vacuumer = null;
  let vacuumTimer = null;
  try {
    const caFile = path.join(dataDir, 'receiver-ca.pem');
    await writeFile(caFile, receiver.ca);
    const base = {
      ...serverEnv({ port: 0, dataDir, databaseUrl: database.url, redisUrl: values.redis }),
      NODE_EXTRA_CA_CERTS: caFile,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1',
      WEBHOOK_CONCURRENCY: String(opts.workerConcurrency),
    };
    await runCli(['migrate'], base);
    const apis = [];
    const workers = [];
    await Promise.all([
      ...Array.from({ length: opts.api }, async (_, i) => {
        const p = await startServer({ env: { ...base, PORT: String(await freePort()) }, dataDir, cpuProfDir: opts.cpuProfDir, role: 'api', logName: `api-${i + 1}.log` });
        apis[i] = p;
        processes.push(p);
      }),
      // Workers log at info: 'worker ready' at start, their counts at stop (no request lines: they serve none).
      ...Array.from({ length: opts.workers }, async (_, i) => {
        const p = await startServer({ env: { ...base, PORT: String(await freePort()), LOG_LEVEL: 'info' }, dataDir, cpuProfDir: opts.cpuProfDir, role: 'worker', logName: `worker-${i + 1}.log`, readyMessage: 'worker ready' });
        workers[i] = p;
        processes.push(p);
      }),
    ]);
    log(`scale-out: ${opts.api} API processes (${apis.map((a) => a.pid).join(', ')}) and ${opts.workers} workers (${workers.map((w) => w.pid).join(', ')}) on ${database.name}, Redis ${values.redis}`);

    const tenant = await createTenant(base);
    const endpointPaths = Array.from({ length: opts.endpoints }, (_, i) => `/scale-out-${i + 1}`);
    for (const p of endpointPaths) await runCli(['webhooks', 'create', '--tenant', tenant.tenantId, '--env', 'sandbox', '--url', receiver.url(p), '--events', '*', '--json'], base);
    await receiver.reset();
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    // Its own connection, open for the whole run, so the vacuum's CPU counts with the backends'.
    if (opts.vacuumEveryS > 0) {
      vacuumer = new pg.Client({ connectionString: database.url });
      await vacuumer.connect();
      const vacuum = async () => {
        if (!vacuumer) return;
        await vacuumer.query('vacuum webhook_deliveries').catch((err) => log(`vacuum: ${err.message}`));
        if (vacuumer) vacuumTimer = setTimeout(vacuum, opts.vacuumEveryS * 1000);
      };
      vacuumTimer = setTimeout(vacuum, opts.vacuumEveryS * 1000);
    }

    // The load, at a fixed rate over every API process.
    const ledger = newLedger();
    const runTag = `${Date.now().toString(36)}${process.pid.toString(36)}`;
    const databaseCpu = postgresBackendSampler(values.postgres, database.name);
    const deliveryCounts = async () =>
      (await sql.query("select count(*)::int as n, count(*) filter (where state = 'delivered')::int as delivered from webhook_deliveries where tenant_id = $1", [tenant.tenantId])).rows[0];
    const drain = async () => {
      const t0 = performance.now();
      for (;;) {
        const counts = await deliveryCounts();
        if (counts.delivered === counts.n || (performance.now() - t0) / 1000 > opts.drainTimeoutS) return (performance.now() - t0) / 1000;
        await sleep(100);
      }
    };

    // Warm-up (JIT, pools, prepared statements: a cold process spends a few seconds of CPU on
    // compiling, which would be charged to the first creates): keyed creates at the same rate, in
    // the ledger and accounted for like the rest, delivered before the measured load starts.
    const warm = await runLoad({
      server: apis[0],
      apiServers: apis.slice(1),
      seconds: opts.warmUp,
      connections: opts.connections,
      rate: opts.rate,
      slices: 10,
      makeRequests: (check) => createRequests({ tenant, ledger, check, idempotent: true, runTag: `${runTag}-warm`, collectIds: false }),
    });
    if (warm.non2xx || warm.errors) throw new Error(`warm-up creates failed: ${JSON.stringify({ statusCodes: warm.statusCodes, samples: warm.failureSamples })}`);
    await drain();
    const deliveredBefore = (await deliveryCounts()).delivered;
    const receivedBefore = (await receiver.stats()).distinct;
    const measuredFrom = Date.now();
    const workerCpu0 = cpuOfProcesses(workers);
    const loadStarted = performance.now();
    log(`scale-out: ${opts.rate} keyed creates/s for ${opts.duration} s, ${opts.endpoints} endpoints x every event…`);
    const load = await runLoad({
      server: apis[0],
      apiServers: apis.slice(1),
      seconds: opts.duration,
      connections: opts.connections,
      rate: opts.rate,
      slices: 10,
      databaseCpu,
      makeRequests: (check) => createRequests({ tenant, ledger, check, idempotent: true, runTag, collectIds: false }),
    });
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    const workerCpuDuringLoad = workerCpu0 === null ? null : cpuOfProcesses(workers) - workerCpu0;
    const duringLoad = await receiver.stats();
    const receivedDuringLoad = duringLoad.distinct - receivedBefore;
    log(`scale-out: ${load.requestsPerS} creates/s, p99 ${load.latencyMs.p99} ms; ${receivedDuringLoad} deliveries received during the load`);

    // Replays on every API process, then the drain.
    const sample = ledger.keyed.slice(0, REPLAYS);
    const replays = await replay(apis, tenant, sample);
    const drainSeconds = await drain();
    const workerCpuTotal = workerCpu0 === null ? null : cpuOfProcesses(workers) - workerCpu0;
    const rss = Object.fromEntries(processes.map((p) => [p.pid, processRssMb(p.pid)]));

    // Workers stop first and say what each sent; then the API processes.
    const workerStats = [];
    for (const w of workers) {
      const exit = await w.stop();
      const line = w.logLines().find((l) => l.msg === 'workers stopped');
      workerStats.push({ pid: w.pid, exit, ...(line?.webhookDelivery ?? { attempts: null }) });
    }
    const apiExits = [];
    for (const a of apis) apiExits.push({ pid: a.pid, exit: await a.stop() });

    // Accounting.
    const stored = await storedCounts({ kind: 'postgres', url: database.url }, tenant.tenantId);
    const reconciled = reconcileCreates(ledger, stored);
    const q = async (text) => (await sql.query(text, [tenant.tenantId])).rows;
    const [eventShape] = await q(
      `select count(*)::int as decisions, count(*) filter (where n <> ${EVENTS_PER_DECISION})::int as odd
         from (select d.id, (select count(*) from events e where e.subject_id = d.id) as n from decisions d where d.tenant_id = $1) x`,
    );
    const [deliveries] = await q(
      `select count(*)::int as rows, count(*) filter (where state = 'delivered')::int as delivered, count(*) filter (where attempts <> 1)::int as retried,
              (select count(*)::int from webhook_attempts a where a.delivery_id in (select id from webhook_deliveries where tenant_id = $1)) as attempts
         from webhook_deliveries where tenant_id = $1`,
    );
    const lags = (
      await sql.query("select (finished_at - created_at)::float8 as ms from webhook_deliveries where tenant_id = $1 and state = 'delivered' and created_at >= $2 order by 1", [tenant.tenantId, measuredFrom])
    ).rows.map((r) => r.ms);
    const lagMs = { p50: percentile(lags, 0.5), p90: percentile(lags, 0.9), p99: percentile(lags, 0.99), max: lags.length ? lags[lags.length - 1] : null };
    const seen = await receiver.stats();
    const expected = stored.events * opts.endpoints;
    const workerAttempts = workerStats.map((s) => s.attempts);
    const workerTotal = workerAttempts.reduce((a, b) => a + (b ?? 0), 0);

    const check = (name, ok, detail) => report.checks.push({ name, ok, detail });
    const bad = load.non2xx + load.errors;
    check('every create answered 200 with the expected body (approved, the amount asked for)', bad === 0, bad ? `non-2xx ${load.non2xx} ${JSON.stringify(load.statusCodes)}, errors ${load.errors}${load.failureSamples[0] ? ` (${load.failureSamples[0]})` : ''}` : `${load.completed} answered (and ${warm.completed} in the warm-up)`);
    report.checks.push(...reconciled.checks);
    check(
      `a key sent again to each of the ${opts.api} API processes replays its decision`,
      replays.sent > 0 && replays.sameDecision === replays.sent && replays.markedReplayed === replays.sent,
      `${replays.sent} replays of ${sample.length} keys: ${replays.sameDecision} the same decision, ${replays.markedReplayed} marked Idempotent-Replayed${replays.failures.length ? `; e.g. ${replays.failures[0]}` : ''}`,
    );
    check(`${EVENTS_PER_DECISION} events per stored decision`, eventShape.odd === 0 && stored.events === stored.ids.length * EVENTS_PER_DECISION, `${stored.events} events for ${eventShape.decisions} decisions, ${eventShape.odd} with another count`);
    check('one delivery per event and endpoint, every one delivered in one attempt', deliveries.rows === expected && deliveries.delivered === expected && deliveries.retried === 0 && deliveries.attempts === expected, `${deliveries.rows} rows (expected ${expected}), ${deliveries.delivered} delivered, ${deliveries.retried} retried, ${deliveries.attempts} attempts; drained ${round(drainSeconds, 1)} s after the load`);
    check('the receiver got every (endpoint, event) once', seen.distinct === expected && seen.duplicates === 0 && seen.total === expected, `${seen.total} requests, ${seen.distinct} distinct of ${expected}, ${seen.duplicates} twice`);
    check(
      `the ${opts.workers} workers' own counts add up, each worker sent`,
      workerAttempts.every((n) => typeof n === 'number' && n > 0) && workerTotal === expected,
      `attempts per worker: ${workerAttempts.join(' + ')} = ${workerTotal} (expected ${expected})`,
    );
    check('every process stopped cleanly on SIGTERM', [...workerStats, ...apiExits].every((p) => p.exit && p.exit.code === 0), [...workerStats, ...apiExits].map((p) => `${p.pid}: ${JSON.stringify(p.exit)}`).join(', '));

    const creates = load.completed;
    report.result = {
      database: `PostgreSQL ${database.settings.server_version} (${database.name}, dropped afterwards)`,
      postgresSettings: database.settings,
      creates: {
        offeredPerS: opts.rate,
        perS: load.requestsPerS,
        completed: creates,
        latencyMs: load.latencyMs,
        apiCpuMsPerCreate: load.serverCpuMsPerRequest,
        workerCpuMsPerCreateDuringLoad: workerCpuDuringLoad !== null && creates ? round(workerCpuDuringLoad / creates, 3) : null,
        postgresCpuMsPerCreate: load.databaseBackendCpuMsPerRequest,
        machineCoresBusy: load.machineCpuBusyCores,
        loadGeneratorCores: load.loadGeneratorCpuUtilisation,
      },
      deliveries: {
        total: expected,
        warmUp: deliveredBefore,
        measured: expected - deliveredBefore,
        receivedDuringLoad,
        perSDuringLoad: round(receivedDuringLoad / loadSeconds, 0),
        perSOverall: round((expected - deliveredBefore) / (loadSeconds + drainSeconds), 0),
        drainSecondsAfterLoad: round(drainSeconds, 2),
        eventToDeliveredMs: lagMs,
        workerCpuMsPerDelivery: workerCpuTotal !== null && expected > deliveredBefore ? round(workerCpuTotal / (expected - deliveredBefore), 3) : null,
        perWorker: workerStats.map(({ pid, attempts, delivered, claims, writes }) => ({ pid, attempts, delivered, claims, writes })),
        tlsConnections: seen.connections,
      },
      rssMbAtEnd: rss,
      reconciliation: { ...reconciled.reconciliation, deliveries, replays },
    };
  } finally {
    clearTimeout(vacuumTimer);
    const v = vacuumer;
    vacuumer = null;
    await v?.end().catch(() => {});
    await sql?.end().catch(() => {});
    for (const p of processes) await p.stop().catch(() => {});
    await receiver.close().catch(() => {});
    cleanups.delete(receiver.close);
    await database.drop().catch((err) => log(`could not drop ${database.name}: ${err.message}`));
    cleanups.delete(database.drop);
    await rm(dataDir, { recursive: true, force: true });
  }
  report.totalSeconds = Math.round((performance.now() - started) / 1000);
  report.ok = report.checks.length > 0 && report.checks.every((c) => c.ok);

  const md = markdown(report);
  process.stdout.write('\n' + md);
  const prefix = values.out.includes('/') ? path.resolve(values.out) : path.join(RESULTS_DIR, values.out);
  await mkdir(path.dirname(prefix), { recursive: true });
  await writeFile(`${prefix}.json`, JSON.stringify(report, null, 2) + '\n');
  await writeFile(`${prefix}.md`, md);
  log(`wrote ${path.relative(ROOT, prefix)}.json and .md (${report.totalSeconds} s in all)`);
  if (!report.ok) {
    log('scale-out: FAILED (see the checks)');
    process.exitCode = 1;
  }
}

function markdown(report) {
  const { machine: m, settings: s, result: r } = report;
  const ms = (v) => (v === null || v === undefined ? '–' : String(round(v, 2)));
  const lines = [
    '# Scale-out under load',
    '',
    `${report.date} · ${m.nproc} CPUs (${m.cpuModel}) · Node ${m.node} · load average at start ${m.loadAverageAtStart.join(' / ')}`,
    `${s.api} \`cds serve --role api\` + ${s.workers} \`cds serve --role worker\` on one PostgreSQL database and one Redis; ${s.rate} keyed creates/s offered for ${s.duration} s over ${s.connections} connections (${s.loadGenerator}); ${s.endpoints} HTTPS endpoints on loopback subscribed to every event, answering after ${s.delayMs} ms; each worker sends ${s.workerConcurrency} at a time at most (WEBHOOK_CONCURRENCY), an endpoint 8 across the workers. All on the same machine. PostgreSQL autovacuum: ${r?.postgresSettings?.autovacuum ?? '?'}; the bench vacuums the delivery queue ${s.vacuumEveryS > 0 ? `every ${s.vacuumEveryS} s` : 'never'} (\`--vacuum-every\`). \`node bench/scale-out.mjs\` (bench/scale-out.mjs says what it does).`,
    '',
  ];
  if (r) {
    lines.push(
      '| creates/s (offered) | p50 / p90 / p99 / max ms | CPU ms per create: API processes + PostgreSQL | deliveries | deliveries/s during the load, overall | drained after the load | event to delivered p50 / p90 / p99 / max ms | worker CPU ms per delivery | attempts per worker | machine cores busy |',
      '|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
      `| ${r.creates.perS} (${s.rate}) | ${ms(r.creates.latencyMs.p50)} / ${ms(r.creates.latencyMs.p90)} / ${ms(r.creates.latencyMs.p99)} / ${ms(r.creates.latencyMs.max)} | ${ms(r.creates.apiCpuMsPerCreate)} + ${ms(r.creates.postgresCpuMsPerCreate)} | ${r.deliveries.total} | ${r.deliveries.perSDuringLoad}, ${r.deliveries.perSOverall} | ${ms(r.deliveries.drainSecondsAfterLoad)} s | ${ms(r.deliveries.eventToDeliveredMs.p50)} / ${ms(r.deliveries.eventToDeliveredMs.p90)} / ${ms(r.deliveries.eventToDeliveredMs.p99)} / ${ms(r.deliveries.eventToDeliveredMs.max)} | ${ms(r.deliveries.workerCpuMsPerDelivery)} | ${r.deliveries.perWorker.map((w) => w.attempts).join(' + ')} | ${ms(r.creates.machineCoresBusy)} of ${m.nproc} |`,
      '',
    );
  }
  lines.push('## Checks', '', ...report.checks.map((c) => `- ${c.ok ? 'ok' : '**FAILED**'}: ${c.name}: ${c.detail}`), '');
  return lines.join('\n');
}

main().catch((err) => {
  log(`scale-out: ${err instanceof Error ? err.stack : String(err)}`);
  process.exitCode = 1;
});
