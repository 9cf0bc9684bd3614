/**
 * Background work of the `worker` role: periodic jobs run on timers, each guarded so one slow run
 * never overlaps the next and one failing job never stops the others. Later issues add the webhook
 * delivery loop and the pending-decision expiry sweeper here.
 *
 * Loops are long-running work that paces itself (the webhook delivery worker ticks every 250 ms and
 * again whenever a send finishes); they start with the jobs and are drained on stop.
 */
import type { AppContext } from '../app/context.js';

export interface Job {
  name: string;
  everyMs: number;
  run(ctx: AppContext): Promise<unknown>;
}

export const JOBS: Job[] = [
  {
    // Pending decisions past their deadline become declined (AA-01) even if nobody polls them.
    name: 'expire-pending-decisions',
    everyMs: 15_000,
    run: (ctx) => ctx.decisions.expireOverdue(),
  },
  {
    name: 'purge-expired-idempotency-keys',
    everyMs: 10 * 60 * 1000,
    run: (ctx) => ctx.idempotency.purgeExpired(),
  },
  {
    // Webhook attempt history is kept 30 days (decisions.md section 9).
    name: 'purge-webhook-history',
    everyMs: 60 * 60 * 1000,
    run: (ctx) => ctx.webhooks.purgeHistory(),
  },
  {
    // Portal sessions a day past their absolute expiry (they can no longer be used anyway).
    name: 'purge-portal-sessions',
    everyMs: 60 * 60 * 1000,
    run: (ctx) => ctx.accounts.purgeSessions(),
  },
];

export interface Loop {
  name: string;
  start(ctx: AppContext): void;
  /** Resolves once in-flight work has finished. */
  stop(ctx: AppContext): Promise<void>;
}

export const LOOPS: Loop[] = [
  {
    name: 'deliver-webhooks',
    start: (ctx) => ctx.webhookDelivery.start(),
    stop: (ctx) => ctx.webhookDelivery.stop(),
  },
];

export function startWorkers(ctx: AppContext, jobs: Job[] = JOBS, loops: Loop[] = LOOPS): { stop(): Promise<void> } {
  const timers: NodeJS.Timeout[] = [];
  const running = new Set<Promise<unknown>>();
  for (const job of jobs) {
    let busy = false;
    const tick = () => {
      if (busy) return;
      busy = true;
      const p = job
        .run(ctx)
        .then((result) => ctx.logger.debug({ job: job.name, result }, 'job finished'))
        .catch((err: unknown) => ctx.logger.error({ job: job.name, err }, 'job failed'))
        .finally(() => {
          busy = false;
          running.delete(p);
        });
      running.add(p);
    };
    tick();
    timers.push(setInterval(tick, job.everyMs).unref());
  }
  for (const loop of loops) loop.start(ctx);
  return {
    async stop() {
      for (const t of timers) clearInterval(t);
      await Promise.allSettled([...running, ...loops.map((loop) => loop.stop(ctx))]);
    },
  };
}
