/**
 * Migration 0014: on PostgreSQL the delivery queue is vacuumed after a fixed number of dead rows
 * (docs/performance.md, "Webhook delivery throughput"), and the migration's down step restores
 * the defaults. SQLite has no such setting: there the migration does nothing (every SQLite suite
 * migrates through it).
 */
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openStorage, type Storage } from '../../../src/db/database.js';
import * as m0014 from '../../../src/db/migrations/0014-delivery-queue-autovacuum.js';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';

describe.skipIf(!(await isPostgresReachable()))('delivery queue autovacuum [postgres]', () => {
  let db: TestDatabase;
  let storage: Storage;

  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    storage = openStorage({ databaseUrl: db.databaseUrl, dataDir: db.dataDir, poolSize: 2 });
    await migrateToLatest(storage.db);
  });
  afterAll(async () => {
    await storage?.close();
    await db?.drop();
  });

  const optionsOf = async (table: string) =>
    (await sql<{ reloptions: string[] | null }>`select reloptions from pg_class where relname = ${table} and relkind = 'r'`.execute(storage.db)).rows[0]?.reloptions ?? [];

  it('vacuums webhook_deliveries after 5,000 dead rows whatever its size; other tables keep the defaults; down restores them', async () => {
    expect((await optionsOf('webhook_deliveries')).sort()).toEqual(['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=5000']);
    expect(await optionsOf('webhook_attempts')).toEqual([]);
    await m0014.down(storage.db as unknown as Kysely<unknown>);
    expect(await optionsOf('webhook_deliveries')).toEqual([]);
    await m0014.up(storage.db as unknown as Kysely<unknown>);
    expect((await optionsOf('webhook_deliveries')).sort()).toEqual(['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=5000']);
  });
});
