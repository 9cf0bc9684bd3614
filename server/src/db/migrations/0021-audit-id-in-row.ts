/**
 * 0021: PostgreSQL only, a decision's audit row keeps its `decision_id` in the row
 * (`decision_audits.decision_id`: `STORAGE PLAIN`).
 *
 * 0018 keeps the compressed record in the row (`STORAGE MAIN`, about 2.2 KB), which leaves the row
 * over PostgreSQL's 2 KB TOAST target. PostgreSQL then moves the row's other values that may leave
 * it (`EXTENDED`, the default for text) to the TOAST table, biggest first, before it would touch a
 * MAIN value: that was the 36-byte id, every time. So each create wrote a TOAST row and its index
 * entry for an id, and every read of a row's id fetched it back from there (the key's index holds
 * its own copy). Found in the twenty-third session (docs/performance.md): the TOAST table held one
 * 36-byte chunk per audit record. Measured on 40,000 inserts of real records into copies of the
 * table (psql `\timing`, two rounds): 51 and 59 µs per insert with the id moved out, 41 and 44 µs
 * with it kept. With `PLAIN` nothing of the row can leave it but the record itself (MAIN goes out only
 * when the row would not fit a page otherwise).
 *
 * Applies to rows written from now on; rows written before keep their id in the TOAST table, and
 * PostgreSQL reads both. Instant on any table. An id is never near a page's size, which PLAIN
 * would refuse. SQLite has no TOAST (nothing to do).
 */
import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`alter table decision_audits alter column decision_id set storage plain`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`alter table decision_audits alter column decision_id set storage extended`.execute(db);
}
