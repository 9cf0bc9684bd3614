/**
 * Migrations 0014 and 0015 on PostgreSQL. 0014: the delivery queue is vacuumed after a fixed
 * number of dead rows (docs/performance.md, "Webhook delivery throughput"). 0015: the in-flight
 * counts table replaces the lease index, with room for HOT updates (ADR 0021). Each down step
 * restores what was before. SQLite has no storage parameters: there 0014 does nothing (every
 * SQLite suite migrates through it) and 0015's table and index are checked by the delivery tests.
 */
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openStorage, type Storage } from '../../../src/db/database.js';
import * as m0014 from '../../../src/db/migrations/0014-delivery-queue-autovacuum.js';
import * as m0015 from '../../../src/db/migrations/0015-webhook-sends-in-flight.js';
import { createQueueVacuum, QUEUE_VACUUM_LOCK } from '../../../src/modules/webhooks/queue-vacuum.js';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';

// One database for both: the migrations' down steps restore what they change, and the vacuum
// checks count VACUUMs relative to what they find.
describe.skipIf(!(await isPostgresReachable()))('delivery queue autovacuum [postgres]', () => {
  let db: TestDatabase;
  let storage: Storage;

  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    storage = openStorage({ databaseUrl: db.databaseUrl, dataDir: db.dataDir, poolSize: 3 });
    await migrateToLatest(storage.db);
  });
  afterAll(async () => {
    await storage?.close();
    await db?.drop();
  });

  const optionsOf = async (table: string) =>
    (await sql<{ reloptions: string[] | null }>`select reloptions from pg_class where relname = ${table} and relkind = 'r'`.execute(storage.db)).rows[0]?.reloptions ?? [];

  it('vacuums webhook_deliveries after 5,000 dead rows whatever its size; other tables keep the defaults; down restores them', async () => {
    // fillfactor=50 is migration 0026's (room for a claim's HOT update, ADRs 0021 and 0049).
    expect((await optionsOf('webhook_deliveries')).sort()).toEqual(['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=5000', 'fillfactor=50']);
    expect(await optionsOf('webhook_attempts')).toEqual([]);
    await m0014.down(storage.db as unknown as Kysely<unknown>);
    expect(await optionsOf('webhook_deliveries')).toEqual(['fillfactor=50']);
    await m0014.up(storage.db as unknown as Kysely<unknown>);
    expect((await optionsOf('webhook_deliveries')).sort()).toEqual(['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=5000', 'fillfactor=50']);
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

  describe('the delivery worker vacuums the queue when autovacuum does not', () => {
    const vacuums = async () =>
      Number((await sql<{ n: string }>`select vacuum_count as n from pg_stat_user_tables where relname = 'webhook_deliveries'`.execute(storage.db)).rows[0]!.n);
    function recordingLogger() {
      const lines: Array<{ level: string; msg: string }> = [];
      const logger = { warn: (_f: object, msg: string) => void lines.push({ level: 'warn', msg }), info: (_f: object, msg: string) => void lines.push({ level: 'info', msg }) };
      return { lines, logger: logger as unknown as Logger };
    }

    it('vacuums webhook_deliveries above the dead-row threshold, one process at a time, warning the first time only', async () => {
      const log = recordingLogger();
      // A threshold no table reaches: nothing is done.
      const never = createQueueVacuum({ db: storage.db, logger: log.logger }, { deadRowsAbove: 1e12 });
      const before = await vacuums();
      expect((await never.check()).kind).toBe('not-needed');
      expect(await vacuums()).toBe(before);
      // Above the threshold (any count is, at -1): VACUUM runs.
      const always = createQueueVacuum({ db: storage.db, logger: log.logger }, { deadRowsAbove: -1 });
      expect((await always.check()).kind).toBe('vacuumed');
      await expect.poll(vacuums).toBe(before + 1);
      expect((await always.check()).kind).toBe('vacuumed');
      await expect.poll(vacuums).toBe(before + 2);
      expect(log.lines.map((l) => l.level)).toEqual(['warn', 'info']);
      expect(log.lines[0]!.msg).toContain('autovacuum is off or not keeping up');
      // Another process holds the lock (it is vacuuming): this one leaves it to it.
      const other = new pg.Client({ connectionString: db.databaseUrl! });
      await other.connect();
      try {
        await other.query('select pg_advisory_lock(hashtext($1))', [QUEUE_VACUUM_LOCK]);
        expect((await always.check()).kind).toBe('busy');
        expect(await vacuums()).toBe(before + 2);
      } finally {
        await other.end();
      }
    });
  });
});
