import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type Kysely } from 'kysely';
import { migrateToLatest, openStorage, type Storage } from '../../../src/db/database.js';
import { createTransactionRunner } from '../../../src/db/group-commit.js';
import type { Database } from '../../../src/db/schema.js';
import { insertStatement, preparedNameOf, runTogether, template } from '../../../src/db/statements.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';

// Tables of this test only: a child whose foreign key must find a parent inserted in the same call.
const SCHEMA = [
  'create table st_parents (id varchar(40) primary key, label varchar(40), note varchar(40))',
  'create table st_children (id varchar(40) primary key, parent_id varchar(40) not null references st_parents (id))',
];
type Tables = keyof Database;
const PARENTS = 'st_parents' as Tables;
const CHILDREN = 'st_children' as Tables;
const rowsOf = <T>(rows: T[]) => rows as never[];

describe.each(await dialectMatrix())('hot-path statements [%s]', (dialect) => {
  let testDb: TestDatabase;
  let storage: Storage;
  let db: Kysely<Database>;

  beforeAll(async () => {
    testDb = await createTestDatabase(dialect);
    storage = openStorage({ databaseUrl: testDb.databaseUrl, dataDir: testDb.dataDir, poolSize: 4 });
    db = storage.db;
    await migrateToLatest(db);
    for (const statement of SCHEMA) await sql.raw(statement).execute(db);
  });
  afterAll(async () => {
    await storage?.close();
    await testDb?.drop();
  });

  const read = async (table: string) => (await sql<Record<string, unknown>>`select * from ${sql.table(table)} order by id`.execute(storage.readDb)).rows;

  it('compiles an insert as Kysely does, once per shape, and lays the values out as its parameters', () => {
    const insert = insertStatement(db, PARENTS);
    const one = [{ id: 'p1', label: 'a', note: null }];
    const two = [{ id: 'p2', label: 'b', note: 'x' }, { id: 'p3', label: 'c', note: null }];
    for (const rows of [one, two]) {
      const ours = insert(rowsOf(rows));
      const kysely = db.insertInto(PARENTS).values(rowsOf(rows)).compile();
      expect(ours.sql).toBe(kysely.sql);
      expect(ours.parameters).toEqual(kysely.parameters);
    }
    // The same shape reuses the same text; an undefined value leaves its column out, as in Kysely.
    expect(insert(rowsOf([{ id: 'p4', label: 'd', note: 'y' }])).sql).toBe(insert(rowsOf(one)).sql);
    const withoutNote = insert(rowsOf([{ id: 'p5', label: 'e', note: undefined }]));
    expect(withoutNote.sql).toBe(db.insertInto(PARENTS).values(rowsOf([{ id: 'p5', label: 'e' }])).compile().sql);
    expect(withoutNote.parameters).toEqual(['p5', 'e']);
    // Rows of different shapes, or a value that is an expression, are Kysely's to build.
    const mixed = [{ id: 'p6', label: 'f' }, { id: 'p7', label: 'g', note: 'z' }];
    expect(insert(rowsOf(mixed))).toMatchObject({ sql: db.insertInto(PARENTS).values(rowsOf(mixed)).compile().sql, parameters: ['p6', 'f', 'p7', 'g', 'z'] });
    const expression = [{ id: 'p8', label: sql<string>`'lit'`, note: null }];
    expect(insert(rowsOf(expression)).sql).toBe(db.insertInto(PARENTS).values(rowsOf(expression)).compile().sql);
  });

  it('fills a template by name, and refuses one with a value of its own', () => {
    const byLabel = template(['label', 'id'], (p) => db.selectFrom(PARENTS).select('id' as never).where('label' as never, '=', p.label).where('id' as never, '<>', p.id));
    const compiled = byLabel({ id: 'p0', label: 'a' });
    expect(compiled.parameters).toEqual(['a', 'p0']);
    expect(compiled.sql).toBe(db.selectFrom(PARENTS).select('id' as never).where('label' as never, '=', 'a' as never).where('id' as never, '<>', 'p0' as never).compile().sql);
    expect(() => template(['id'], (p) => db.selectFrom(PARENTS).select('id' as never).where('id' as never, '=', p.id).where('label' as never, '=', 'fixed' as never))).toThrow(/not one of its named values/);
  });

  it('runs writes and a last statement together: a child beside its parent, the last one read, all in one unit', async () => {
    const runner = createTransactionRunner(storage);
    const insertParents = insertStatement(db, PARENTS);
    const insertChildren = insertStatement(db, CHILDREN);
    const lastRead = template(['label'], (p) => db.selectFrom('tenants').select('id').where('name', '=', p.label));
    const result = await runner.run((trx) =>
      // The child first: on PostgreSQL foreign keys are checked at the end of the one statement.
      runTogether(trx, storage.dialect, dialect === 'postgres' ? [insertChildren(rowsOf([{ id: 'c1', parent_id: 't1' }])), insertParents(rowsOf([{ id: 't1', label: 'together', note: null }]))] : [insertParents(rowsOf([{ id: 't1', label: 'together', note: null }])), insertChildren(rowsOf([{ id: 'c1', parent_id: 't1' }]))], lastRead({ label: 'no such tenant' })),
    );
    expect(result.rows).toEqual([]);
    expect(await read('st_parents')).toEqual([expect.objectContaining({ id: 't1', label: 'together' })]);
    expect(await read('st_children')).toEqual([{ id: 'c1', parent_id: 't1' }]);

    // A part that fails (a duplicate key) fails the unit, and nothing of it is written.
    const failing = runner.run((trx) =>
      runTogether(trx, storage.dialect, [insertParents(rowsOf([{ id: 't2', label: 'never', note: null }])), insertParents(rowsOf([{ id: 't1', label: 'duplicate', note: null }]))], lastRead({ label: 'x' })),
    );
    await expect(failing).rejects.toThrow();
    expect((await read('st_parents')).map((r) => r.id)).toEqual(['t1']);
  });

  it.runIf(dialect === 'postgres')('runs the registered texts as named prepared statements on PostgreSQL, parsed once per connection', async () => {
    const lookup = template(['id'], (p) => db.selectFrom(PARENTS).select('label' as never).where('id' as never, '=', p.id));
    const query = lookup({ id: 't1' });
    const name = preparedNameOf(query.sql);
    expect(name).toMatch(/^cds_\d+$/);
    const prepared = await db.connection().execute(async (connection) => {
      expect((await connection.executeQuery(query)).rows).toEqual([{ label: 'together' }]);
      expect((await connection.executeQuery(lookup({ id: 'missing' }))).rows).toEqual([]);
      // Prepared statements keep their plans: forcing a custom plan per execution (as the pool once
      // did for the poll read) re-planned every create statement and cost a third of the throughput.
      expect((await sql<{ plan_cache_mode: string }>`show plan_cache_mode`.execute(connection)).rows[0]!.plan_cache_mode).toBe('auto');
      return (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(connection)).rows;
    });
    expect(prepared).toContainEqual({ name, statement: query.sql });
    // An unregistered text is not prepared.
    expect(preparedNameOf('select 1')).toBeUndefined();
  });
});
