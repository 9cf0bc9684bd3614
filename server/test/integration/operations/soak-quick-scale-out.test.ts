/**
 * The traffic soak's scale-out shape (soak/run.mjs --scale-out, docs/reliability.md "The scale-out
 * shape") in its quick form, in every run of the suite: the same 90 s mix, receivers and
 * reconciliation as soak-quick.test.ts, against two `cds serve --role api` processes (the soak
 * sends each request to the next in turn) and two `cds serve --role worker` processes on one
 * PostgreSQL database and one Redis, with a rolling restart of one API process and one worker at a
 * quarter of the load.
 *
 * What it shows that multi-node.test.ts and rolling-restart.test.ts do not: the whole mix (every
 * tier, completions, replays through either process, failing and slow receivers, an outage) over
 * the restart of a process of each role, with every decision, idempotency record and event
 * accounted for and no event accepted twice. And it keeps the soak's scale-out mode working: a
 * check nobody runs rots (soak-quick.test.ts says how the soak once did).
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { isPostgresReachable, PG_ADMIN_URL } from '../../support/databases.js';
import { isRedisReachable, REDIS_TEST_URL } from '../../support/redis.js';
import { cleanupProcesses } from '../../support/server-process.js';
import { runSoak } from '../../support/soak.js';
const available = (await isPostgresReachable()) && (await isRedisReachable('the scale-out soak'));

describe.skipIf(!available)('the quick traffic soak, scale-out shape (PostgreSQL, Redis, 2 API processes, 2 workers)', () => {
  afterAll(cleanupProcesses);

  it('passes through a rolling restart of an API process and a worker: nothing lost or duplicated, every subscribed event delivered', async () => {
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
  }, 420_000);
});
