/**
 * Migration 0018: on PostgreSQL a decision's audit record is stored compressed with LZ4, in the
 * row (`STORAGE MAIN`), instead of PostgreSQL's default pglz (ADR 0028: about 28 µs less of
 * PostgreSQL's CPU per insert). Checked on the records a create writes through the API: the column's
 * settings, the compression a new record gets, the migration down and up, and that records of
 * either kind parse back whole. And migration 0021: nothing else of the row leaves it either (the
 * id was moved to the TOAST table, a TOAST row per create, because the kept record leaves the row
 * over the TOAST target). SQLite stores text as it is, so there only the record is checked.
 */
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as m0018 from '../../../src/db/migrations/0018-audit-record-compression.js';
import * as m0021 from '../../../src/db/migrations/0021-audit-id-in-row.js';
import { ManualClock } from '../../../src/lib/clock.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';

describe.each(await dialectMatrix())("a decision's audit record in storage [%s]", (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  const clock = new ManualClock('2026-04-04T10:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  async function createDecision(): Promise<string> {
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({
        consumer: { consumer_id: t.tenant.sandbox.consumers[0]!.consumerId },
        transaction: { amount: '240.00', currency: 'USD', merchant_name: 'Acme Furniture', merchant_category: 'furniture' },
      }),
    });
    expect(response.statusCode, response.body).toBe(200);
    return (response.json() as { decision_id: string }).decision_id;
  }

  const recordOf = async (decisionId: string) =>
    (await t.ctx.storage.db.selectFrom('decision_audits').select('record_json').where('decision_id', '=', decisionId).executeTakeFirstOrThrow()).record_json;

  it("a create's record is larger than PostgreSQL's TOAST threshold (what 0018 is about) and parses back whole", async () => {
    const id = await createDecision();
    const text = await recordOf(id);
    expect(text.length).toBeGreaterThan(2_048);
    const record = JSON.parse(text) as { outcome: string; engine: { partialScores: unknown[] } };
    expect(record.outcome).toBe('approved');
    expect(record.engine.partialScores.length).toBeGreaterThan(5);
  });

  it.runIf(dialect === 'postgres')('PostgreSQL: LZ4, kept in the row; 0018 down gives pglz back for new records, up LZ4 again', async () => {
    const store = t.ctx.storage.db;
    const column = async () =>
      (
        await sql<{ compression: string; storage: string }>`
          select attcompression as compression, attstorage as storage from pg_attribute
           where attrelid = 'decision_audits'::regclass and attname = 'record_json'`.execute(store)
      ).rows[0]!;
    const storedAs = async (decisionId: string) =>
      (
        await sql<{ method: string | null; bytes: number }>`
          select pg_column_compression(record_json) as method, pg_column_size(record_json) as bytes
            from decision_audits where decision_id = ${decisionId}`.execute(store)
      ).rows[0]!;

    expect(await column()).toEqual({ compression: 'l', storage: 'm' });
    const id = await createDecision();
    const stored = await storedAs(id);
    expect(stored.method).toBe('lz4');
    expect(stored.bytes).toBeLessThan((await recordOf(id)).length);

    const migration = store as unknown as Kysely<unknown>;
    await m0018.down(migration);
    expect(await column()).toEqual({ compression: '', storage: 'x' });
    const before = await createDecision();
    expect((await storedAs(before)).method).toBe('pglz');
    await m0018.up(migration);
    expect(await column()).toEqual({ compression: 'l', storage: 'm' });
    // Both kinds read back alike.
    for (const decisionId of [id, before]) expect(JSON.parse(await recordOf(decisionId))).toMatchObject({ outcome: 'approved' });
  });

  it.runIf(dialect === 'postgres')("PostgreSQL: a create writes nothing of its audit row to the TOAST table (0021); 0021 down moved the id there, one TOAST row per create", async () => {
    const store = t.ctx.storage.db;
    const migration = store as unknown as Kysely<unknown>;
    // The audit table's TOAST table, by its name in pg_class (it has no fixed name to query).
    const toast = (
      await sql<{ name: string }>`select reltoastrelid::regclass::text as name from pg_class where oid = 'decision_audits'::regclass`.execute(store)
    ).rows[0]!.name;
    const toastRows = async () => Number((await sql<{ n: string }>`select count(*) as n from ${sql.raw(toast)}`.execute(store)).rows[0]!.n);
    const idStorage = async () =>
      (await sql<{ storage: string }>`select attstorage as storage from pg_attribute where attrelid = 'decision_audits'::regclass and attname = 'decision_id'`.execute(store)).rows[0]!
        .storage;

    expect(await idStorage()).toBe('p');
    const before = await toastRows();
    const kept = [await createDecision(), await createDecision(), await createDecision()];
    expect(await toastRows()).toBe(before);

    await m0021.down(migration);
    try {
      expect(await idStorage()).toBe('x');
      const moved = [await createDecision(), await createDecision()];
      expect(await toastRows()).toBe(before + moved.length);
    } finally {
      await m0021.up(migration);
    }
    expect(await idStorage()).toBe('p');
    await createDecision();
    expect(await toastRows()).toBe(before + 2);
    // Every record reads back by its id, wherever the id is kept.
    for (const decisionId of kept) expect(JSON.parse(await recordOf(decisionId))).toMatchObject({ outcome: 'approved' });
  });
});
