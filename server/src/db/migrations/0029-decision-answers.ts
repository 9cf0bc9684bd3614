/**
 * 0029: a decision's poll answer, stored with the row once the decision is final (ADR 0051).
 *
 * `answer_json` is the JSON text a poll answers with (`presentDecisionJson`), written by the
 * statement that makes the decision final: the soft-tier create, a verification finished or
 * expired, an underwriter's action. `answer_format` is the presenter's format it was rendered in
 * (`ANSWER_FORMAT` in decision.presenter.ts): a poll uses the stored text only when the format is
 * the one its own build renders, so a release that changes the wire shape ignores older answers
 * (and an older build, during a rolling deploy, ignores newer ones). Pending decisions store
 * none: their answer carries the hosted page's URL, a bearer secret kept only sealed.
 *
 * The trigger keeps a stored answer from going stale: an UPDATE that sets any column the answer is
 * made from, but leaves `answer_json` as it was, clears it (and its format). The service's own
 * updates write the new answer in the same statement; anyone else's (an operator's SQL) clears it,
 * and polls then render from the columns, as for a decision stored before this migration. The
 * column list is the presenter's at this migration; a later format that reads another column
 * comes with a migration that adds it here.
 */
import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

/** The columns the answer is made from, as of this migration (decision.presenter.ts PRESENTED_COLUMNS, and the scope). */
const ANSWER_SOURCES = [
  'id', 'application_id', 'tenant_id', 'environment', 'product', 'status', 'kyc_tier', 'kyc_status', 'outcome', 'currency', 'approved_amount_cents',
  'apr', 'term_months', 'schedule_json', 'tila_json', 'reasons_json', 'expires_at', 'buy_rate', 'contract_rate', 'dealer_reserve_cents', 'ltv',
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('decisions').addColumn('answer_json', 'text').execute();
  await db.schema.alterTable('decisions').addColumn('answer_format', 'integer').execute();
  const columns = sql.raw(ANSWER_SOURCES.map((c) => `"${c}"`).join(', '));
  if (isPostgres(db)) {
    await sql`
      create function cds_clear_stale_answer() returns trigger language plpgsql as $$
      begin
        if new.answer_json is not distinct from old.answer_json then
          new.answer_json := null;
          new.answer_format := null;
        end if;
        return new;
      end $$`.execute(db);
    await sql`create trigger decisions_clear_stale_answer before update of ${columns} on decisions for each row execute function cds_clear_stale_answer()`.execute(db);
  } else {
    // SQLite has no BEFORE trigger that can change the row being written: the row is cleared
    // right after, in the same statement (recursive triggers are off, and answer_json is not in
    // the list, so this does not fire again).
    await sql`
      create trigger decisions_clear_stale_answer after update of ${columns} on decisions for each row
      when new.answer_json is old.answer_json and new.answer_json is not null
      begin
        update decisions set answer_json = null, answer_format = null where id = new.id;
      end`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger if exists decisions_clear_stale_answer ${sql.raw(isPostgres(db) ? 'on decisions' : '')}`.execute(db);
  if (isPostgres(db)) await sql`drop function if exists cds_clear_stale_answer()`.execute(db);
  await db.schema.alterTable('decisions').dropColumn('answer_format').execute();
  await db.schema.alterTable('decisions').dropColumn('answer_json').execute();
}
