/**
 * The flat-out read loads (/healthz and polls) from wrk, a load generator written in C, as a
 * cross-check of autocannon's figures (bench/run.mjs, scenarios `healthz_wrk` and `poll_wrk`).
 *
 * Why: the load generator shares the machine's two cores with the server. autocannon parses every
 * response in JavaScript and costs about 16 µs of CPU per /healthz and about 21 µs per poll (an
 * 800-byte body; 27 to 31 µs while the bench rebuilt every poll request, before 2026-12-05); wrk
 * about 8 to 13 and 9 to 16 µs (its Lua checks included). So autocannon takes more of the machine
 * from the server during polls than during /healthz, and its poll ratio comes out lower than
 * wrk's (docs/performance.md, "thirty-fifth session"). Issue 10 is checked with "an independent
 * load generator": it may be either kind, so both are reported.
 *
 * How: one wrk thread, `connections` connections, keep-alive, for `seconds`. A Lua script checks
 * every response as autocannon's scenarios do: /healthz must answer `{"status":"ok"}`; a poll
 * must answer 200 with the body of one of the run's approved decisions (wrk's response callback
 * does not say which request it answers, so the id is checked against the set polled, not against
 * the one asked for). wrk counts a 4xx or 5xx itself. The script's `done` prints one line of JSON
 * with the counts and wrk's own latency percentiles (microseconds, every response included).
 * The CPU of wrk is read from this process's children's times once it has exited and been reaped.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { reapedChildrenCpuMs } from './proc.mjs';

/** wrk's version line, or null when it is not installed (Debian: `apt-get install wrk`). */
export function wrkVersion() {
  const r = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (r.error) return null;
  return ((r.stdout || r.stderr).split('\n')[0] ?? '').trim() || null;
}

const HEALTHZ_CHECK = `
function response(status, headers, body)
  if status == 200 and body ~= '{"status":"ok"}' then
    failures = failures + 1
    if sample == nil then sample = string.sub(body, 1, 200) end
  end
end
`;

function pollScript(apiKey, idsFile) {
  return `
local ids = {}
local known = {}
for line in io.lines(${JSON.stringify(idsFile)}) do ids[#ids + 1] = line; known[line] = true end
local i = 0
wrk.headers["Authorization"] = "Bearer ${apiKey}"
function request()
  i = i + 1
  return wrk.format("GET", "/v1/decisions/bnpl/" .. ids[(i % #ids) + 1])
end
function response(status, headers, body)
  if status ~= 200 then return end
  if string.sub(body, 1, 16) ~= '{"decision_id":"' or not known[string.sub(body, 17, 52)] or not string.find(body, '"outcome":"approved"', 1, true) then
    failures = failures + 1
    if sample == nil then sample = string.sub(body, 1, 200) end
  end
end
`;
}

const COMMON = `
failures = 0
sample = nil
local threads = {}
function setup(thread) table.insert(threads, thread) end
function done(summary, latency, requests)
  local f = 0
  local s = ""
  for _, t in ipairs(threads) do
    f = f + t:get("failures")
    local x = t:get("sample")
    if x ~= nil then s = x end
  end
  local e = summary.errors
  io.write(string.format('BENCH_WRK {"requests":%d,"durationUs":%d,"connectErrors":%d,"readErrors":%d,"writeErrors":%d,"statusErrors":%d,"timeouts":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d,"failures":%d}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, f))
  io.write("BENCH_WRK_SAMPLE " .. s .. "\\n")
end
`;

/**
 * Runs wrk against `url` and answers what it saw: requests, requests/s, latencies in ms,
 * non-2xx, transport errors, failed checks with a sample, and wrk's CPU in ms.
 */
export async function runWrk({ url, kind, seconds, connections, apiKey = null, ids = null, dir }) {
  const script = path.join(dir, `wrk-${kind}.lua`);
  let target = url;
  if (kind === 'poll') {
    const idsFile = path.join(dir, 'wrk-poll-ids.txt');
    await writeFile(idsFile, ids.join('\n') + '\n');
    await writeFile(script, COMMON + pollScript(apiKey, idsFile));
  } else {
    await writeFile(script, COMMON + HEALTHZ_CHECK);
    target = `${url}/healthz`;
  }
  const cpu0 = reapedChildrenCpuMs();
  const child = spawn('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', script, target], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const code = await new Promise((resolve) => child.once('close', resolve));
  const cpuMs = reapedChildrenCpuMs() - cpu0;
  const line = /^BENCH_WRK (\{.*\})$/m.exec(out);
  if (code !== 0 || !line) throw new Error(`wrk exited with ${code}:\n${out.slice(-2000)}`);
  const r = JSON.parse(line[1]);
  const sample = /^BENCH_WRK_SAMPLE (.*)$/m.exec(out)?.[1] ?? '';
  return {
    completed: r.requests,
    requestsPerS: r.requests / (r.durationUs / 1e6),
    latencyMs: { p50: r.p50 / 1000, p90: r.p90 / 1000, p99: r.p99 / 1000, max: r.max / 1000 },
    non2xx: r.statusErrors,
    transportErrors: r.connectErrors + r.readErrors + r.writeErrors,
    timeouts: r.timeouts,
    failedChecks: r.failures,
    failureSamples: r.failures > 0 ? [`${kind}: unexpected body ${sample}`] : [],
    cpuMs,
  };
}
