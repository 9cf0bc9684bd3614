/**
 * 0024: `version` on webhook endpoints and dealers, so an edit in the portal names the version it
 * loaded and two people cannot overwrite each other unawares (docs/portal.md, "Two people editing
 * at once"; the pattern of 0023's notice settings, ADR 0047).
 *
 * It counts the saves of what the portal's edit forms show: an endpoint's URL, description and
 * event types, a dealer's name, license number and state. A PATCH writes only those, so the other
 * writes to these rows (rotation, disable and enable, the delivery worker's failure counts and
 * auto-disable, re-enable) cannot be undone by a stale edit and leave the version alone: a secret
 * rotated while someone edits the description is no reason to make them start again.
 *
 * Rows that exist start at 1, as a new row does. One statement per column on each table (SQLite's
 * ALTER TABLE adds one column at a time); on PostgreSQL a column with a constant default is added
 * without rewriting the table.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').addColumn('version', 'integer', (c) => c.notNull().defaultTo(1)).execute();
  await db.schema.alterTable('dealers').addColumn('version', 'integer', (c) => c.notNull().defaultTo(1)).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('dealers').dropColumn('version').execute();
  await db.schema.alterTable('webhook_endpoints').dropColumn('version').execute();
}
