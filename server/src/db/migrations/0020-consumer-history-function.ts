/**
 * 0020: PostgreSQL only, `cds_consumer_history(consumer, since, window)`: the counts of a
 * consumer's latest `window` decisions created at or after `since`, as
 * "applications,approvals,declines,referrals" (what a create's applicant read and
 * `consumers.service.ts` `history` compute).
 *
 * Why a function: its one statement is planned with sorting and bitmap scans off (the `set`
 * clauses below apply while the function runs, and its plan is made under them), so it always walks
 * `decisions_consumer` (consumer_id, created_at, outcome) backwards from the newest and stops after
 * `window` entries. Written inline, PostgreSQL chose its plan from an estimate of the consumer's
 * decisions: without statistics, or with statistics that average over all consumers, it expects a
 * handful, and then a bitmap scan of all of them and a sort is cheaper on paper. For a consumer
 * with many decisions (a sandbox's seeded consumers take every test a lender sends) that plan read
 * every one: 20 ms per read at 20,000 decisions, growing without bound (docs/adr/0038). SQLite's
 * planner takes the index's order for ORDER BY … LIMIT by itself; it keeps the inline subquery.
 *
 * plpgsql, not sql: a plpgsql function keeps its statement's plan for the session (a sql function
 * with `set` clauses is not inlined and is planned again in every statement that calls it).
 */
import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`
    create function cds_consumer_history(p_consumer text, p_since bigint, p_window integer) returns text
    language plpgsql stable
    set enable_sort = off
    set enable_bitmapscan = off
    as $fn$
    declare
      counts text;
    begin
      select count(*) || ',' || count(*) filter (where h.outcome = 'approved') || ',' || count(*) filter (where h.outcome = 'declined') || ',' || count(*) filter (where h.outcome = 'referred')
        into counts
        from (select d.outcome from decisions d where d.consumer_id = p_consumer and d.created_at >= p_since order by d.created_at desc limit p_window) h;
      return counts;
    end
    $fn$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`drop function cds_consumer_history(text, bigint, integer)`.execute(db);
}
