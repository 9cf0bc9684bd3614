/**
 * The traffic soak (soak/run.mjs, docs/reliability.md "Stability over time") in its quick forms, in
 * every run of the suite, both at once.
 *
 * The SQLite soak: 90 s of the whole mix (BNPL and auto-loan creates of every tier, polls,
 * verification completions, keyed retries and replays, the event list, five webhook receivers of
 * which one fails, one hangs past the time-out and one goes down for 20 s), then the drain and the
 * reconciliation: every answer as expected, every acknowledged decision stored as answered, every
 * idempotency key stored once with its answer, no event twice, every subscribed event accepted by
 * its receiver, descriptors given back, a clean exit on SIGTERM.
 *
 * The scale-out soak (--scale-out, docs/reliability.md "The scale-out shape"): the same mix,
 * receivers and reconciliation against two `cds serve --role api` processes (the soak sends each
 * request to the next in turn) and two `cds serve --role worker` processes on one PostgreSQL
 * database and one Redis, with a rolling restart of one API process and one worker at a quarter of
 * the load. What it shows that multi-node.test.ts and rolling-restart.test.ts do not: the whole mix
 * (every tier, completions, replays through either process, failing and slow receivers, an outage)
 * over the restart of a process of each role, with every decision, idempotency record and event
 * accounted for and no event accepted twice.
 *
 * Why they are here and not only in `npm run soak`: the soak checks the service end to end, and a
 * check nobody runs rots. Its check of the event list still required version 4 event ids a day
 * after ADR 0022 made them version 7, and every soak since failed on it unseen.
 *
 * Why one file, its two tests concurrent: each soak is a child process that this worker only waits
 * on for about two and a half minutes, mostly at a light load. As two files they held both of a
 * 2-core machine's test workers for that long, with the machine half idle; as one file they hold
 * one, and the other worker runs the rest of the suite beside them. At 25 and 20 requests/s (half
 * the soak's default and less) so that the test file running beside them cannot overload the
 * machine; memory is not judged on a load this short (the 10-minute soaks are,
 * docs/reliability.md). vitest.config.ts starts this file first.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, it } from 'vitest';
import { isPostgresReachable, PG_ADMIN_URL } from '../../support/databases.js';
import { isRedisReachable, REDIS_TEST_URL } from '../../support/redis.js';
import { cleanupProcesses } from '../../support/server-process.js';
import { runSoak } from '../../support/soak.js';

const scaleOutAvailable = (await isPostgresReachable()) && (await isRedisReachable('the scale-out soak'));

describe.concurrent('the quick traffic soaks', () => {
  afterAll(cleanupProcesses);

  it('SQLite, one process: every answer as expected, nothing lost or duplicated, every subscribed event delivered', async ({ expect }) => {
    const { code, report, diagnostics } = await runSoak(['--quick', '--rate', '25']);
    expect(code, diagnostics).toBe(0);
    expect(report).toMatch(/^\*\*PASS\*\*/m);
    // RSS after a backlog depends on the allocator (ADR 0042), so the report names it.
    expect(report).toMatch(/^\*\*PASS\*\*\. Started .* Memory allocator: (glibc's malloc|`LD_PRELOAD=)/m);
    expect(report).toMatch(/^None: every answer had the expected status and body\.$/m);
    expect(report).toMatch(/No event was accepted twice by any receiver\./);
  }, 420_000);

  it.skipIf(!scaleOutAvailable)(
    'scale-out (PostgreSQL, Redis, 2 API processes, 2 workers) through a rolling restart of an API process and a worker: nothing lost or duplicated, every subscribed event delivered',
    async ({ expect }) => {
      const { code, report, jsonFile, diagnostics } = await runSoak(['--quick', '--rate', '20', '--db', 'postgres', '--postgres', PG_ADMIN_URL, '--scale-out', '--redis', REDIS_TEST_URL]);
      expect(code, diagnostics).toBe(0);
      expect(report).toMatch(/^\*\*PASS\*\*/m);
      expect(report).toMatch(/^None: every answer had the expected status and body\.$/m);
      expect(report).toMatch(/No event was accepted twice by any receiver\./);

      // The shape ran as asked: four processes, each judged, and the rolling restart happened with
      // a clean stop of one process of each role.
      const result = JSON.parse(readFileSync(jsonFile, 'utf8')) as {
        processes: { name: string; role: string; exit: { code: number | null }; restarts: { exit: { code: number | null; signal: string | null }; newPid: number }[]; samples: { pid: number }[] }[];
      };
      expect(result.processes.map((p) => `${p.name}:${p.role}`)).toEqual(['api-1:api', 'api-2:api', 'worker-1:worker', 'worker-2:worker']);
      for (const p of result.processes) expect(p.exit.code, p.name).toBe(0);
      const restarted = result.processes.filter((p) => p.restarts.length > 0);
      expect(restarted.map((p) => p.name)).toEqual(['api-1', 'worker-1']);
      for (const p of restarted) {
        expect(p.restarts[0]!.exit).toMatchObject({ code: 0, signal: null });
        // Sampled before and after: the old pid, then the new one.
        const pids = [...new Set(p.samples.map((s) => s.pid))];
        expect(pids.length, p.name).toBe(2);
        expect(pids[1]).toBe(p.restarts[0]!.newPid);
      }
    },
    420_000,
  );
});
