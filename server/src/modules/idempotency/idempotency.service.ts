/**
 * Idempotency keys: how a retried request gets the first one's answer, exactly once.
 *
 * Scope is tenant + environment + key. "Same request" is a SHA-256 fingerprint of the method, the
 * path and the canonical form of the parsed JSON body (keys sorted, so key order and white space do
 * not matter). The life of a keyed request:
 *
 * 1. Look for a finished record. Same fingerprint: replay its status and body byte for byte (with
 *    `Idempotent-Replayed: true`). Different fingerprint: 409 `idempotency_conflict`. On
 *    PostgreSQL the lookups of keyed requests that arrive together go as one statement
 *    (db/batched-read.ts, as a create's applicant reads do), each key found by the primary key.
 * 2. If this process is already running the same key, wait for it (at most 5 s), then go to 1;
 *    still running after 5 s: 409.
 * 3. Otherwise prepare (slow work such as a credit pull runs here, outside any transaction), then
 *    run ONE unit of work in a transaction of the group-commit runner (db/group-commit.ts; it may
 *    share the transaction with concurrent requests, each in its own savepoint): do the work,
 *    then claim the key by inserting the finished record with the response (an expired record is
 *    taken over); the unit resolves only after the COMMIT. The state change, its events and the
 *    stored response therefore land together or not at all: a crash leaves no trace and a retry
 *    simply runs again. A live record found at the claim rolls the unit back and the request
 *    replays that record. On PostgreSQL a second process inserting the same key blocks on the
 *    unique index until the first commits (lock_timeout 5 s, set by the runner, else 409), then
 *    finds the record and replays it.
 *
 * Stored: 2xx and 422 (a business-rule refusal is a real answer). Not stored: 400, 401, 429 (they
 * are decided before the work, so retrying them is free) and 5xx (the transaction rolled back, so
 * a retry re-drives the work instead of replaying a failure). Records expire 24 h after the first
 * request; a worker purges them, and a retry after that runs as new.
 *
 * The stored body is sealed (AES-GCM, lib/crypto.ts, bound to its scope and key): a pending
 * decision's answer carries its consumer_complete_url, whose token is a capability that the
 * decisions table itself keeps only sealed. Bodies stored before sealing (plain JSON) still replay.
 */
import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/crypto.js';
import type { Environment } from '../../config/config.js';
import type { Database } from '../../db/schema.js';
import { PlannedUnitFailed, type PlannableUnit, type TransactionRunner } from '../../db/group-commit.js';
import { PURGE_BATCH, purgeInBatches } from '../../db/batched-purge.js';
import { plannedStatement } from '../../db/sqlite-writer-thread.js';
import { template } from '../../db/statements.js';
import { batchedRead } from '../../db/batched-read.js';
import type { DialectName } from '../../db/database.js';
import { ApiError, errorBody } from '../../http/errors/error-registry.js';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
export const IDEMPOTENCY_WAIT_MS = 5_000;
const KEY_SHAPE = /^[\x20-\x7e]{1,255}$/;

export interface IdempotencyScope {
  tenantId: string;
  environment: Environment;
}

/** What a state-changing handler produces: a status and the exact bytes of its JSON body. */
export interface WorkResponse {
  statusCode: number;
  body: string;
}

export interface FinalResponse extends WorkResponse {
  /** True when this is the stored answer of an earlier request. */
  replayed: boolean;
  /** Request id of the request that produced the body (the earlier one for a replay). */
  requestId: string;
}

/**
 * Writes the state change through `trx` and returns the response to store and send. It may also
 * come as a plan (the same writes as data, for SQLite's writer thread: group-commit.ts); the claim
 * of the key is then appended to the plan as a statement that must return its row.
 */
export type WriteStep = PlannableUnit<WorkResponse>;

export interface ExecuteParams {
  scope: IdempotencyScope;
  /** The Idempotency-Key header, or null when the caller sent none. */
  key: string | null;
  /** The request's fingerprint (requestFingerprint), asked for only when there is a key. */
  fingerprint: () => string;
  requestId: string;
  /**
   * Runs once the request is known not to be a replay, OUTSIDE any transaction: slow or external
   * work (a credit pull, scoring) belongs here, so the transaction only writes. It may throw an
   * ApiError (a 422 is stored like a response). Returns the write step.
   */
  prepare: () => Promise<WriteStep>;
}

/**
 * Validate the header; throws 400 for anything but one value of 1-255 printable ASCII characters.
 * `rawHeaders` (Node's name/value list) finds a header sent twice: Node joins the two values with
 * ", " into what would otherwise pass as one key.
 */
export function parseIdempotencyKey(header: string | string[] | undefined, rawHeaders: readonly string[] = []): string | null {
  if (header === undefined) return null;
  let sent = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.length === 15 && rawHeaders[i]!.toLowerCase() === 'idempotency-key') sent++;
  if (Array.isArray(header) || sent > 1 || !KEY_SHAPE.test(header)) {
    throw new ApiError('invalid_request', 'Idempotency-Key must be a single value of 1 to 255 printable ASCII characters.');
  }
  return header;
}

export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method.toUpperCase()} ${path}\n${canonicalJson(body ?? null)}`).digest('hex');
}

/** JSON with object keys sorted at every depth: equal parsed bodies give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

type FinishedRow = { fingerprint: string; status_code: number | null; response_body: string | null; request_id: string };
/** A key's finished record (not expired), or undefined. */
type FinishedLookup = (scope: IdempotencyScope, key: string) => Promise<FinishedRow | undefined>;

/**
 * SQLite: one statement per look-up. It is a synchronous call on this thread, so there is no round
 * trip to save; batching these look-ups was measured slower (docs/performance.md, "twenty-fourth
 * session").
 */
function finishedLookup(readDb: Kysely<Database>, clock: Clock): FinishedLookup {
  const finishedRecord = template(['tenantId', 'environment', 'key', 'now'], (p) =>
    readDb
      .selectFrom('idempotency_keys')
      .select(['fingerprint', 'status_code', 'response_body', 'request_id'])
      .where('tenant_id', '=', p.tenantId)
      .where('environment', '=', p.environment)
      .where('idempotency_key', '=', p.key)
      .where('expires_at', '>', p.now),
  );
  return async (scope, key) =>
    (await readDb.executeQuery(finishedRecord({ tenantId: scope.tenantId, environment: scope.environment, key, now: clock.now().getTime() }))).rows[0];
}

/**
 * PostgreSQL: the look-ups of keyed requests that arrive together, as one statement
 * (db/batched-read.ts): each statement on its own cost a round trip, a backend's wake-up and an
 * executor start. Two statements out at a time, as the applicant reads (consumers.service.ts).
 * The statement ($1, $2, $3 the tenants, environments and keys; $4 now) finds each key by the
 * primary key on its own (a LATERAL lookup with LIMIT 1: a plan made without statistics cannot
 * turn it into a join that scans the table; generic-plans.test.ts), and returns it with its scope,
 * so that rows can be matched to the requests that asked.
 */
function finishedLookupsTogether(readDb: Kysely<Database>, clock: Clock): FinishedLookup {
  const finishedRecords = template(['tenants', 'environments', 'keys', 'now'], (p) =>
    readDb
      .selectFrom(
        sql<{ tenant_id: string; environment: string; idempotency_key: string }>`(select * from unnest(${p.tenants}::text[], ${p.environments}::text[], ${p.keys}::text[]) as u(tenant_id, environment, idempotency_key))`.as('k'),
      )
      .innerJoinLateral(
        (eb) =>
          eb
            .selectFrom('idempotency_keys as i')
            .select(['i.fingerprint', 'i.status_code', 'i.response_body', 'i.request_id'])
            .whereRef('i.tenant_id', '=', 'k.tenant_id')
            .whereRef('i.environment', '=', 'k.environment')
            .whereRef('i.idempotency_key', '=', 'k.idempotency_key')
            .where('i.expires_at', '>', p.now)
            .limit(sql.lit(1))
            .as('r'),
        (join) => join.onTrue(),
      )
      .select(['k.tenant_id', 'k.environment', 'k.idempotency_key', 'r.fingerprint', 'r.status_code', 'r.response_body', 'r.request_id']),
  );
  /** Scope and key as one string, the batched reader's id (keys are printable ASCII: no NUL). */
  const lookupId = (tenantId: string, environment: string, key: string) => `${tenantId}\u0000${environment}\u0000${key}`;
  const read = batchedRead({
    keyIndex: 0,
    fetch: async (ids) => {
      const tenants: string[] = [];
      const environments: string[] = [];
      const keys: string[] = [];
      for (const id of ids) {
        const [tenant, environment, key] = id.split('\u0000') as [string, string, string];
        tenants.push(tenant);
        environments.push(environment);
        keys.push(key);
      }
      const { rows } = await readDb.executeQuery(finishedRecords({ tenants, environments, keys, now: clock.now().getTime() }));
      return rows.map((row) => [lookupId(row.tenant_id, row.environment, row.idempotency_key), row]);
    },
    maxBatchesInFlight: 2,
  });
  return async (scope, key) => (await read(lookupId(scope.tenantId, scope.environment, key)))?.[1] as FinishedRow | undefined;
}

class KeyAlreadyClaimed extends Error {}

/** A planned claim's failure when a live record holds the key (the insert returned no row). */
const KEY_ALREADY_CLAIMED = 'idempotency-key-claimed';
const alreadyClaimed = (err: unknown) => err instanceof KeyAlreadyClaimed || (err instanceof PlannedUnitFailed && err.failure === KEY_ALREADY_CLAIMED);

/** A keyed request's parameters, its fingerprint computed once. */
type KeyedParams = Omit<ExecuteParams, 'key' | 'fingerprint'> & { key: string; fingerprint: string };

export function createIdempotencyService(deps: {
  db: Kysely<Database>;
  readDb: Kysely<Database>;
  transactions: TransactionRunner;
  clock: Clock;
  secretBox: SecretBox;
  dialect: DialectName;
}) {
  const { db, transactions, clock } = deps;
  // Same-key requests running in this process, with their fingerprints: a different body is told at once.
  const inFlight = new Map<string, { run: Promise<unknown>; fingerprint: string }>();

  async function execute(request: ExecuteParams): Promise<FinalResponse> {
    if (request.key === null) {
      // Nothing to compare with or store: not even the fingerprint is computed (it is a SHA-256
      // over the canonical body, a measurable part of a create's CPU).
      const write = await request.prepare();
      const response = await transactions.run(write);
      return { statusCode: response.statusCode, body: response.body, replayed: false, requestId: request.requestId };
    }
    const params: KeyedParams = { scope: request.scope, key: request.key, fingerprint: request.fingerprint(), requestId: request.requestId, prepare: request.prepare };
    const flightKey = `${params.scope.tenantId}\u0000${params.scope.environment}\u0000${params.key}`;
    // Waiting on a concurrent request is real elapsed time, not business time: use the monotonic clock.
    const deadline = performance.now() + IDEMPOTENCY_WAIT_MS;
    for (;;) {
      // Wait for a same-key request of this process first: on SQLite its transaction holds the
      // only connection, so even our lookup would queue behind it, past the 5 s promise.
      const running = inFlight.get(flightKey);
      if (running) {
        if (running.fingerprint !== params.fingerprint) throw usedWithAnotherRequest();
        const remaining = deadline - performance.now();
        if (remaining <= 0 || !(await settlesWithin(running.run, remaining))) throw stillRunning();
        continue;
      }
      const stored = await findFinished(params);
      if (stored) return stored;
      // Checked and claimed without an await in between, so two lookups cannot both proceed.
      if (!inFlight.has(flightKey)) break;
    }
    const run = runClaimed(params);
    inFlight.set(flightKey, { run, fingerprint: params.fingerprint });
    try {
      return await run;
    } finally {
      inFlight.delete(flightKey);
    }
  }

  // The statements of every keyed request, built and compiled once (db/statements.ts).
  const readFinished = deps.dialect === 'postgres' ? finishedLookupsTogether(deps.readDb, clock) : finishedLookup(deps.readDb, clock);
  const claimRecord = template(['tenantId', 'environment', 'key', 'fingerprint', 'statusCode', 'body', 'requestId', 'now', 'expiresAt'], (p) => {
    const values = { fingerprint: p.fingerprint, status_code: p.statusCode, response_body: p.body, request_id: p.requestId, created_at: p.now, expires_at: p.expiresAt };
    return db
      .insertInto('idempotency_keys')
      .values({ tenant_id: p.tenantId, environment: p.environment, idempotency_key: p.key, ...values })
      .onConflict((oc) => oc.columns(['tenant_id', 'environment', 'idempotency_key']).doUpdateSet(values).where('idempotency_keys.expires_at', '<=', p.now))
      .returning('idempotency_key');
  });

  async function findFinished(params: KeyedParams): Promise<FinalResponse | null> {
    const row = await readFinished(params.scope, params.key);
    if (!row || row.status_code === null || row.response_body === null) return null;
    if (row.fingerprint !== params.fingerprint) {
      throw usedWithAnotherRequest();
    }
    return { statusCode: row.status_code, body: openBody(params, row.response_body), replayed: true, requestId: row.request_id };
  }

  async function runClaimed(params: KeyedParams): Promise<FinalResponse> {
    try {
      const write = await params.prepare();
      const unit: WriteStep = async (trx) => {
        const result = await write(trx);
        await claim(trx, params, result);
        return result;
      };
      if (write.planned) {
        const claimStatement = plannedStatement(claimQuery(params, write.planned.value), { kind: 'row', failure: KEY_ALREADY_CLAIMED });
        unit.planned = { statements: [...write.planned.statements, claimStatement], value: write.planned.value };
        if (write.planned.outdated) unit.planned.outdated = write.planned.outdated;
      }
      const response = await transactions.run(unit);
      return { statusCode: response.statusCode, body: response.body, replayed: false, requestId: params.requestId };
    } catch (err) {
      if (alreadyClaimed(err)) return replayAfterRace(params);
      if (isLockTimeout(err)) throw stillRunning();
      if (err instanceof ApiError && err.status === 422) return storeRefusal(params, err);
      throw err;
    }
  }

  /**
   * Insert the finished record (or take over an expired one) after the work, in the same
   * transaction: one statement instead of a claim before and an update after. Throws
   * KeyAlreadyClaimed if a live record exists, which rolls the unit's work back with it.
   */
  async function claim(trx: Kysely<Database>, params: KeyedParams, response: WorkResponse): Promise<void> {
    const { rows } = await trx.executeQuery(claimQuery(params, response));
    if (rows.length === 0) throw new KeyAlreadyClaimed();
  }

  /** The claim's statement: it returns the key's row when it inserted it or took an expired one over. */
  function claimQuery(params: KeyedParams, response: WorkResponse) {
    const now = clock.now().getTime();
    return claimRecord({
      tenantId: params.scope.tenantId,
      environment: params.scope.environment,
      key: params.key,
      fingerprint: params.fingerprint,
      statusCode: response.statusCode,
      body: deps.secretBox.seal(response.body, bodyBinding(params)),
      requestId: params.requestId,
      now,
      expiresAt: now + IDEMPOTENCY_TTL_MS,
    });
  }

  /** The associated data of a sealed body: it opens only in the row it was written to. */
  function bodyBinding(params: KeyedParams): string {
    return `idempotency:${params.scope.tenantId}:${params.scope.environment}:${params.key}`;
  }

  function openBody(params: KeyedParams, stored: string): string {
    // JSON never starts with the sealed-value prefix: a legacy plain body is returned as it is.
    return stored.startsWith('v1.') ? deps.secretBox.openText(stored, bodyBinding(params)) : stored;
  }

  /** A 422 changed nothing, but it is the request's answer: store it so a retry gets the same. */
  async function storeRefusal(params: KeyedParams, err: ApiError): Promise<FinalResponse> {
    const response = { statusCode: err.status, body: errorBody(err.code, err.message, params.requestId) };
    try {
      await transactions.run((trx) => claim(trx, params, response));
    } catch (e) {
      if (alreadyClaimed(e)) return replayAfterRace(params);
      throw e;
    }
    return { statusCode: response.statusCode, body: response.body, replayed: false, requestId: params.requestId };
  }

  /** Another process committed the key between our lookup and our claim: answer with its record. */
  async function replayAfterRace(params: KeyedParams): Promise<FinalResponse> {
    const stored = await findFinished(params);
    if (stored) return stored;
    throw stillRunning();
  }

  /** Expired records, in batches (db/batched-purge.ts: one statement for a day's keys held the writer for seconds). */
  async function purgeExpired(batch = PURGE_BATCH): Promise<number> {
    const now = clock.now().getTime();
    const expired = (limit: number) =>
      db
        .selectFrom('idempotency_keys')
        .select(['tenant_id', 'environment', 'idempotency_key'])
        .where('expires_at', '<=', now)
        .limit(limit)
        .$asTuple('tenant_id', 'environment', 'idempotency_key');
    return purgeInBatches(
      (limit) =>
        db
          .deleteFrom('idempotency_keys')
          .where((eb) => eb(eb.refTuple('tenant_id', 'environment', 'idempotency_key'), 'in', expired(limit)))
          .executeTakeFirst(),
      batch,
    );
  }

  /** The group commit's counters (diagnostics, tests). */
  const transactionStats = () => transactions.stats();

  return { execute, purgeExpired, transactionStats };
}

export type IdempotencyService = ReturnType<typeof createIdempotencyService>;

function stillRunning(): ApiError {
  return new ApiError(
    'idempotency_conflict',
    'A request with this Idempotency-Key is still being processed; retry the same request shortly to get its response (a different request needs a new key).',
  );
}

function usedWithAnotherRequest(): ApiError {
  return new ApiError('idempotency_conflict', 'This Idempotency-Key was already used with a different request; use a new key for a new request.');
}

function isLockTimeout(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '55P03';
}

/** Resolves true when `p` settles within `ms`, false otherwise (never rejects). */
function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    const done = () => {
      clearTimeout(timer);
      resolve(true);
    };
    p.then(done, done);
  });
}
