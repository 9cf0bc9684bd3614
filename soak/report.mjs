/**
 * The soak's verdict and report: pure functions of what soak/run.mjs collected.
 *
 * analyse() turns the ledger, the samples and the reconciliation into one JSON-able result with a
 * verdict; renderMarkdown() and renderSummary() print it. The thresholds are here, named, and
 * documented in docs/reliability.md ("Soak"). Memory and handles are judged per server process
 * (the one `cds serve`, or each process of --scale-out; a restarted one on its new pid):
 * - memory: the least-squares slope of its RSS over the second half of the load must stay at or
 *   under RSS_SLOPE_LIMIT_MB_PER_MIN (judged only for loads of MEMORY_JUDGED_FROM_MINUTES or more;
 *   the first half is warm-up: JIT, heap sizing, caches and pools filling);
 * - handles: open file descriptors once the load is over and the backlog drained must come back to
 *   within FD_IDLE_MARGIN of the count before the load;
 * - correctness: any lost, duplicated or wrongly stored decision, idempotency record, event or
 *   delivery, any unexpected answer (non-2xx, socket error, wrong body), a crash, an unclean
 *   shutdown or a log line at level error or above fails the run. Latency is reported, never judged
 *   (the machine is shared).
 */

export const RSS_SLOPE_LIMIT_MB_PER_MIN = 1.0;
export const MEMORY_JUDGED_FROM_MINUTES = 5;
export const FD_IDLE_MARGIN = 10;
const IDLE_NOTE = '40 s idle';

const round = (x, d = 1) => (x === null || x === undefined || Number.isNaN(x) ? null : Math.round(x * 10 ** d) / 10 ** d);

function percentile(sorted, q) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

function stats(values) {
  const s = [...values].sort((a, b) => a - b);
  return { n: s.length, p50: round(percentile(s, 0.5), 2), p99: round(percentile(s, 0.99), 2), max: round(s.at(-1) ?? null, 2) };
}

/** Least-squares slope of y over x; null with fewer than three points. */
export function slope(points) {
  const pts = points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  if (pts.length < 3) return null;
  const n = pts.length;
  const mx = pts.reduce((a, [x]) => a + x, 0) / n;
  const my = pts.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of pts) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? null : num / den;
}

/**
 * The server's log lines at warn and above, grouped by message, most frequent first, each with an
 * example of the fields that say what happened (never request bodies; the service keeps PII out
 * of logs anyway). Also what `npm run bench` reports of each run (bench/run.mjs).
 */
export function logSummary(text) {
  const levels = { 40: 'warn', 50: 'error', 60: 'fatal' };
  const byMessage = new Map();
  let other = 0;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      other += 1;
      continue;
    }
    if (!(entry.level >= 40)) continue;
    const level = levels[entry.level] ?? String(entry.level);
    const key = `${level}: ${entry.msg}`;
    const e = byMessage.get(key) ?? { level, msg: entry.msg, count: 0, example: null };
    e.count += 1;
    e.example ??= JSON.stringify(Object.fromEntries(Object.entries(entry).filter(([k]) => EXAMPLE_FIELDS.has(k)))).slice(0, 300);
    byMessage.set(key, e);
  }
  const lines = [...byMessage.values()].sort((a, b) => b.count - a.count);
  return { lines, errorLines: lines.filter((l) => l.level === 'error' || l.level === 'fatal').reduce((a, l) => a + l.count, 0), notJson: other };
}

/** Fields that name what failed or how long something waited. */
const EXAMPLE_FIELDS = new Set(['err', 'job', 'reason', 'kind', 'error', 'heldMs', 'checkpointMs', 'frames', 'truncated', 'deadRows', 'ms', 'silentMs']);

/**
 * One process's memory, descriptors, event loop and CPU, from its samples. A process started again
 * by a rolling restart is judged on its last pid's samples: the process that ran through the
 * second half of the load, the drain and the idle wait. Returns its problems too (verdict reasons).
 */
function processHealth(allSamples, loadEndedMs) {
  const lastPid = allSamples.at(-1)?.pid;
  const samples = allSamples.filter((s) => s.pid === lastPid);
  const loadMinutes = loadEndedMs / 60_000;
  const problems = [];
  const load = samples.filter((s) => s.phase === 'load');
  const half = loadEndedMs / 2;
  const second = load.filter((s) => s.tMs >= half);
  const toMin = (s) => s.tMs / 60_000;
  const rssSlope = slope(second.map((s) => [toMin(s), s.rssMb]));
  const rssAnonSlope = slope(second.map((s) => [toMin(s), s.rssAnonMb]));
  // The heap's floor per minute (its lowest sample, i.e. just after a collection) is what survives.
  const floors = new Map();
  for (const s of second) {
    if (s.heapUsedMb === null) continue;
    const m = Math.floor(toMin(s));
    floors.set(m, Math.min(floors.get(m) ?? Infinity, s.heapUsedMb));
  }
  const heapFloorSlope = slope([...floors].map(([m, v]) => [m + 0.5, v]));
  const fdSlope = slope(second.map((s) => [toMin(s), s.fds]));
  const beforeLoad = samples[0];
  const afterDrain = samples.at(-1);
  const judged = loadMinutes >= MEMORY_JUDGED_FROM_MINUTES;
  // A slope above the limit is a leak only if the memory stays when the load stops: a server the
  // machine cannot keep up with holds more requests and sockets at once (its working set grows with
  // the queue), and gives that back once idle. Kept: RSS after the idle wait above the mid-load RSS
  // by more than the limit would have added over the second half.
  const idle = samples.filter((s) => s.phase === 'idle');
  const rssAfterIdle = idle.length > 0 ? Math.min(...idle.map((s) => s.rssMb)) : null;
  const heapAfterIdle = idle.length > 0 ? Math.min(...idle.map((s) => s.heapUsedMb ?? Infinity)) : null;
  const secondHalfMinutes = (loadEndedMs - half) / 60_000;
  const givenBack = rssAfterIdle !== null && second[0] !== undefined && rssAfterIdle <= second[0].rssMb + RSS_SLOPE_LIMIT_MB_PER_MIN * secondHalfMinutes;
  const memory = {
    judged,
    thresholdMbPerMin: RSS_SLOPE_LIMIT_MB_PER_MIN,
    rssSecondHalfSlopeMbPerMin: round(rssSlope, 3),
    rssAnonSecondHalfSlopeMbPerMin: round(rssAnonSlope, 3),
    heapFloorSecondHalfSlopeMbPerMin: round(heapFloorSlope, 3),
    rssMb: { start: round(beforeLoad?.rssMb), midLoad: round(second[0]?.rssMb), endLoad: round(load.at(-1)?.rssMb), max: round(Math.max(...samples.map((s) => s.rssMb))), afterDrain: round(afterDrain?.rssMb) },
    heapUsedMb: { midLoad: round(second[0]?.heapUsedMb), endLoad: round(load.at(-1)?.heapUsedMb), max: round(Math.max(...samples.map((s) => s.heapUsedMb ?? 0))) },
    rssAfterIdleMb: round(rssAfterIdle),
    heapUsedAfterIdleMb: round(heapAfterIdle),
    verdict: !judged
      ? `not judged (load of ${round(loadMinutes, 1)} min; judged from ${MEMORY_JUDGED_FROM_MINUTES} min)`
      : rssSlope === null || rssSlope <= RSS_SLOPE_LIMIT_MB_PER_MIN
        ? 'no growth'
        : givenBack
          ? 'no growth (grew under load, given back when idle)'
          : 'GROWTH',
  };
  if (memory.verdict === 'GROWTH') problems.push(`RSS grew ${round(rssSlope, 2)} MB/min over the second half of the load (limit ${RSS_SLOPE_LIMIT_MB_PER_MIN})`);
  const handles = {
    fds: { beforeLoad: beforeLoad?.fds ?? null, maxDuringLoad: Math.max(...load.map((s) => s.fds ?? 0)), endLoad: load.at(-1)?.fds ?? null, afterDrain: afterDrain?.fds ?? null, secondHalfSlopePerMin: round(fdSlope, 2), afterDrainKinds: afterDrain?.fdKinds ?? null },
    activeResources: { beforeLoad: beforeLoad?.handles ?? null, maxDuringLoad: Math.max(...load.map((s) => s.handles ?? 0)), afterDrain: afterDrain?.handles ?? null, afterDrainKinds: afterDrain?.resources ?? null },
    threads: { beforeLoad: beforeLoad?.threads ?? null, afterDrain: afterDrain?.threads ?? null },
    idleMargin: FD_IDLE_MARGIN,
  };
  if (beforeLoad?.fds != null && afterDrain?.fds != null && afterDrain.fds > beforeLoad.fds + FD_IDLE_MARGIN) {
    problems.push(`open file descriptors did not come back after the load: ${beforeLoad.fds} before, ${afterDrain.fds} after the drain and ${IDLE_NOTE} (margin ${FD_IDLE_MARGIN})`);
  }
  // The probe's first window covers start-up (module loading, migrations, JIT), not the load: the
  // first 10 s of each process, a restarted one's too (its first window held a 1 s start-up stall).
  const startedAtMs = samples[0]?.tMs ?? 0;
  const steady = load.filter((s) => s.tMs >= startedAtMs + 10_000);
  const lag = {
    p99MsMax: round(Math.max(...steady.map((s) => s.lagP99Ms ?? 0)), 1),
    maxMs: round(Math.max(...steady.map((s) => s.lagMaxMs ?? 0)), 1),
    eluMean: round(steady.reduce((a, s) => a + (s.elu ?? 0), 0) / Math.max(1, steady.length), 3),
  };
  const loadStart = load[0];
  const loadEnd = load.at(-1);
  const cpu = loadStart?.cpuMs != null && loadEnd?.cpuMs != null && loadEnd.requests > loadStart.requests ? {
    serverCpuMsPerRequest: round((loadEnd.cpuMs - loadStart.cpuMs) / (loadEnd.requests - loadStart.requests), 2),
    serverCoresBusy: round((loadEnd.cpuMs - loadStart.cpuMs) / (loadEnd.tMs - loadStart.tMs), 2),
    note: 'this process\'s CPU per request answered by the service (all processes), during the load',
  } : null;

  return { memory, handles, eventLoop: lag, cpu, problems };
}

export function analyse(input) {
  const { opts, ledger, findings, crashed, loadEndedMs } = input;
  const reasons = [];

  // Latency per minute (from when each request was due), by group and overall.
  const perMinute = ledger.latency.map((row, minute) => {
    const all = Object.values(row ?? {}).flat();
    const out = { minute: minute + 1, requests: all.length, all: stats(all) };
    for (const [group, values] of Object.entries(row ?? {})) out[group] = stats(values);
    return out;
  });
  // Minutes at the full rate (after the ramp) with at least half their requests.
  const full = perMinute.filter((m) => (m.minute - 0.5) * 60_000 >= opts.rampMs && m.requests >= 0.5 * opts.rate * 60);
  const first = full[0] ?? perMinute[0];
  const last = full.at(-1) ?? perMinute.at(-1);
  const drift = first && last ? {
    firstMinute: first.minute, lastMinute: last.minute,
    p50: { first: first.all.p50, last: last.all.p50, ratio: round(last.all.p50 / first.all.p50, 2) },
    p99: { first: first.all.p99, last: last.all.p99, ratio: round(last.all.p99 / first.all.p99, 2) },
    createP99: { first: first.create?.p99 ?? null, last: last.create?.p99 ?? null },
  } : null;

  // Memory, descriptors, event loop and CPU, per process.
  const processes = input.processes.map((p) => {
    const { problems, ...health } = processHealth(p.samples, loadEndedMs);
    const named = (text) => (input.processes.length > 1 ? `${p.name}: ${text}` : `server ${text}`);
    for (const problem of problems) reasons.push(named(problem));
    if (!crashed && (p.exit?.code !== 0 || p.exit?.signal)) reasons.push(named(`did not shut down cleanly on SIGTERM: ${JSON.stringify(p.exit)}`));
    for (const r of p.restarts ?? []) {
      if (r.exit?.code !== 0 || r.exit?.signal) reasons.push(named(`did not stop cleanly in the rolling restart: ${JSON.stringify(r.exit)}`));
    }
    return { name: p.name, role: p.role, pid: p.pid, exit: p.exit, restarts: p.restarts ?? [], ...health, samples: p.samples };
  });

  // Errors: every class is one that should not happen.
  const errors = [...ledger.errors].map(([cls, e]) => ({ class: cls, count: e.count, examples: e.examples })).sort((a, b) => b.count - a.count);
  const errorTotal = errors.reduce((a, e) => a + e.count, 0);
  if (errorTotal > 0) reasons.push(`${errorTotal} unexpected answers in ${errors.length} classes (see Errors)`);
  if (input.skipped > 0) reasons.push(`${input.skipped} requests not sent: the generator hit its in-flight cap (the server stalled)`);
  if (crashed) reasons.push(`a server process exited during the run: ${JSON.stringify(crashed)}`);
  for (const p of findings.problems) reasons.push(`${p.cls}: ${p.detail}`);
  if (input.deliveryStates.pending) reasons.push(`${input.deliveryStates.pending} deliveries still pending after the drain`);
  if (input.deliveryStates.failed) reasons.push(`${input.deliveryStates.failed} deliveries failed (ran out of attempts)`);
  const logs = logSummary(input.serverLog);
  if (logs.errorLines > 0) reasons.push(`${logs.errorLines} server log lines at level error or fatal`);

  const counts = Object.fromEntries([...ledger.counts].sort(([a], [b]) => a.localeCompare(b)));
  const requests = [...ledger.counts.values()].reduce((a, c) => a + c.sent, 0);
  return {
    generatedAt: new Date().toISOString(),
    startedAt: input.startedWall.toISOString(),
    machine: input.machine,
    settings: {
      database: input.databaseKind, minutes: opts.minutes, ratePerS: opts.rate, rampSeconds: opts.rampMs / 1000, retryDelaysMs: opts.retryDelaysMs,
      outageSeconds: { from: opts.outage.startMs / 1000, to: opts.outage.endMs / 1000 }, drainLimitSeconds: opts.drainMs / 1000,
      // null: one `cds serve` (role all); else API processes behind a round-robin, workers, Redis.
      scaleOut: input.scaleOut ? { api: input.scaleOut.api, workers: input.scaleOut.workers, restartAtSeconds: input.scaleOut.restartAtMs === null ? null : input.scaleOut.restartAtMs / 1000 } : null,
    },
    verdict: { pass: reasons.length === 0, reasons },
    traffic: {
      loadSeconds: round(loadEndedMs / 1000), requestsStarted: input.started, requestsAnswered: requests, achievedPerS: round(requests / (loadEndedMs / 1000)),
      skipped: input.skipped, staleSocketRetries: input.staleSocketRetries ?? 0, byKind: counts, completionsSentAtEnd: input.completedAtEnd, resolvedAfterLoad: input.resolved,
      noKeyCreates: ledger.noKeyCreates,
    },
    errors,
    latency: { note: 'milliseconds from when each request was due (open loop); the machine is shared, so indicative only', drift, perMinute },
    processes,
    webhooks: { drainSeconds: round(input.drainMs / 1000), deliveryStates: input.deliveryStates, endpoints: findings.endpoints },
    reconciliation: { decisions: findings.decisions, idempotency: findings.idempotency, events: findings.events, problems: findings.problems },
    serverLog: logs,
  };
}

/** A result's processes; a result from before --scale-out had one, its fields at the top level. */
export function processesOf(r) {
  if (r.processes) return r.processes;
  return [{ name: 'server', role: 'all', pid: null, exit: r.serverExit, restarts: [], memory: r.memory, handles: r.handles, eventLoop: r.eventLoop, cpu: r.cpu, samples: r.samples }];
}

const fmt = (x) => (x === null || x === undefined ? '–' : typeof x === 'number' ? x.toLocaleString('en-US', { maximumFractionDigits: 2 }) : String(x));

/** The allocator the servers ran with; nothing for reports from before it was recorded. */
function allocatorNote(env) {
  if (!env) return '';
  const set = Object.entries(env);
  return set.length ? ` Memory allocator: ${set.map(([k, v]) => `\`${k}=${v}\``).join(' ')}.` : " Memory allocator: glibc's malloc (no `LD_PRELOAD` or `MALLOC_*` set).";
}

export function renderMarkdown(r) {
  const L = [];
  const s = r.settings;
  const processes = processesOf(r);
  const several = processes.length > 1;
  L.push(`# Soak report: ${s.database}${s.scaleOut ? ` scale-out (${s.scaleOut.api} API + ${s.scaleOut.workers} worker process${s.scaleOut.api + s.scaleOut.workers > 1 ? 'es' : ''})` : ''}, ${s.minutes} min at ${s.ratePerS} req/s`);
  L.push('');
  L.push(`**${r.verdict.pass ? 'PASS' : 'FAIL'}**. Started ${r.startedAt}; ${r.machine.nproc} CPU ${r.machine.cpuModel}, Node ${r.machine.node}, load average at start ${r.machine.loadAverageAtStart.map((x) => x.toFixed(2)).join(' ')} (a shared machine: latency is indicative).${allocatorNote(r.machine.allocatorEnv)}`);
  L.push('');
  if (s.scaleOut) {
    L.push(
      `Shape: ${s.scaleOut.api} \`cds serve --role api\` processes, each request sent to the next in turn (a round-robin balancer), and ${s.scaleOut.workers} \`cds serve --role worker\` processes, on one PostgreSQL database and one Redis. ${s.scaleOut.restartAtSeconds === null ? 'No rolling restart.' : `Rolling restart at ${s.scaleOut.restartAtSeconds} s of the load: ${processes.filter((p) => p.restarts.length).map((p) => p.name).join(' then ')}, each taken out of the rotation, stopped with SIGTERM and started again.`}`,
    );
    L.push('');
  }
  if (!r.verdict.pass) {
    L.push('Why it failed:');
    L.push('');
    for (const reason of r.verdict.reasons) L.push(`- ${reason}`);
    L.push('');
  }
  L.push('## Memory (issue 10: no growth across a 10-minute soak)');
  L.push('');
  for (const p of processes) {
    if (several) {
      L.push(`### ${p.name} (\`cds serve --role ${p.role}\`, pid ${p.pid})`);
      L.push('');
      for (const x of p.restarts) {
        L.push(`Restarted at ${fmt(x.atS)} s of the load: stopped in ${fmt(x.stopMs)} ms (${JSON.stringify({ code: x.exit?.code, signal: x.exit?.signal })}), the new process (pid ${x.newPid}) ready ${fmt(x.downMs)} ms after the SIGTERM. Judged below: the new process.`);
        L.push('');
      }
    }
    const m = p.memory;
    L.push(`**${m.verdict}**: RSS slope over the second half of the load ${fmt(m.rssSecondHalfSlopeMbPerMin)} MB/min (limit ${m.thresholdMbPerMin} MB/min); anonymous RSS ${fmt(m.rssAnonSecondHalfSlopeMbPerMin)} MB/min; V8 heap floor ${fmt(m.heapFloorSecondHalfSlopeMbPerMin)} MB/min. After the load and 40 s idle: RSS ${fmt(m.rssAfterIdleMb)} MB, heap used ${fmt(m.heapUsedAfterIdleMb)} MB (mid-load RSS ${fmt(m.rssMb.midLoad)} MB).`);
    L.push('');
    L.push('| | start | mid-load | end of load | max | after drain and 40 s idle |');
    L.push('|---|---|---|---|---|---|');
    L.push(`| RSS (MB) | ${fmt(m.rssMb.start)} | ${fmt(m.rssMb.midLoad)} | ${fmt(m.rssMb.endLoad)} | ${fmt(m.rssMb.max)} | ${fmt(m.rssMb.afterDrain)} |`);
    L.push(`| V8 heap used (MB) | | ${fmt(m.heapUsedMb.midLoad)} | ${fmt(m.heapUsedMb.endLoad)} | ${fmt(m.heapUsedMb.max)} | |`);
    const h = p.handles;
    L.push(`| open file descriptors | ${fmt(h.fds.beforeLoad)} | | ${fmt(h.fds.endLoad)} | ${fmt(h.fds.maxDuringLoad)} | ${fmt(h.fds.afterDrain)} |`);
    L.push(`| active handles and requests | ${fmt(h.activeResources.beforeLoad)} | | | ${fmt(h.activeResources.maxDuringLoad)} | ${fmt(h.activeResources.afterDrain)} |`);
    L.push('');
    L.push(`Event loop: delay p99 at most ${fmt(p.eventLoop.p99MsMax)} ms in any 5 s window, worst single delay ${fmt(p.eventLoop.maxMs)} ms; mean utilisation ${fmt(p.eventLoop.eluMean)}.`);
    if (p.cpu) L.push(`${several ? 'CPU' : 'Server CPU'} during the load: ${fmt(p.cpu.serverCpuMsPerRequest)} ms per answered request${several ? ' (the requests of all processes)' : ' (webhook deliveries included)'}, ${fmt(p.cpu.serverCoresBusy)} cores busy on average.`);
    L.push('');
  }
  L.push('## Traffic');
  L.push('');
  const t = r.traffic;
  L.push(`${fmt(t.requestsAnswered)} requests in ${fmt(t.loadSeconds)} s (${fmt(t.achievedPerS)}/s, completions included); ${fmt(t.skipped)} skipped; ${fmt(t.completionsSentAtEnd)} pending decisions completed after the load; ${t.resolvedAfterLoad.length} requests with unknown fate retried with their keys after the load; ${fmt(t.staleSocketRetries ?? 0)} requests sent again after a reset on a reused keep-alive socket. Unkeyed creates: ${t.noKeyCreates.sent} sent, ${t.noKeyCreates.acked} acknowledged.`);
  L.push('');
  L.push('| kind | sent | as expected |');
  L.push('|---|---|---|');
  for (const [kind, c] of Object.entries(t.byKind)) L.push(`| ${kind} | ${fmt(c.sent)} | ${fmt(c.ok)} |`);
  L.push('');
  L.push('## Errors');
  L.push('');
  if (r.errors.length === 0) L.push('None: every answer had the expected status and body.');
  else {
    L.push('| class | count | first example |');
    L.push('|---|---|---|');
    for (const e of r.errors) L.push(`| ${e.class} | ${e.count} | ${(e.examples[0] ?? '').replace(/\|/g, '\\|').slice(0, 200)} |`);
  }
  L.push('');
  L.push('## Reconciliation');
  L.push('');
  const d = r.reconciliation.decisions;
  const i = r.reconciliation.idempotency;
  const e = r.reconciliation.events;
  L.push(`- Decisions: ${fmt(d.acknowledged)} acknowledged, ${fmt(d.stored)} stored; ${d.missing} missing, ${d.wrongState} stored in another state, ${d.unacknowledged} unacknowledged.`);
  L.push(`- Idempotency keys: ${fmt(i.keysUsed)} used, each stored once with the answer given (${i.missing} missing, ${i.mismatched} different); no decision under two keys; every replay byte-identical (see Errors).`);
  L.push(`- Events: ${fmt(e.stored)} stored for ${fmt(e.decisionsWithEvents)} decisions; ${e.duplicatedPerDecision} (decision, type) pairs twice; ${e.missingLifecycle} missing lifecycle events.`);
  L.push('');
  L.push('## Webhooks');
  L.push('');
  L.push(`Drain after the load: ${fmt(r.webhooks.drainSeconds)} s (limit ${fmt(s.drainLimitSeconds)} s); deliveries by state: ${JSON.stringify(r.webhooks.deliveryStates)}. Retry waits ${s.retryDelaysMs.map((x) => `${x / 1000} s`).join(', ')}; the outage receiver was down from ${s.outageSeconds.from} s to ${s.outageSeconds.to} s of the load.`);
  L.push('');
  L.push('| endpoint | receiver | subscribed events | delivered rows | not delivered | receiver answers | hung / abandoned by sender | duplicates accepted | attempts (count: rows) |');
  L.push('|---|---|---|---|---|---|---|---|---|');
  for (const ep of r.webhooks.endpoints) {
    L.push(`| ${ep.name} | ${ep.behaviour} | ${fmt(ep.subscribedEvents)} | ${fmt(ep.states.delivered ?? 0)} | ${ep.notDelivered} | ${Object.entries(ep.receiverAnswers).map(([k, v]) => `${k}: ${fmt(v)}`).join(', ')} | ${ep.hung} / ${ep.abandonedBySender} | ${ep.duplicatesAccepted} | ${Object.entries(ep.attempts).map(([k, v]) => `${k}: ${fmt(v)}`).join(', ')} |`);
  }
  L.push('');
  const dupes = r.webhooks.endpoints.filter((ep) => ep.duplicatesAccepted > 0);
  if (dupes.length === 0) L.push('No event was accepted twice by any receiver.');
  else {
    L.push('Duplicates are allowed (delivery is at least once; receivers deduplicate on `id`) and explained by cause:');
    L.push('');
    for (const ep of dupes) L.push(`- ${ep.name}: ${Object.entries(ep.duplicateCauses).filter(([, n]) => n > 0).map(([why, n]) => `${n} x ${why}`).join('; ')}`);
  }
  L.push('');
  L.push('## Latency per minute (ms from when each request was due)');
  L.push('');
  if (r.latency.drift) {
    const dr = r.latency.drift;
    L.push(`Drift, minute ${dr.firstMinute} to minute ${dr.lastMinute}: p50 ${fmt(dr.p50.first)} → ${fmt(dr.p50.last)} (x${fmt(dr.p50.ratio)}), p99 ${fmt(dr.p99.first)} → ${fmt(dr.p99.last)} (x${fmt(dr.p99.ratio)}).`);
    L.push('');
  }
  L.push('| minute | requests | all p50 | all p99 | create p50 | create p99 | poll p50 | poll p99 | completion p99 | replay p99 | events p99 | max |');
  L.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const row of r.latency.perMinute) {
    L.push(`| ${row.minute} | ${fmt(row.requests)} | ${fmt(row.all.p50)} | ${fmt(row.all.p99)} | ${fmt(row.create?.p50)} | ${fmt(row.create?.p99)} | ${fmt(row.poll?.p50)} | ${fmt(row.poll?.p99)} | ${fmt(row.complete?.p99)} | ${fmt(row.replay?.p99)} | ${fmt(row.events?.p99)} | ${fmt(row.all.max)} |`);
  }
  L.push('');
  L.push('## Server over time (one row a minute)');
  L.push('');
  for (const p of processes) {
    if (several) {
      L.push(`### ${p.name}`);
      L.push('');
    }
    L.push('| minute | phase | RSS MB | anon RSS MB | heap used MB | fds | clients / receivers / database sockets | handles | event-loop delay p99 ms | utilisation |');
    L.push('|---|---|---|---|---|---|---|---|---|---|');
    let lastMinute = -1;
    let lastPid = p.samples[0]?.pid;
    for (const sm of p.samples) {
      const minute = Math.floor(sm.tMs / 60_000);
      // Every minute's first sample, the last one, and the first of a restarted process.
      if (minute === lastMinute && sm !== p.samples.at(-1) && sm.pid === lastPid) continue;
      const note = sm.pid !== lastPid ? ` (restarted: pid ${sm.pid})` : '';
      lastMinute = minute;
      lastPid = sm.pid;
      L.push(`| ${fmt(round(sm.tMs / 60_000, 1))} | ${sm.phase}${note} | ${fmt(round(sm.rssMb))} | ${fmt(round(sm.rssAnonMb))} | ${fmt(round(sm.heapUsedMb))} | ${fmt(sm.fds)} | ${fmt(sm.fdKinds?.clients)} / ${fmt(sm.fdKinds?.receivers)} / ${fmt(sm.fdKinds?.database)} | ${fmt(sm.handles)} | ${fmt(sm.lagP99Ms)} | ${fmt(sm.elu)} |`);
    }
    L.push('');
  }
  L.push('## Server log');
  L.push('');
  const exits = processes.map((p) => `${several ? `${p.name} ` : ''}${JSON.stringify(p.exit)}`).join(', ');
  L.push(`Shutdown on SIGTERM: ${exits}. Log lines at warn and above${several ? ' (every process; workers log at info, API processes at warn)' : ' (LOG_LEVEL=warn)'}, by message:`);
  L.push('');
  if (r.serverLog.lines.length === 0) L.push('None.');
  for (const l of r.serverLog.lines.slice(0, 15)) L.push(`- ${l.level} x${l.count}: ${l.msg} ${l.example && l.example !== '{}' ? `(${l.example})` : ''}`);
  L.push('');
  return L.join('\n');
}

export function renderSummary(r) {
  const s = r.settings;
  const d = r.reconciliation.decisions;
  const lines = [
    `Soak ${s.database}${s.scaleOut ? ` scale-out (${s.scaleOut.api} API + ${s.scaleOut.workers} workers)` : ''}, ${s.minutes} min at ${s.ratePerS} req/s: ${r.verdict.pass ? 'PASS' : 'FAIL'}`,
    `  requests ${r.traffic.requestsAnswered} (${r.traffic.achievedPerS}/s), unexpected answers ${r.errors.reduce((a, e) => a + e.count, 0)}`,
    `  decisions ${d.acknowledged} acknowledged / ${d.stored} stored, missing ${d.missing}, wrong ${d.wrongState}, unacknowledged ${d.unacknowledged}`,
    `  events ${r.reconciliation.events.stored}, duplicated ${r.reconciliation.events.duplicatedPerDecision}; deliveries ${JSON.stringify(r.webhooks.deliveryStates)} after a ${r.webhooks.drainSeconds} s drain`,
    ...r.webhooks.endpoints.map((ep) => `    ${ep.name.padEnd(14)} ${String(ep.subscribedEvents).padStart(7)} events, not delivered ${ep.notDelivered}, duplicates ${ep.duplicatesAccepted}, answers ${JSON.stringify(ep.receiverAnswers)}`),
    `  latency p50/p99 ms: minute ${r.latency.drift?.firstMinute} ${r.latency.drift?.p50.first}/${r.latency.drift?.p99.first}, minute ${r.latency.drift?.lastMinute} ${r.latency.drift?.p50.last}/${r.latency.drift?.p99.last}`,
    ...processesOf(r).flatMap((p) => {
      const who = p.name === 'server' ? 'server' : `${p.name}${p.restarts.length ? ` (restarted, stopped in ${p.restarts.map((x) => `${x.stopMs} ms, exit ${x.exit?.code}`).join('; ')})` : ''}`;
      return [
        `  ${who} memory (issue 10, no growth across a soak of ${MEMORY_JUDGED_FROM_MINUTES}+ min): ${p.memory.verdict.toUpperCase()}; RSS second-half slope ${p.memory.rssSecondHalfSlopeMbPerMin} MB/min (limit ${p.memory.thresholdMbPerMin}); RSS ${p.memory.rssMb.start} MB at start, ${p.memory.rssMb.midLoad} mid-load, ${p.memory.rssMb.endLoad} at the end; V8 heap floor slope ${p.memory.heapFloorSecondHalfSlopeMbPerMin} MB/min`,
        `    CPU ${p.cpu?.serverCpuMsPerRequest} ms per request, ${p.cpu?.serverCoresBusy} cores busy; fds ${p.handles.fds.beforeLoad} before, ${p.handles.fds.maxDuringLoad} max, ${p.handles.fds.afterDrain} after the drain; event-loop delay p99 <= ${p.eventLoop.p99MsMax} ms`,
      ];
    }),
  ];
  if (!r.verdict.pass) lines.push('  why:', ...r.verdict.reasons.slice(0, 20).map((x) => `    - ${x}`));
  return lines.join('\n');
}

/** `node soak/report.mjs NAME`: render soak/results/NAME.md again from NAME.json (after a change to the layout). */
if (process.argv[1] && process.argv[1].endsWith('report.mjs') && process.argv[2]) {
  const { readFileSync, writeFileSync } = await import('node:fs');
  const base = new URL(`./results/${process.argv[2]}`, import.meta.url);
  const result = JSON.parse(readFileSync(`${base.pathname}.json`, 'utf8'));
  writeFileSync(`${base.pathname}.md`, renderMarkdown(result));
  process.stdout.write(renderSummary(result) + '\n');
}
