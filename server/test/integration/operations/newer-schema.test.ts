/**
 * A build on a database a newer release migrated (db/database.ts `migrateToLatest`,
 * docs/deployment.md): the previous release runs on the newer schema during a rolling deploy and
 * after a rollback, so it starts, leaves the schema as it is and says so; a database whose
 * migrations are not a newer release's of this build's (one it does not know between its own, or
 * one of its own missing) is refused with the names. In process on both databases, then as `cds`.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sql, type Kysely } from 'kysely';
import { migrateToLatest, openStorage, UnknownSchemaError, type Storage } from '../../../src/db/database.js';
import { migrations } from '../../../src/db/migrations/index.js';
import type { Database } from '../../../src/db/schema.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { cleanupProcesses, databaseEnv, runCli, startServer } from '../../support/server-process.js';

const OURS = Object.keys(migrations).sort();
const LAST = OURS[OURS.length - 1]!;
const NEWER = '9000-from-a-newer-release';

/** What a newer release's migrator would have left: its migration's row (and a table of its own). */
async function migrateAsNewerRelease(db: Kysely<Database>): Promise<void> {
  await sql`create table newer_release_things (id text primary key)`.execute(db);
  await sql`insert into kysely_migration (name, timestamp) values (${NEWER}, ${new Date(0).toISOString()})`.execute(db);
}

const executed = async (db: Kysely<Database>) => (await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db)).rows.map((r) => r.name);

afterAll(cleanupProcesses);

describe.each(await dialectMatrix())('migrations on a newer schema, in process [%s]', (dialect) => {
  let db: TestDatabase;
  let storage: Storage;
  beforeEach(async () => {
    db = await createTestDatabase(dialect);
    storage = openStorage({ databaseUrl: db.databaseUrl, dataDir: db.dataDir });
  });
  afterEach(async () => {
    await storage.close();
    await db.drop();
  });

  it('a new database gets every migration; run again, nothing', async () => {
    expect(await migrateToLatest(storage.db)).toEqual({ applied: OURS, newer: [] });
    expect(await migrateToLatest(storage.db)).toEqual({ applied: [], newer: [] });
  });

  it("a newer release's migrations after all of ours: left as they are, and named", async () => {
    await migrateToLatest(storage.db);
    await migrateAsNewerRelease(storage.db);
    expect(await migrateToLatest(storage.db)).toEqual({ applied: [], newer: [NEWER] });
    expect(await executed(storage.db)).toEqual([...OURS, NEWER]);
    // The newer release's table is still there: nothing was rolled back or touched.
    await sql`insert into newer_release_things (id) values ('x')`.execute(storage.db);
  });

  it('an unknown migration before our last, or one of ours missing beside an unknown one: refused with the names', async () => {
    await migrateToLatest(storage.db);
    await sql`insert into kysely_migration (name, timestamp) values ('0001a-from-elsewhere', ${new Date(0).toISOString()})`.execute(storage.db);
    const between = await migrateToLatest(storage.db).catch((e: unknown) => e);
    expect(between).toBeInstanceOf(UnknownSchemaError);
    expect((between as Error).message).toContain(`it holds 0001a-from-elsewhere, which this build does not know, before this build's last (${LAST})`);

    await sql`delete from kysely_migration where name = '0001a-from-elsewhere'`.execute(storage.db);
    await migrateAsNewerRelease(storage.db);
    await sql`delete from kysely_migration where name = ${LAST}`.execute(storage.db);
    const lacking = await migrateToLatest(storage.db).catch((e: unknown) => e);
    expect(lacking).toBeInstanceOf(UnknownSchemaError);
    expect((lacking as Error).message).toContain(`it holds ${NEWER}, which this build does not know, and lacks ${LAST}`);
    // Refused before the migrator ran: our last migration was not applied again.
    expect(await executed(storage.db)).toEqual([...OURS.filter((n) => n !== LAST), NEWER]);
  });
});

describe.each(await dialectMatrix())('cds on a newer schema [%s]', (dialect) => {
  let db: TestDatabase;
  beforeEach(async () => {
    db = await createTestDatabase(dialect);
  });
  afterEach(async () => {
    await db.drop();
  });

  it('serve starts and warns, migrate leaves it; a schema that is not a newer release\'s stops serve with the names, without a stack', async () => {
    const env = databaseEnv(db);
    const created = await runCli(['tenants', 'create', '--name', 'Rollback Lender', '--json'], env);
    expect(created.code, created.stderr).toBe(0);
    const storage = openStorage({ databaseUrl: db.databaseUrl, dataDir: db.dataDir });
    try {
      await migrateAsNewerRelease(storage.db);
    } finally {
      await storage.close();
    }

    const migrate = await runCli(['migrate'], env);
    expect(migrate.code, migrate.stderr).toBe(0);
    expect(migrate.stderr).toContain(`database schema is newer than this build (${NEWER}): left as it is`);

    const server = await startServer({ env });
    try {
      const key = (JSON.parse(created.stdout) as { sandbox: { api_key: string } }).sandbox.api_key;
      expect((await server.request('/v1/decisions/bnpl/00000000-0000-4000-8000-000000000000', { headers: { authorization: `Bearer ${key}` } })).status).toBe(404);
      const warning = server.logs().find((l) => l.msg === 'the database schema is newer than this build: running on it unchanged (a release keeps the previous one working)');
      expect(warning?.newerMigrations).toEqual([NEWER]);
    } finally {
      await server.stop();
    }

    const again = openStorage({ databaseUrl: db.databaseUrl, dataDir: db.dataDir });
    try {
      await sql`delete from kysely_migration where name = ${LAST}`.execute(again.db);
    } finally {
      await again.close();
    }
    const refused = await runCli(['serve'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`cds: this database's migrations are not a newer release's of this build's: it holds ${NEWER}, which this build does not know, and lacks ${LAST}. Run the release that migrated it.`);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
  });
});
