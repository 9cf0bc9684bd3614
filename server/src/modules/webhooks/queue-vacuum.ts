/**
 * The webhook delivery queue vacuumed by the delivery worker when PostgreSQL's autovacuum does not
 * (PostgreSQL only).
 *
 * Why. Every delivery leaves dead row versions in `webhook_deliveries` (its claim and its result
 * are updates), and the claim's index scans walk over their index entries until VACUUM removes
 * them. Migration 0014 has autovacuum clean the queue after 5,000 dead rows, but a server whose
 * autovacuum is off (`autovacuum = off`, as on the machines our CI runs on) never cleans it, and
 * the cycles slow down as the dead rows pile up. Measured on such a server
 * (docs/performance.md, "twenty-sixth session"): after 111,557 dead rows a cycle's statement took
 * 50 to 110 ms, the healthy endpoint of a 10-minute soak received about 60 deliveries a second for
 * the 112 a second it was sent, and 1,357 of its deliveries were still waiting at the end of the
 * drain. One VACUUM took its backlog of 7,536 down to 21 within 20 seconds.
 *
 * How it works. Every `intervalMs` the worker reads the table's dead rows from PostgreSQL's
 * statistics (`pg_stat_user_tables.n_dead_tup`, kept whether autovacuum runs or not). Above
 * `deadRowsAbove` (by default five times 0014's trigger, so a running autovacuum always gets there
 * first), it takes a session advisory lock, so that one process at a time vacuums, and runs
 * `VACUUM webhook_deliveries` on a connection of its own, outside any transaction. VACUUM takes no
 * lock that the claims, results or the API's inserts wait for. The first time, it logs a
 * warning that autovacuum is not keeping up; after that, each VACUUM is logged at info.
 */
import { sql, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../../db/schema.js';

export const QUEUE_VACUUM_DEFAULTS = { deadRowsAbove: 25_000, intervalMs: 15_000 } as const;

/** What one check did: vacuumed the queue, found too few dead rows, or left it to the process that holds the lock. */
export type QueueVacuumResult = { kind: 'vacuumed'; deadRows: number; ms: number } | { kind: 'not-needed'; deadRows: number } | { kind: 'busy'; deadRows: number };

/** The session advisory lock one vacuuming process holds (its `hashtext` key). */
export const QUEUE_VACUUM_LOCK = 'cds.webhooks.queue-vacuum';

export interface QueueVacuum {
  check(): Promise<QueueVacuumResult>;
  /** Checks every `intervalMs` (a timer that keeps no process alive), one check at a time; a failed check is logged. */
  start(): void;
  /** No more checks; resolves once the one running, if any, has ended. */
  stop(): Promise<void>;
}

export function createQueueVacuum(deps: { db: Kysely<Database>; logger: Logger }, options: { deadRowsAbove?: number; intervalMs?: number } = {}): QueueVacuum {
  const { deadRowsAbove, intervalMs } = { ...QUEUE_VACUUM_DEFAULTS, ...options };
  let warned = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  const vacuum: QueueVacuum = {
    async check() {
      const stats = await sql<{ dead: string | number | null }>`
        select n_dead_tup as dead from pg_stat_user_tables where relname = 'webhook_deliveries' and schemaname = current_schema()`.execute(deps.db);
      const deadRows = Number(stats.rows[0]?.dead ?? 0);
      if (deadRows <= deadRowsAbove) return { kind: 'not-needed', deadRows };
      // A session lock and the VACUUM on the same connection; VACUUM cannot run in a transaction.
      return deps.db.connection().execute(async (connection) => {
        const locked = await sql<{ locked: boolean }>`select pg_try_advisory_lock(hashtext(${QUEUE_VACUUM_LOCK})) as locked`.execute(connection);
        if (!locked.rows[0]?.locked) return { kind: 'busy' as const, deadRows };
        const started = performance.now();
        try {
          await sql`vacuum webhook_deliveries`.execute(connection);
        } finally {
          await sql`select pg_advisory_unlock(hashtext(${QUEUE_VACUUM_LOCK}))`.execute(connection);
        }
        const ms = Math.round(performance.now() - started);
        if (!warned) {
          warned = true;
          deps.logger.warn(
            { deadRows, ms },
            'the webhook delivery queue had many dead rows: autovacuum is off or not keeping up, so the delivery worker vacuumed it (turn autovacuum on: docs/deployment.md)',
          );
        } else deps.logger.info({ deadRows, ms }, 'webhook delivery queue vacuumed by the delivery worker');
        return { kind: 'vacuumed' as const, deadRows, ms };
      });
    },
    start() {
      if (timer !== null) return;
      timer = setInterval(() => {
        if (running !== null) return;
        running = vacuum
          .check()
          .then(
            () => undefined,
            (err: unknown) => deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'vacuuming the webhook delivery queue failed; the next check tries again'),
          )
          .finally(() => (running = null));
      }, intervalMs);
      timer.unref();
    },
    async stop() {
      if (timer !== null) clearInterval(timer);
      timer = null;
      await running;
    },
  };
  return vacuum;
}
