/**
 * Migrations 0014 and 0015 on PostgreSQL. 0014: the delivery queue is vacuumed after a fixed
 * number of dead rows (docs/performance.md, "Webhook delivery throughput"). 0015: the in-flight
 * counts table replaces the lease index, with room for HOT updates (ADR 0021). Each down step
 * restores what was before. SQLite has no storage parameters: there 0014 does nothing (every
 * SQLite suite migrates through it) and 0015's table and index are checked by the delivery tests.
 */
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openStorage, type Storage } from '../../../src/db/database.js';
import * as m0014 from '../../../src/db/migrations/0014-delivery-queue-autovacuum.js';
import * as m0015 from '../../../src/db/migrations/0015-webhook-sends-in-flight.js';
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
    // fillfactor=75 is migration 0015's (room for a claim's HOT update, ADR 0021).
    expect((await optionsOf('webhook_deliveries')).sort()).toEqual(['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=5000', 'fillfactor=75']);
    expect(await optionsOf('webhook_attempts')).toEqual([]);
    await m0014.down(storage.db as unknown as Kysely<unknown>);
    expect(await optionsOf('webhook_deliveries')).toEqual(['fillfactor=75']);
    await m0014.up(storage.db as unknown as Kysely<unknown>);
    expect((await optionsOf('webhook_deliveries')).sort()).toEqual(['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=5000', 'fillfactor=75']);
  });

  it('0015: the in-flight counts table (fillfactor 50) replaces the lease index, the unread due index goes; down restores both and the fill factor', async () => {
    // The lease index and 0003's (state, next_attempt_at) index, which nothing read.
    const leaseIndex = async () =>
      (await sql<{ n: number }>`select count(*)::int as n from pg_indexes where indexname in ('webhook_deliveries_leased', 'webhook_deliveries_due')`.execute(storage.db)).rows[0]!.n;
    expect(await optionsOf('webhook_in_flight')).toEqual(['fillfactor=50']);
    expect(await leaseIndex()).toBe(0);
    await m0015.down(storage.db as unknown as Kysely<unknown>);
    expect(await leaseIndex()).toBe(2);
    expect(await optionsOf('webhook_in_flight')).toEqual([]);
    expect((await optionsOf('webhook_deliveries')).sort()).toEqual(['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=5000']);
    await m0015.up(storage.db as unknown as Kysely<unknown>);
    expect(await leaseIndex()).toBe(0);
    expect(await optionsOf('webhook_in_flight')).toEqual(['fillfactor=50']);
  });
});
