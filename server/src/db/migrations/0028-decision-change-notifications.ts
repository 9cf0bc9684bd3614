/**
 * 0028: PostgreSQL tells every server process when a decision's poll answer may have changed, so
 * that the poll cache (modules/decisions/decision-cache.ts, ADR 0050) can drop it. Triggers
 * `pg_notify('cds_decision_changes', <decision id>)` when a row of `decisions` is updated or
 * deleted, and `*` when the table is truncated. Every update notifies, whichever columns it sets:
 * the two kinds there are (a verification finished or expired, an underwriter's action) change the
 * answer, and an operator's SQL is not second-guessed. Inserts notify nothing: a decision cannot
 * be cached before it exists.
 *
 * Being triggers, they fire whoever writes: the service, a worker process, an operator's SQL. The
 * notification leaves only when the transaction commits, and before the committing client hears
 * that it did (as migration 0012's).
 *
 * SQLite: nothing to do; the poll cache is PostgreSQL's only (ADR 0050 says why).
 */
import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`
    create function cds_notify_decision_change() returns trigger language plpgsql as $$
    begin
      perform pg_notify('cds_decision_changes', old.id);
      return null;
    end $$`.execute(db);
  await sql`create trigger decisions_notify_change after update or delete on decisions for each row execute function cds_notify_decision_change()`.execute(db);
  await sql`
    create function cds_notify_decisions_truncate() returns trigger language plpgsql as $$
    begin
      perform pg_notify('cds_decision_changes', '*');
      return null;
    end $$`.execute(db);
  await sql`create trigger decisions_notify_truncate after truncate on decisions for each statement execute function cds_notify_decisions_truncate()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`drop trigger if exists decisions_notify_change on decisions`.execute(db);
  await sql`drop trigger if exists decisions_notify_truncate on decisions`.execute(db);
  await sql`drop function if exists cds_notify_decision_change()`.execute(db);
  await sql`drop function if exists cds_notify_decisions_truncate()`.execute(db);
}
