/**
 * The common security checks every route gets (the shape Unkey's API tests use: one shared helper,
 * called for each route): who is refused and how, that a refusal writes nothing, and that a
 * resource of another tenant or environment answers exactly like one that does not exist.
 *
 * - `snapshotDatabase` fingerprints every table (all rows, all columns) except the columns a
 *   request legitimately touches without changing anything a user owns (a key's last use, a
 *   session's last activity), so "nothing written" is checked byte for byte.
 * - `outcomeOf` reduces a response to what a caller can observe (status, error code, message),
 *   with the ids it names replaced by a placeholder: the real id's answer and a random id's answer
 *   must then be identical.
 * - `leaksOf` lists which of a set of strings (another tenant's ids, PII, secrets) a response body
 *   contains.
 */
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import type { AppContext } from '../../src/app/context.js';

/** Columns that change on a refused-but-authenticated request by design: last-use bookkeeping. */
const VOLATILE: Record<string, readonly string[]> = {
  api_keys: ['last_used_at'],
  sessions: ['last_seen_at', 'idle_expires_at'],
};

export type DatabaseSnapshot = Map<string, string>;

export async function listTables(ctx: AppContext): Promise<string[]> {
  const tables = await ctx.storage.db.introspection.getTables();
  return tables.map((t) => t.name).filter((n) => !n.startsWith('kysely_')).sort();
}

/** One digest per table over every row (sorted), volatile columns left out. */
export async function snapshotDatabase(ctx: AppContext): Promise<DatabaseSnapshot> {
  const out: DatabaseSnapshot = new Map();
  for (const table of await listTables(ctx)) {
    const rows = (await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(ctx.storage.db)).rows;
    const skip = VOLATILE[table] ?? [];
    const lines = rows
      .map((r) => JSON.stringify(Object.keys(r).sort().filter((k) => !skip.includes(k)).map((k) => [k, normalise(r[k])])))
      .sort();
    out.set(table, `${rows.length}:${createHash('sha256').update(lines.join('\n')).digest('hex')}`);
  }
  return out;
}

function normalise(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (Buffer.isBuffer(v)) return v.toString('base64');
  if (v instanceof Date) return v.toISOString();
  return v;
}

/** Tables whose digest differs between two snapshots (empty: nothing was written). */
export function changedTables(before: DatabaseSnapshot, after: DatabaseSnapshot): string[] {
  const names = new Set([...before.keys(), ...after.keys()]);
  return [...names].filter((n) => before.get(n) !== after.get(n)).sort();
}

export interface Outcome {
  status: number;
  error: string | null;
  message: string | null;
  contentType: string;
}

/** What a caller can observe of a refusal, ids replaced so two answers can be compared exactly. */
export function outcomeOf(r: LightMyRequestResponse, ids: readonly string[] = []): Outcome {
  let error: string | null = null;
  let message: string | null = null;
  if (String(r.headers['content-type'] ?? '').includes('json')) {
    try {
      const body = r.json() as Record<string, unknown>;
      if (typeof body.error === 'string') error = body.error;
      if (typeof body.message === 'string') message = ids.reduce((m, id) => m.split(id).join('<id>'), body.message);
      if (error !== null && Object.keys(body).sort().join(',') !== 'error,message,request_id') message = `NOT THE STABLE ERROR BODY: ${r.body}`;
    } catch {
      message = `UNPARSABLE: ${r.body.slice(0, 200)}`;
    }
  }
  return { status: r.statusCode, error, message, contentType: String(r.headers['content-type'] ?? '') };
}

/**
 * Digits (an ssn_last4, a postal code) as a value of their own: not inside a longer run of letters,
 * digits, `_` or `-`. Ids, request ids and time stamps are random text that may contain any four
 * digits (a dealer id `…-4aee-8265-8fd7…` once failed a bare substring search), so only this
 * finds the value itself.
 */
export function standaloneDigits(digits: string): RegExp {
  return new RegExp(`(?<![0-9A-Za-z_-])${digits}(?![0-9A-Za-z_-])`);
}

/** Which of `needles` the body contains (ids of another tenant or environment, secrets, PII). */
export function leaksOf(body: string, needles: readonly string[]): string[] {
  return needles.filter((n) => n.length > 0 && body.includes(n));
}
