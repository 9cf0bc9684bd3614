/**
 * The retry decision, the auto-disable rule and fair slot sharing: pure functions, driven with a
 * ManualClock's dates and plain numbers (interface.md, Delivery rules; decisions.md section 9).
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { planClaims } from '../../../src/modules/webhooks/fairness.js';
import {
  AUTO_DISABLE_THRESHOLD, DEFAULT_RETRY_SCHEDULE, attemptTimeline, endpointHealthAfter, isSuccessStatus, maxAttempts, scheduleNextAttempt,
} from '../../../src/modules/webhooks/retry-schedule.js';

const MIN = 60_000;
const H = 60 * MIN;

describe('retry schedule', () => {
  it('is 8 attempts: at once, then 1 min, 5 min, 30 min, 2 h, 6 h, 24 h, 72 h after the previous one', () => {
    expect(maxAttempts()).toBe(8);
    expect(DEFAULT_RETRY_SCHEDULE.delaysMs).toEqual([1 * MIN, 5 * MIN, 30 * MIN, 2 * H, 6 * H, 24 * H, 72 * H]);
    const start = new Date('2026-01-15T12:00:00.000Z');
    const timeline = attemptTimeline(start).map((d) => d.toISOString());
    expect(timeline).toEqual([
      '2026-01-15T12:00:00.000Z',
      '2026-01-15T12:01:00.000Z',
      '2026-01-15T12:06:00.000Z',
      '2026-01-15T12:36:00.000Z',
      '2026-01-15T14:36:00.000Z',
      '2026-01-15T20:36:00.000Z',
      '2026-01-16T20:36:00.000Z',
      '2026-01-19T20:36:00.000Z',
    ]);
    // The spec's "about 3.5 days" is the sum of the intervals: 104 h 36 min.
    expect(timeline.length).toBe(8);
    expect(new Date(timeline[7]!).getTime() - start.getTime()).toBe(104 * H + 36 * MIN);
  });

  it('walks a delivery through every failure with a controlled clock, each delay measured from the previous attempt', () => {
    const clock = new ManualClock('2026-03-01T00:00:00.000Z');
    const attempts: Array<{ attempt: number; at: string }> = [];
    let attempt = 1;
    for (;;) {
      attempts.push({ attempt, at: clock.now().toISOString() });
      clock.advance(2_500); // the attempt itself took 2.5 s (a slow failure)
      const step = scheduleNextAttempt({ attempt, succeeded: false, finishedAt: clock.now() });
      if (step.kind === 'failed') break;
      expect(step.kind).toBe('retry');
      if (step.kind !== 'retry') return;
      expect(step.attempt).toBe(attempt + 1);
      expect(step.at.getTime() - clock.now().getTime()).toBe(DEFAULT_RETRY_SCHEDULE.delaysMs[attempt - 1]);
      clock.set(step.at);
      attempt = step.attempt;
    }
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(attempts[7]!.at).toBe('2026-03-05T08:36:17.500Z');
  });

  it('a success at any attempt delivers; the eighth failure fails', () => {
    const at = new Date('2026-01-01T00:00:00Z');
    for (let attempt = 1; attempt <= 8; attempt++) expect(scheduleNextAttempt({ attempt, succeeded: true, finishedAt: at })).toEqual({ kind: 'delivered' });
    expect(scheduleNextAttempt({ attempt: 8, succeeded: false, finishedAt: at })).toEqual({ kind: 'failed' });
    expect(scheduleNextAttempt({ attempt: 7, succeeded: false, finishedAt: at })).toEqual({ kind: 'retry', attempt: 8, at: new Date(at.getTime() + 72 * H) });
    expect(scheduleNextAttempt({ attempt: 1, succeeded: false, finishedAt: at })).toEqual({ kind: 'retry', attempt: 2, at: new Date(at.getTime() + MIN) });
    expect(scheduleNextAttempt({ attempt: 12, succeeded: false, finishedAt: at })).toEqual({ kind: 'failed' });
    expect(() => scheduleNextAttempt({ attempt: 0, succeeded: false, finishedAt: at })).toThrow(RangeError);
  });

  it('takes another schedule as input', () => {
    const schedule = { delaysMs: [10, 20] };
    const at = new Date(0);
    expect(maxAttempts(schedule)).toBe(3);
    expect(scheduleNextAttempt({ attempt: 2, succeeded: false, finishedAt: at }, schedule)).toEqual({ kind: 'retry', attempt: 3, at: new Date(20) });
    expect(scheduleNextAttempt({ attempt: 3, succeeded: false, finishedAt: at }, schedule)).toEqual({ kind: 'failed' });
  });

  it('success is any 2xx and nothing else', () => {
    for (const s of [200, 201, 202, 204, 299]) expect(isSuccessStatus(s)).toBe(true);
    for (const s of [100, 199, 300, 301, 302, 304, 307, 308, 400, 404, 410, 429, 500, 502, 503]) expect(isSuccessStatus(s)).toBe(false);
  });
});

describe('auto-disable rule', () => {
  it('the 50th consecutive failed delivery disables; a delivered event resets the count', () => {
    expect(AUTO_DISABLE_THRESHOLD).toBe(50);
    let count = 0;
    for (let i = 1; i <= 49; i++) {
      const h = endpointHealthAfter(count, 'failed');
      expect(h.disable).toBe(false);
      count = h.consecutiveFailures;
    }
    expect(count).toBe(49);
    expect(endpointHealthAfter(count, 'delivered')).toEqual({ consecutiveFailures: 0, disable: false });
    expect(endpointHealthAfter(count, 'failed')).toEqual({ consecutiveFailures: 50, disable: true });
    expect(endpointHealthAfter(2, 'failed', 3)).toEqual({ consecutiveFailures: 3, disable: true });
  });
});

describe('fair claim plan', () => {
  it('deals slots round-robin in the given order and never past the per-endpoint cap', () => {
    const plan = planClaims(
      [
        { endpointId: 'slow', inFlight: 3, due: 100 },
        { endpointId: 'a', inFlight: 0, due: 100 },
        { endpointId: 'b', inFlight: 0, due: 2 },
      ],
      { slots: 10, perEndpointCap: 4 },
    );
    expect(plan).toEqual([
      { endpointId: 'slow', count: 1 },
      { endpointId: 'a', count: 4 },
      { endpointId: 'b', count: 2 },
    ]);
  });

  it('with fewer slots than endpoints, the oldest-due endpoints get one each', () => {
    const candidates = Array.from({ length: 5 }, (_, i) => ({ endpointId: `e${i}`, inFlight: 0, due: 50 }));
    expect(planClaims(candidates, { slots: 3, perEndpointCap: 8 })).toEqual([
      { endpointId: 'e0', count: 1 },
      { endpointId: 'e1', count: 1 },
      { endpointId: 'e2', count: 1 },
    ]);
  });

  it('an endpoint at its cap gets nothing, and no slots means no claims', () => {
    expect(planClaims([{ endpointId: 'full', inFlight: 8, due: 9 }], { slots: 10, perEndpointCap: 8 })).toEqual([]);
    expect(planClaims([{ endpointId: 'x', inFlight: 0, due: 9 }], { slots: 0, perEndpointCap: 8 })).toEqual([]);
  });
});
