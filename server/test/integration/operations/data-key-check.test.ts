/**
 * The data key check (app/data-key-check.ts, ADR 0032): a process whose DATA_ENCRYPTION_KEY is not
 * the one its database's values are sealed with refuses to start, with a message naming both keys'
 * fingerprints and never a key; the first process records its key; a database from before the
 * check is judged by a value it already sealed; two processes with different keys racing on a new
 * database cannot both start. In process on both databases, then as `cds` processes.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createContext, type AppContext } from '../../../src/app/context.js';
import { checkConfiguredDataKey, checkDataKey, dataKeyFingerprint } from '../../../src/app/data-key-check.js';
import { ConfigError } from '../../../src/config/config.js';
import { migrateToLatest } from '../../../src/db/database.js';
import { createLogger } from '../../../src/lib/logger.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { cleanupProcesses, databaseEnv, makeTempDir, runCli, startServer } from '../../support/server-process.js';
import { testConfig } from '../../support/test-app.js';

const KEY_A = 'a1'.repeat(32);
const KEY_B = 'b2'.repeat(32);
const bytes = (hex: string) => Buffer.from(hex, 'hex');
const short = (hex: string) => dataKeyFingerprint(bytes(hex)).slice(0, 12);
const environmentKey = { kind: 'environment' } as const;

afterAll(cleanupProcesses);

describe.each(await dialectMatrix())('data key check, in process [%s]', (dialect) => {
  let db: TestDatabase;
  let ctx: AppContext;
  beforeEach(async () => {
    db = await createTestDatabase(dialect);
    ctx = createContext(testConfig(db, { DATA_ENCRYPTION_KEY: KEY_A }), { logger: createLogger('silent') });
    await migrateToLatest(ctx.storage.db);
  });
  afterEach(async () => {
    await ctx.close();
    await db.drop();
  });

  it('the first check records the key; the same key passes; another is refused with both fingerprints and no key', async () => {
    const first = await checkDataKey(ctx.storage.db, bytes(KEY_A), { now: 1_000, source: environmentKey });
    expect(first).toEqual({ fingerprint: dataKeyFingerprint(bytes(KEY_A)), recorded: true });
    expect(first.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    const rows = await ctx.storage.db.selectFrom('data_key_checks').selectAll().execute();
    expect(rows.map((r) => ({ ...r, created_at: Number(r.created_at) }))).toEqual([{ id: 1, fingerprint: first.fingerprint, created_at: 1_000 }]);

    expect(await checkDataKey(ctx.storage.db, bytes(KEY_A), { now: 2_000, source: environmentKey })).toEqual({ fingerprint: first.fingerprint, recorded: false });

    const refused = await checkDataKey(ctx.storage.db, bytes(KEY_B), { now: 3_000, source: environmentKey }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConfigError);
    const message = (refused as Error).message;
    expect(message).toContain('DATA_ENCRYPTION_KEY');
    expect(message).toContain(`this process's key has the fingerprint ${short(KEY_B)}, the database's ${short(KEY_A)}`);
    for (const secret of [KEY_A, KEY_B, 'a1a1a1', 'b2b2b2', bytes(KEY_A).toString('base64'), bytes(KEY_B).toString('base64')]) expect(message).not.toContain(secret);
    // Nothing changed by the refusal.
    expect((await ctx.storage.db.selectFrom('data_key_checks').select('fingerprint').execute()).map((r) => r.fingerprint)).toEqual([first.fingerprint]);
  });

  it('a database from before the check is judged by a value it sealed: a consumer\'s ssn_last4, else an endpoint\'s secret', async () => {
    // Sealed with KEY_A by the services, as a database written before migration 0019 would be.
    const tenant = await ctx.tenants.createTenant({ name: 'Older Lender' });
    await ctx.webhooks.createEndpoint({ tenantId: tenant.tenantId, environment: 'sandbox' }, { url: 'https://hooks.example.com/cds' });
    expect(await ctx.storage.db.selectFrom('data_key_checks').selectAll().execute()).toEqual([]);

    const byConsumer = await checkDataKey(ctx.storage.db, bytes(KEY_B), { now: 1, source: environmentKey }).catch((e: unknown) => e);
    expect(byConsumer).toBeInstanceOf(ConfigError);
    expect((byConsumer as Error).message).toContain("does not open the values already sealed in this database (a consumer's ssn_last4 could not be opened with it)");
    expect(await ctx.storage.db.selectFrom('data_key_checks').selectAll().execute()).toEqual([]);

    // No ssn_last4 sealed: the endpoint's signing secret decides.
    await sql`update consumers set ssn_last4_sealed = null`.execute(ctx.storage.db);
    const byEndpoint = await checkDataKey(ctx.storage.db, bytes(KEY_B), { now: 2, source: environmentKey }).catch((e: unknown) => e);
    expect((byEndpoint as Error).message).toContain("a webhook endpoint's signing secret could not be opened with it");

    const accepted = await checkDataKey(ctx.storage.db, bytes(KEY_A), { now: 3, source: environmentKey });
    expect(accepted.recorded).toBe(true);
  });

  it('two processes with different keys on a new database: one records its key, the other is refused', async () => {
    const results = await Promise.allSettled([
      checkDataKey(ctx.storage.db, bytes(KEY_A), { now: 1, source: environmentKey }),
      checkDataKey(ctx.storage.db, bytes(KEY_B), { now: 1, source: environmentKey }),
    ]);
    const fulfilled = results.filter((r) => r.status === 'fulfilled');
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(fulfilled).toHaveLength(1);
    expect(rejected).toHaveLength(1);
    expect(rejected[0]!.reason).toBeInstanceOf(ConfigError);
    const stored = await ctx.storage.db.selectFrom('data_key_checks').select('fingerprint').execute();
    expect(stored).toHaveLength(1);
    expect(stored[0]!.fingerprint).toBe((fulfilled[0] as PromiseFulfilledResult<{ fingerprint: string }>).value.fingerprint);
  });

  it('a key generated into the data folder is named as such in the refusal', async () => {
    await checkDataKey(ctx.storage.db, bytes(KEY_A), { now: 1, source: environmentKey });
    const refused = await checkConfiguredDataKey(ctx.storage.db, { dataEncryptionKey: bytes(KEY_B), dataEncryptionKeySource: 'generated-file', dataDir: '/srv/cds/data' }, 2).catch((e: unknown) => e);
    expect((refused as Error).message).toContain('the key generated into /srv/cds/data/encryption.key, as DATA_ENCRYPTION_KEY is unset');
  });
});

describe.each(await dialectMatrix())('data key check, cds processes [%s]', (dialect) => {
  let db: TestDatabase;
  beforeEach(async () => {
    db = await createTestDatabase(dialect);
  });
  afterEach(async () => {
    await db.drop();
  });

  it('serve and tenants create with another key exit 78 before serving; the right key still starts', async () => {
    const env = { ...databaseEnv(db), DATA_ENCRYPTION_KEY: KEY_A };
    const created = await runCli(['tenants', 'create', '--name', 'Keyed Lender', '--json'], env);
    expect(created.code, created.stderr).toBe(0);

    const other = { ...env, DATA_ENCRYPTION_KEY: KEY_B };
    for (const args of [['serve'], ['tenants', 'create', '--name', 'Wrong Key', '--json']]) {
      const r = await runCli(args, other);
      expect(r.code, `${args[0]}: ${r.stderr}`).toBe(78);
      expect(r.stderr).toContain(`this process's key has the fingerprint ${short(KEY_B)}, the database's ${short(KEY_A)}`);
      expect(r.stderr).not.toContain(KEY_A);
      expect(r.stderr).not.toContain(KEY_B);
      expect(r.stdout).toBe('');
    }

    const server = await startServer({ env });
    try {
      expect((await server.request('/healthz')).status).toBe(200);
      // The ready line names the key by its fingerprint, so nodes can be compared.
      await server.waitForLog((line) => line.includes('credit decisioning service ready'));
      const ready = server.logs().find((l) => l.msg === 'credit decisioning service ready');
      expect(ready?.encryptionKeyFingerprint).toBe(short(KEY_A));
    } finally {
      await server.stop();
    }
  });

  it.runIf(dialect === 'postgres')('a second node with its own data folder and no DATA_ENCRYPTION_KEY is refused, pointing at its generated key', async () => {
    // No DATA_ENCRYPTION_KEY (the test processes are given one unless told otherwise): each node generates its own.
    const first = await runCli(['tenants', 'create', '--name', 'Two Node Lender', '--json'], { ...databaseEnv(db), DATA_ENCRYPTION_KEY: undefined });
    expect(first.code, first.stderr).toBe(0);
    // What the performance session ran into: the second node generated a key of its own and answered 500 on a returning consumer's decision.
    const secondDir = makeTempDir();
    const r = await runCli(['serve'], { DATABASE_URL: db.databaseUrl!, CDS_DATA_DIR: secondDir, DATA_ENCRYPTION_KEY: undefined }, { timeoutMs: 20_000 });
    expect(r.code, r.stderr).toBe(78);
    expect(r.stderr).toContain(`the key generated into ${secondDir}/encryption.key, as DATA_ENCRYPTION_KEY is unset`);
  });
});
