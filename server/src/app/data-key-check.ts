/**
 * The data key check: a process whose DATA_ENCRYPTION_KEY is not the one its database's values are
 * sealed with refuses to start (ADR 0032).
 *
 * Why. Every process of a deployment seals and opens with one key: consumers' ssn_last4, webhook
 * signing secrets, stored idempotent responses, page tokens. A process with another key (a node
 * whose DATA_ENCRYPTION_KEY was forgotten, so it generated one into its own data folder; a typo; a
 * restored data folder without its key file) starts and serves, and then answers 500 wherever it
 * meets a value it cannot open: a returning consumer's decision, a replayed idempotent request.
 * That shows up as scattered errors on one node of several; here it is one clear refusal at start.
 *
 * How it works. `data_key_checks` (migration 0019) holds one row: the key's fingerprint,
 * HMAC-SHA256 of a fixed text under the key, which names the key without revealing it. At start
 * (`cds serve`, and the commands that seal: `tenants create`, `webhooks create`), after the
 * migrations:
 *   - a row with the same fingerprint: go on;
 *   - a row with another: refuse (a ConfigError, exit 78), naming both fingerprints' first 12
 *     characters and where this process's key came from;
 *   - no row (a new database, or one from before 0019): if the database already holds sealed
 *     values, one of them (a consumer's ssn_last4, else an endpoint's signing secret) must open
 *     with this key, or the process refuses; then the fingerprint is recorded. The insert does
 *     nothing if another process starting at the same moment recorded its own first, and what is
 *     stored is read back and compared, so two processes with different keys cannot both start on
 *     a new database.
 * There is no key rotation: sealed values are `v1.` under one key (lib/crypto.ts), so a new key
 * would need every value re-sealed; the check makes a changed key an explicit refusal.
 */
import { createHmac } from 'node:crypto';
import path from 'node:path';
import type { Kysely } from 'kysely';
import { ConfigError, type Config } from '../config/config.js';
import { migrateToLatest } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { createSecretBox } from '../lib/crypto.js';
import { secretAssociatedData } from '../modules/webhooks/signing.js';

const FINGERPRINT_TEXT = 'cds data encryption key check v1';

/** The key's fingerprint, hex: HMAC-SHA256 of a fixed text. A 32-byte random key cannot be recovered from it. */
export function dataKeyFingerprint(key: Buffer): string {
  return createHmac('sha256', key).update(FINGERPRINT_TEXT).digest('hex');
}

/** Where this process's key came from, for the refusal's advice. */
export type DataKeySource = { kind: 'environment' } | { kind: 'generated-file'; file: string };

const SAME_KEY = 'Every process of a deployment needs the same DATA_ENCRYPTION_KEY (docs/deployment.md).';

function sourceAdvice(source: DataKeySource): string {
  return source.kind === 'environment'
    ? 'This process took its key from DATA_ENCRYPTION_KEY: set it to the key the database was first used with.'
    : `This process uses the key generated into ${source.file}, as DATA_ENCRYPTION_KEY is unset: set DATA_ENCRYPTION_KEY to the deployment's key, or start from the data folder that holds it.`;
}

/**
 * Records or checks the key (see the top). Resolves with the key's fingerprint and whether this
 * call recorded it; rejects with a ConfigError when the key is not the database's.
 */
export async function checkDataKey(
  db: Kysely<Database>,
  key: Buffer,
  options: { now: number; source: DataKeySource },
): Promise<{ fingerprint: string; recorded: boolean }> {
  const fingerprint = dataKeyFingerprint(key);
  const mismatch = (stored: string) =>
    new ConfigError([
      `DATA_ENCRYPTION_KEY is not the key this database's values are sealed with: this process's key has the fingerprint ${fingerprint.slice(0, 12)}, the database's ${stored.slice(0, 12)} (table data_key_checks). ${SAME_KEY} ${sourceAdvice(options.source)}`,
    ]);
  const stored = async () => (await db.selectFrom('data_key_checks').select('fingerprint').where('id', '=', 1).executeTakeFirst())?.fingerprint;

  const existing = await stored();
  if (existing !== undefined) {
    if (existing !== fingerprint) throw mismatch(existing);
    return { fingerprint, recorded: false };
  }
  const sample = await sealedSample(db);
  if (sample !== null && !opens(key, sample)) {
    throw new ConfigError([
      `DATA_ENCRYPTION_KEY does not open the values already sealed in this database (${sample.what} could not be opened with it). ${SAME_KEY} ${sourceAdvice(options.source)}`,
    ]);
  }
  await db
    .insertInto('data_key_checks')
    .values({ id: 1, fingerprint, created_at: options.now })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  // Another process may have recorded its key between the read and the insert.
  const recorded = await stored();
  if (recorded !== fingerprint) throw mismatch(recorded ?? '');
  return { fingerprint, recorded: true };
}

/** `checkDataKey` with the configured key (`cds serve`, `tenants create`, `webhooks create`). */
export function checkConfiguredDataKey(db: Kysely<Database>, config: Pick<Config, 'dataEncryptionKey' | 'dataEncryptionKeySource' | 'dataDir'>, now: number) {
  const source: DataKeySource =
    config.dataEncryptionKeySource === 'environment' ? { kind: 'environment' } : { kind: 'generated-file', file: path.join(config.dataDir, 'encryption.key') };
  return checkDataKey(db, config.dataEncryptionKey, { now, source });
}

/**
 * What `cds serve`, `tenants create` and `webhooks create` do with the database before anything
 * else: the migrations (a newer release's left as they are: `newer`, db/database.ts), then the key.
 * Resolves with the newer release's migrations and the key's fingerprint.
 */
export async function prepareDatabase(db: Kysely<Database>, config: Pick<Config, 'dataEncryptionKey' | 'dataEncryptionKeySource' | 'dataDir'>, now: number): Promise<{ newer: string[]; fingerprint: string }> {
  const { newer } = await migrateToLatest(db);
  const { fingerprint } = await checkConfiguredDataKey(db, config, now);
  return { newer, fingerprint };
}

interface SealedSample {
  sealed: string;
  associatedData: string;
  /** What it is, for the refusal (no value, no id). */
  what: string;
}

/** One value sealed before the fingerprint was recorded, with what it was bound to, or null if none. */
async function sealedSample(db: Kysely<Database>): Promise<SealedSample | null> {
  const consumer = await db.selectFrom('consumers').select(['id', 'ssn_last4_sealed']).where('ssn_last4_sealed', 'is not', null).limit(1).executeTakeFirst();
  if (consumer?.ssn_last4_sealed) return { sealed: consumer.ssn_last4_sealed, associatedData: consumer.id, what: "a consumer's ssn_last4" };
  const endpoint = await db.selectFrom('webhook_endpoints').select(['id', 'secret_sealed']).limit(1).executeTakeFirst();
  if (endpoint) return { sealed: endpoint.secret_sealed, associatedData: secretAssociatedData(endpoint.id), what: "a webhook endpoint's signing secret" };
  return null;
}

function opens(key: Buffer, sample: SealedSample): boolean {
  try {
    createSecretBox(key).open(sample.sealed, sample.associatedData);
    return true;
  } catch {
    return false;
  }
}
