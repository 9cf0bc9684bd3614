/**
 * Secrets at rest (issue 11 item 4): after a tenant has decisions with ssn_last4 on every tier
 * (soft, enhanced, hard), webhook endpoints (one secret rotated, so two generations exist), API keys
 * (sandbox, live, revoked), an uploaded ID document and portal passwords, the bytes the database
 * keeps hold none of them in clear:
 *
 * - SQLite: the raw bytes of `cds.sqlite` AND its `-wal` file, read while the server is running
 *   (recent writes live in the WAL until a checkpoint);
 * - PostgreSQL: `pg_dump --data-only` of the whole database (every table, every column, as text);
 *   without pg_dump, every row of every table cast to text.
 *
 * What "in clear" means: an ssn_last4 value next to its field name or as a JSON string, any
 * `whsec_` secret, any full `svc_test_`/`svc_live_` key, a verification token of a pending
 * decision, a password, or the document's bytes (a random marker inside the upload). The scan is
 * proven able to see each kind: the same needles are found in a copy of the fixture's own inputs.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { listTables } from '../../support/security-checks.js';
import { buildSecurityFixture, type SecurityFixture } from '../../support/security-fixture.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';

const run = promisify(execFile);

/** Each finding names the kind of secret, never the secret itself (test output is a log too). */
export function findSecretsInClear(raw: string, fx: SecurityFixture['sensitive']): string[] {
  const found: string[] = [];
  for (const ssn of fx.ssnLast4) {
    if (new RegExp(`ssn[_a-z0-9]*["'\\s:=,]{0,6}${ssn}(?!\\d)`, 'i').test(raw)) found.push(`ssn_last4 ${ssn.slice(0, 1)}*** next to its field`);
    if (raw.includes(`"${ssn}"`)) found.push(`ssn_last4 ${ssn.slice(0, 1)}*** as a JSON string`);
  }
  for (const secret of fx.signingSecrets) if (raw.includes(secret) || raw.includes(secret.slice('whsec_'.length))) found.push(`signing secret ${secret.slice(0, 9)}…`);
  if (/whsec_[A-Za-z0-9+/_-]{20,}/.test(raw)) found.push('a whsec_ value');
  for (const key of fx.apiKeys) if (raw.includes(key)) found.push(`API key ${key.slice(0, 10)}…`);
  if (/svc_(test|live)_[0-9A-Za-z]{40}/.test(raw)) found.push('a full svc_ key');
  for (const token of fx.verificationTokens.slice(0, 2)) if (raw.includes(token)) found.push(`verification token ${token.slice(0, 4)}…`);
  for (const password of fx.passwords) if (raw.includes(password)) found.push('a portal password');
  for (const marker of fx.documentMarkers) if (raw.includes(marker)) found.push('the ID document bytes');
  return found;
}

describe.each(await dialectMatrix())('secrets at rest [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  let fx: SecurityFixture;
  const clock = new ManualClock('2026-05-04T08:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock, env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' } });
    fx = await buildSecurityFixture(t, clock);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  /** Everything the database holds, as text (latin1 for SQLite's binary pages). */
  async function storedBytes(): Promise<string> {
    if (dialect === 'sqlite') {
      const read = () => ['cds.sqlite', 'cds.sqlite-wal'].map((f) => readFileSync(path.join(db.dataDir, f)));
      // Recent writes live in the WAL; a checkpoint then copies them into the main file. Both
      // states are scanned, each with data in it, so neither file escapes the check.
      const [, walBefore] = read();
      expect(walBefore!.length).toBeGreaterThan(64 * 1024);
      await sql`pragma wal_checkpoint(PASSIVE)`.execute(t.ctx.storage.db);
      const [main, walAfter] = read();
      expect(main!.length).toBeGreaterThan(64 * 1024);
      return Buffer.concat([walBefore!, main!, walAfter!]).toString('latin1');
    }
    try {
      const { stdout } = await run('pg_dump', ['--data-only', '--no-owner', db.databaseUrl!], { maxBuffer: 512 * 1024 * 1024 });
      return stdout;
    } catch {
      const parts: string[] = [];
      for (const table of await listTables(t.ctx)) {
        const rows = await sql<{ r: string }>`select t::text as r from ${sql.table(table)} t`.execute(t.ctx.storage.db);
        parts.push(...rows.rows.map((x) => x.r));
      }
      return parts.join('\n');
    }
  }

  it('the fixture really wrote every kind of secret (so the scan below can fail)', async () => {
    expect(fx.sensitive.ssnLast4.length).toBeGreaterThanOrEqual(4); // soft (referred and live), enhanced, hard
    expect(fx.sensitive.signingSecrets.length).toBe(3); // two endpoints, one rotated
    expect(fx.sensitive.documentMarkers.length).toBe(1);
    const tiers = await t.ctx.storage.db.selectFrom('decisions').select('kyc_tier').distinct().execute();
    expect(tiers.map((r) => r.kyc_tier).sort()).toEqual(['enhanced', 'hard', 'soft']);
    expect(await t.ctx.storage.db.selectFrom('verification_documents').select('id').execute()).toHaveLength(1);
    expect((await t.ctx.storage.db.selectFrom('webhook_endpoints').select('previous_secret_sealed').where('previous_secret_sealed', 'is not', null).execute()).length).toBe(1);
    // The scanner sees every kind when it is there in clear.
    const inClear = JSON.stringify({ ssn_last4: fx.sensitive.ssnLast4[0], s: fx.sensitive.signingSecrets, k: fx.sensitive.apiKeys, v: fx.sensitive.verificationTokens, p: fx.sensitive.passwords, d: fx.sensitive.documentMarkers });
    const kinds = new Set(findSecretsInClear(inClear, fx.sensitive).map((f) => f.split(' ')[0]));
    expect([...kinds].sort()).toEqual(['API', 'a', 'signing', 'ssn_last4', 'the', 'verification'].sort());
  });

  it('the stored bytes hold no ssn_last4, signing secret, API key, verification token, password or document in clear', async () => {
    const raw = await storedBytes();
    // Sanity: sealed values and the plain parts of the rows are there, so this is the real data.
    expect(raw).toContain('v1.');
    expect(raw).toContain(fx.a.tenantId);
    expect(findSecretsInClear(raw, fx.sensitive)).toEqual([]);
  });

  it('an idempotent answer is stored sealed and still replays byte for byte; one stored before sealing (plain) replays too', async () => {
    const rows = await t.ctx.storage.db.selectFrom('idempotency_keys').selectAll().where('tenant_id', '=', fx.a.tenantId).execute();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.response_body?.startsWith('v1.'), row.idempotency_key).toBe(true);
    const replay = (key: string) =>
      t.app.inject({ method: 'POST', url: '/v1/decisions/bnpl', headers: { authorization: `Bearer ${fx.a.keys.sandbox}`, 'idempotency-key': key, 'content-type': 'application/json' }, payload: JSON.stringify({ consumer: { consumer_id: fx.a.ids.consumers.soft }, transaction: { amount: '44.00', currency: 'USD', merchant_name: 'Acme Outdoor', merchant_category: 'sporting_goods' } }) });
    const first = await replay('sealed-replay');
    const again = await replay('sealed-replay');
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(first.body);
    // A row written by an earlier version holds the plain JSON: it replays unchanged.
    await t.ctx.storage.db.updateTable('idempotency_keys').set({ response_body: first.body }).where('idempotency_key', '=', 'sealed-replay').execute();
    const legacy = await replay('sealed-replay');
    expect(legacy.headers['idempotent-replayed']).toBe('true');
    expect(legacy.body).toBe(first.body);
  });
});
