/**
 * Preloaded into the soaked server (`node --import ./soak/probe.mjs server/dist/cli/main.js serve`):
 * what only the process itself can see, appended as one JSON line every SOAK_PROBE_INTERVAL_MS to
 * SOAK_PROBE_FILE: V8 heap (used, total), external and array-buffer memory, event-loop delay
 * (p50/p99/max over the interval, from perf_hooks' histogram), event-loop utilisation, and the
 * active handles and requests by kind (process.getActiveResourcesInfo). RSS and open file
 * descriptors are read from /proc by the harness, outside the process.
 *
 * It changes nothing in the service: no forced garbage collection, no route, an unref'd timer,
 * and one small synchronous append per interval. Without SOAK_PROBE_FILE it does nothing.
 */
import fs from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';

const file = process.env.SOAK_PROBE_FILE;
if (file) {
  const everyMs = Number(process.env.SOAK_PROBE_INTERVAL_MS) || 5000;
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  let lastElu = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    const elu = performance.eventLoopUtilization(lastElu);
    lastElu = performance.eventLoopUtilization();
    const resources = {};
    for (const kind of process.getActiveResourcesInfo()) resources[kind] = (resources[kind] ?? 0) + 1;
    const ms = (ns) => Math.round(ns / 1e4) / 100;
    const line = {
      t: Date.now(),
      pid: process.pid,
      rss: m.rss,
      heapUsed: m.heapUsed,
      heapTotal: m.heapTotal,
      external: m.external,
      arrayBuffers: m.arrayBuffers,
      elu: Math.round(elu.utilization * 1000) / 1000,
      lagP50Ms: ms(delay.percentile(50)),
      lagP99Ms: ms(delay.percentile(99)),
      lagMaxMs: ms(delay.max),
      resources,
    };
    delay.reset();
    try {
      fs.appendFileSync(file, JSON.stringify(line) + '\n');
    } catch {
      /* the harness removed the folder: nothing to report to */
    }
  }, everyMs);
  timer.unref();
}
