import { EventEmitter, once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { openStorage, type Storage } from '../../../src/db/database.js';
import type { CheckpointResult } from '../../../src/db/wal-checkpointer.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';

/** Resolves with the first checkpoint report that satisfies `test`. */
async function checkpointWhere(reports: EventEmitter, test: (r: CheckpointResult) => boolean): Promise<CheckpointResult> {
  for (;;) {
    const [report] = (await once(reports, 'checkpoint')) as [CheckpointResult];
    if (test(report)) return report;
  }
}

describe('WAL checkpoints in a worker thread [sqlite]', () => {
  let testDb: TestDatabase;
  let storage: Storage;
  const reports = new EventEmitter();
  const truncateAboveBytes = 256 * 1024;

  beforeAll(async () => {
    testDb = await createTestDatabase('sqlite');
    storage = openStorage({
      databaseUrl: null,
      dataDir: testDb.dataDir,
      checkpoints: { intervalMs: 20, truncateAboveBytes, onCheckpoint: (r) => reports.emit('checkpoint', r) },
    });
    await sql`create table blobs (id integer primary key, body text not null)`.execute(storage.db);
  });
  afterAll(async () => {
    await storage?.close();
    await testDb?.drop();
  });

  it('turns the writer\'s own checkpoints off', async () => {
    const { rows } = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(storage.db);
    expect(rows[0]!.wal_autocheckpoint).toBe(0);
  });

  it('copies committed frames into the database from the worker, and truncates a WAL past its limit', async () => {
    const body = 'x'.repeat(4_000);
    // About 1 MB of WAL in small commits, four times the limit.
    const truncated = checkpointWhere(reports, (r) => r.truncated);
    for (let i = 0; i < 250; i++) await sql`insert into blobs (body) values (${body})`.execute(storage.db);
    const report = await truncated;
    expect(report.walBytes).toBe(0);
    // Everything is still there, read by a fresh connection's view of the database.
    const { rows } = await sql<{ n: number }>`select count(*) as n from blobs`.execute(storage.readDb);
    expect(Number(rows[0]!.n)).toBe(250);
  });

  it('catches up with steady writes: a PASSIVE checkpoint copies every frame while the writer goes on', async () => {
    const body = 'y'.repeat(4_000);
    const copiedAll = checkpointWhere(reports, (r) => r.frames > 0 && r.copied === r.frames);
    for (let i = 0; i < 50; i++) await sql`insert into blobs (body) values (${body})`.execute(storage.db);
    expect((await copiedAll).copied).toBeGreaterThan(0);
  });
});
