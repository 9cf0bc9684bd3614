/**
 * Secrets at rest and secret comparison.
 *
 * `sealSecret` encrypts with AES-256-GCM under the deployment's DATA_ENCRYPTION_KEY: a fresh
 * 12-byte IV per value, the 16-byte tag authenticating it, stored as `v1.<base64(iv|tag|ciphertext)>`
 * so a later key rotation can add `v2.` without guessing. API keys are never encrypted: they are
 * high-entropy, so a SHA-256 hash is enough to look them up and nobody can reverse it.
 */
import { createCipheriv, createDecipheriv, hash, timingSafeEqual } from 'node:crypto';
import { cryptoRandom, pooledBytes } from './clock.js';

const VERSION = 'v1.';

export interface SecretBox {
  seal(plaintext: string | Buffer, associatedData?: string): string;
  open(sealed: string, associatedData?: string): Buffer;
  openText(sealed: string, associatedData?: string): string;
}

/**
 * `associatedData` binds a ciphertext to its row (e.g. the consumer id) so it cannot be moved.
 * IVs are sliced from pooled CSPRNG bytes (`pooledBytes`): a fresh 96 bits each, used once, at a
 * 25th of `randomBytes(12)`'s cost (docs/performance.md, "nineteenth session"); they are public,
 * stored beside the ciphertext. `takeBytes` is for tests (a small pool).
 */
export function createSecretBox(key: Buffer, takeBytes: (n: number) => Buffer = pooledBytes(cryptoRandom, 12 * 256)): SecretBox {
  if (key.length !== 32) throw new RangeError('encryption key must be 32 bytes');
  const seal = (plaintext: string | Buffer, associatedData?: string): string => {
    const iv = takeBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    if (associatedData !== undefined) cipher.setAAD(Buffer.from(associatedData));
    const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return VERSION + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
  };
  const open = (sealed: string, associatedData?: string): Buffer => {
    if (!sealed.startsWith(VERSION)) throw new Error('unknown sealed-secret version');
    const raw = Buffer.from(sealed.slice(VERSION.length), 'base64');
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    if (associatedData !== undefined) decipher.setAAD(Buffer.from(associatedData));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]);
  };
  return { seal, open, openText: (sealed, ad) => open(sealed, ad).toString('utf8') };
}

/**
 * `box.openText`, remembering what it opened. Opening (AES-GCM, most of it Node's decipher set-up)
 * gives the same answer every time for the same sealed text and associated data, and hot paths
 * open the same few again and again: a returning consumer's ssn_last4 on every create, a pending
 * decision's page token on every poll, an endpoint's signing secret on every delivery. A sealed
 * text is unique (a fresh IV per seal), so a changed value is a new entry, never a stale one.
 * Bounded to `limit` entries, the oldest dropped first; what fails to open is not kept. The
 * opened values stay in this process's memory only, as they do while a request uses them.
 */
export function openedTextCache(box: SecretBox, limit: number): (sealed: string, associatedData: string) => string {
  const opened = new Map<string, string>();
  return (sealed, associatedData) => {
    const key = `${associatedData}\u0000${sealed}`;
    let text = opened.get(key);
    if (text === undefined) {
      text = box.openText(sealed, associatedData);
      if (opened.size >= limit) opened.delete(opened.keys().next().value!);
      opened.set(key, text);
    }
    return text;
  };
}

/** One-shot `crypto.hash`: a quarter of createHash().update().digest()'s cost (every /v1 request hashes its key). */
export function sha256Hex(value: string | Buffer): string {
  return hash('sha256', value, 'hex');
}

/** Constant-time string equality (lengths are not secret here). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}
