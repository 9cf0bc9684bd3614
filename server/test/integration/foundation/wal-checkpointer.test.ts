import { EventEmitter, once } from 'node:events';
import { closeSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { openStorage, type Storage, type StorageOptions } from '../../../src/db/database.js';
import { startCheckpointer, type CheckpointResult } from '../../../src/db/wal-checkpointer.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';

/** Resolves with the first checkpoint report that satisfies `test`. */
async function checkpointWhere(reports: EventEmitter, test: (r: CheckpointResult) => boolean): Promise<CheckpointResult> {
  for (;;) {
    const [report] = (await once(reports, 'checkpoint')) as [CheckpointResult];
    if (test(report)) return report;
  }
}

/**
 * A fresh SQLite storage with a `blobs` table for the enclosing describe (opened before its tests,
 * closed after), its background checkpointer set up with `checkpoints`.
 */
function storageWithBlobs(checkpoints: StorageOptions['checkpoints']): () => Storage {
  let testDb: TestDatabase | undefined;
  let storage: Storage | undefined;
  beforeAll(async () => {
    testDb = await createTestDatabase('sqlite');
    storage = openStorage({ databaseUrl: null, dataDir: testDb.dataDir, checkpoints });
    await sql`create table blobs (id integer primary key, body text not null)`.execute(storage.db);
  });
  afterAll(async () => {
    await storage?.close();
    await testDb?.drop();
  });
  return () => storage!;
}

/** Rows in `blobs`, read through the reader connection (its own view of the database). */
async function blobCount(storage: Storage): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*) as n from blobs`.execute(storage.readDb);
  return Number(rows[0]!.n);
}

describe('WAL checkpoints in a worker thread [sqlite]', () => {
  const reports = new EventEmitter();
  const storage = storageWithBlobs({ intervalMs: 20, truncateAboveBytes: 256 * 1024, onCheckpoint: (r) => reports.emit('checkpoint', r) });

  it('turns the writer\'s own checkpoints off', async () => {
    const { rows } = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(storage().db);
    expect(rows[0]!.wal_autocheckpoint).toBe(0);
  });

  it('copies committed frames into the database from the worker, and truncates a WAL past its limit while it holds the writer', async () => {
    const body = 'x'.repeat(4_000);
    // About 1 MB of WAL in small commits, four times the limit.
    const truncated = checkpointWhere(reports, (r) => r.truncated);
    for (let i = 0; i < 250; i++) await sql`insert into blobs (body) values (${body})`.execute(storage().db);
    const report = await truncated;
    expect(report.walBytes).toBe(0);
    expect(report.held).toBe(true);
    // Everything is still there, read by a fresh connection's view of the database.
    expect(await blobCount(storage())).toBe(250);
  });

  it('catches up with steady writes: a PASSIVE checkpoint copies every frame while the writer goes on', async () => {
    const body = 'y'.repeat(4_000);
    const copiedAll = checkpointWhere(reports, (r) => r.frames > 0 && r.copied === r.frames);
    for (let i = 0; i < 50; i++) await sql`insert into blobs (body) values (${body})`.execute(storage().db);
    expect((await copiedAll).copied).toBeGreaterThan(0);
  });
});

/** `n` inserts of about 4 KB each from `loops` concurrent writers: the writer always has a transaction queued, as under load. */
async function steadyWrites(storage: Storage, n: number, loops = 8): Promise<void> {
  const body = 'z'.repeat(4_000);
  let next = 0;
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (next < n) {
        next++;
        await sql`insert into blobs (body) values (${body})`.execute(storage.db);
      }
    }),
  );
}

/** How many times the WAL was started over: the checkpoint sequence number in its header (bytes 12 to 15, big-endian). */
function walStarts(walFile: string): number {
  const header = Buffer.alloc(32);
  const fd = openSync(walFile, 'r');
  try {
    readSync(fd, header, 0, 32, 0);
  } finally {
    closeSync(fd);
  }
  return header.readUInt32BE(12);
}

describe('starting the WAL over under steady writes [sqlite]', () => {
  const reports: CheckpointResult[] = [];
  // No TRUNCATE: only the held restart can keep this WAL short.
  const storage = storageWithBlobs({ intervalMs: 5, restartAboveBytes: 64 * 1024, truncateAboveBytes: 1024 ** 3, onCheckpoint: (r) => reports.push(r) });

  it('holds the writer once the WAL passes its limit, so the next write starts it from the beginning', async () => {
    // About 8 MB of frames, back to back: a PASSIVE pass rarely finds the WAL fully copied with no
    // commit since, so without the hold SQLite would seldom start it over and the file would grow
    // by most of it.
    await steadyWrites(storage(), 2_000);
    // Every hold copied every frame: nothing could be written while it ran.
    const held = reports.filter((r) => r.held);
    expect(held.length).toBeGreaterThan(0);
    for (const r of held) expect(r.copied).toBe(r.frames);
    // Each copy under a hold was followed by a write, which started the WAL over: SQLite counts
    // the starts in the WAL header (its "checkpoint sequence number").
    await steadyWrites(storage(), 1, 1);
    expect(walStarts(`${storage().location}-wal`)).toBeGreaterThanOrEqual(held.length);
    expect(await blobCount(storage())).toBe(2_001);
  });
});

describe('the writer never waits for the checkpointer inside SQLite [sqlite]', () => {
  const reports: CheckpointResult[] = [];
  // As eager as it gets: a pass every millisecond, a hold after every page, a TRUNCATE whenever the WAL file has anything in it.
  const storage = storageWithBlobs({ intervalMs: 1, restartAboveBytes: 4_096, truncateAboveBytes: 4_096, onCheckpoint: (r) => reports.push(r) });

  it('commits every write with no busy timeout at all while the worker copies, holds and truncates', async () => {
    // A writer that met a lock held by the checkpointer would wait in SQLite's busy handler, on
    // the event loop; with no busy timeout it fails with SQLITE_BUSY instead, so any such wait
    // fails this test.
    await sql`pragma busy_timeout = 0`.execute(storage().db);
    await steadyWrites(storage(), 1_000);
    expect(reports.filter((r) => r.truncated).length).toBeGreaterThan(0);
    expect(await blobCount(storage())).toBe(1_000);
  });
});

describe('the hold hand-over between the worker and the main thread [sqlite]', () => {
  let testDb: TestDatabase;
  let writer: SqliteDatabase.Database;
  let file: string;

  beforeAll(async () => {
    testDb = await createTestDatabase('sqlite');
    file = path.join(testDb.dataDir, 'handover.sqlite');
    writer = new SqliteDatabase(file);
    writer.pragma('journal_mode = WAL');
    writer.pragma('wal_autocheckpoint = 0');
    writer.exec('create table blobs (id integer primary key, body text not null)');
  });
  afterAll(async () => {
    writer?.close();
    await testDb?.drop();
  });

  /** Frames in the WAL (no more asked of the worker than one page), so every pass asks for a hold. */
  const fill = () => writer.prepare('insert into blobs (body) values (?)').run('w'.repeat(4_000));

  it('goes on with its passes when the writer cannot be held, and reports why', async () => {
    const errors: Error[] = [];
    let asked = 0;
    const held = new EventEmitter();
    fill();
    const checkpointer = startCheckpointer({
      file,
      intervalMs: 5,
      restartAboveBytes: 1,
      holdWriter: async () => {
        asked++;
        if (asked === 1) throw new Error('writer closing');
        return () => held.emit('released');
      },
      onError: (err) => errors.push(err),
      onCheckpoint: (r) => {
        if (r.held) held.emit('held', r);
        else fill(); // keep giving the next pass something to copy
      },
    });
    try {
      // The first hold failed; a later pass asked again and got it.
      const [report] = (await once(held, 'held')) as [CheckpointResult];
      expect(report.copied).toBe(report.frames);
      expect(asked).toBeGreaterThanOrEqual(2);
      expect(errors.map((e) => e.message)).toContain('writer closing');
    } finally {
      await checkpointer.stop();
    }
  });

  it('gives the writer back when the hold is granted after the worker has stopped', async () => {
    fill();
    let grant: ((release: () => void) => void) | null = null;
    const asked = new EventEmitter();
    const checkpointer = startCheckpointer({
      file,
      intervalMs: 5,
      restartAboveBytes: 1,
      holdWriter: () =>
        new Promise<() => void>((resolve) => {
          grant = resolve;
          asked.emit('asked');
        }),
    });
    await once(asked, 'asked');
    await checkpointer.stop();
    // The main thread gets the writer only now, with nobody left to end the hold: it must let go at once.
    let released = false;
    grant!(() => (released = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(released).toBe(true);
  });
});
