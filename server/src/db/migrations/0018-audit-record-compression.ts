/**
 * 0018: PostgreSQL only, a decision's audit record is compressed with LZ4 and kept in the row
 * (`decision_audits.record_json`: `COMPRESSION lz4`, `STORAGE MAIN`).
 *
 * The record (request, identity check, credit data, the engine's whole trace: features, the
 * scorecard's partial scores, the policy's result; about 5.2 KB for a BNPL decision) is the only
 * value of the create path over PostgreSQL's 2 KB TOAST threshold, so every create compressed it
 * with pglz, PostgreSQL's default and slow compressor. Measured (docs/performance.md, "eleventh
 * session"; 8,000 inserts of real records on one connection, the backend's own CPU from /proc,
 * three rounds): pglz 86 to 93 µs of PostgreSQL CPU per insert (1,966 bytes stored), LZ4 69 to
 * 74 µs (2,249 bytes, which is over the threshold, so moved to the TOAST table), LZ4 kept in the
 * row 59 to 63 µs (2,253 bytes). About 28 µs less per create, out of 0.4 to 0.5 ms of PostgreSQL
 * CPU per create on the bench's machine. The price is disk: the table about a third larger.
 *
 * Both settings apply to values written from now on; nothing is rewritten, so the migration is
 * instant on any table (the old records stay pglz, and PostgreSQL reads either). `MAIN` still
 * moves a value out of the row when the row could not fit a page otherwise. LZ4 needs PostgreSQL
 * 14 or later built with it (Debian's and the managed services' are): elsewhere this does nothing
 * and records stay pglz. SQLite stores text as it is (no compression to choose).
 */
import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

/** Whether this PostgreSQL can compress with LZ4: 14+ and built with it (it then lists lz4 among the values of default_toast_compression). */
async function lz4Available(db: Kysely<unknown>): Promise<boolean> {
  const { rows } = await sql<{ available: boolean }>`
    select coalesce(bool_or('lz4' = any(enumvals)), false) as available from pg_settings where name = 'default_toast_compression'`.execute(db);
  return rows[0]?.available === true;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db) || !(await lz4Available(db))) return;
  await sql`alter table decision_audits alter column record_json set compression lz4, alter column record_json set storage main`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db) || !(await lz4Available(db))) return;
  await sql`alter table decision_audits alter column record_json set compression default, alter column record_json set storage extended`.execute(db);
}
