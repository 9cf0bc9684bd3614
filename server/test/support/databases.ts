/**
 * Test databases. Every suite that touches storage runs once per dialect:
 * - sqlite: a fresh file in a fresh temporary folder;
 * - postgres: a fresh, uniquely named database on the local server (PG_TEST_URL, default
 *   postgres://root@127.0.0.1:5432/postgres), dropped afterwards.
 * If PostgreSQL is unreachable in a local run, its suites are skipped with a loud warning; with
 * CI=true they fail instead, because CI must prove both dialects.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { DialectName } from '../../src/db/database.js';

export const PG_ADMIN_URL = process.env.PG_TEST_URL ?? 'postgres://root@127.0.0.1:5432/postgres';

let postgresReachable: boolean | undefined;

export async function isPostgresReachable(): Promise<boolean> {
  if (postgresReachable !== undefined) return postgresReachable;
  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('select 1');
    postgresReachable = true;
  } catch (err) {
    if (process.env.CI === 'true') throw new Error(`PostgreSQL is required in CI but unreachable at ${PG_ADMIN_URL}: ${String(err)}`);
    console.warn(`\n!!! PostgreSQL unreachable at ${PG_ADMIN_URL}: PostgreSQL suites are SKIPPED in this local run !!!\n`);
    postgresReachable = false;
  } finally {
    await client.end().catch(() => undefined);
  }
  return postgresReachable;
}

/** Dialects to run: both by default; TEST_DIALECTS=sqlite (or postgres) narrows a local run. */
export function dialectsUnderTest(): DialectName[] {
  const wanted = (process.env.TEST_DIALECTS ?? 'sqlite,postgres').split(',').map((s) => s.trim());
  return (['sqlite', 'postgres'] as const).filter((d) => wanted.includes(d));
}

export interface TestDatabase {
  dialect: DialectName;
  /** DATABASE_URL for this database (null for SQLite). */
  databaseUrl: string | null;
  /** Data folder (SQLite file, generated key). */
  dataDir: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(dialect: DialectName): Promise<TestDatabase> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cds-test-'));
  if (dialect === 'sqlite') {
    return { dialect, databaseUrl: null, dataDir, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const name = `cds_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    dialect,
    databaseUrl: url.toString(),
    dataDir,
    async drop() {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The dialects this run covers (PostgreSQL dropped, loudly, when unreachable outside CI). */
export async function dialectMatrix(): Promise<DialectName[]> {
  const out: DialectName[] = [];
  for (const d of dialectsUnderTest()) {
    if (d === 'postgres' && !(await isPostgresReachable())) continue;
    out.push(d);
  }
  return out;
}
