/**
 * The traffic soak (soak/run.mjs, docs/reliability.md "Stability over time") in its quick form, in
 * every run of the suite: 90 s of the whole mix at once (BNPL and auto-loan creates of every tier,
 * polls, verification completions, keyed retries and replays, the event list, five webhook
 * receivers of which one fails, one hangs past the time-out and one goes down for 20 s), then the
 * drain and the reconciliation: every answer as expected, every acknowledged decision stored as
 * answered, every idempotency key stored once with its answer, no event twice, every subscribed
 * event accepted by its receiver, descriptors given back, a clean exit on SIGTERM.
 *
 * Why it is here and not only in `npm run soak`: the soak checks the service end to end, and a
 * check nobody runs rots. Its check of the event list still required version 4 event ids a day
 * after ADR 0022 made them version 7, and every soak since failed on it unseen. At 25 requests/s
 * (half the soak's default) so that a test file running beside it cannot overload the machine;
 * memory is not judged on a load this short (the 10-minute soak is, docs/reliability.md).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupProcesses } from '../../support/server-process.js';
import { runSoak } from '../../support/soak.js';

describe('the quick traffic soak (SQLite)', () => {
  afterAll(cleanupProcesses);

  it('passes: every answer as expected, nothing lost or duplicated, every subscribed event delivered', async () => {
    const { code, report, diagnostics } = await runSoak(['--quick', '--rate', '25']);
    expect(code, diagnostics).toBe(0);
    expect(report).toMatch(/^\*\*PASS\*\*/m);
    expect(report).toMatch(/^None: every answer had the expected status and body\.$/m);
    expect(report).toMatch(/No event was accepted twice by any receiver\./);
  }, 420_000);
});
