/**
 * PostgreSQL: the idempotency lookups of keyed requests that arrive together go to the database as
 * one statement (idempotency.service.ts, db/batched-read.ts), and each request still gets its own
 * record: the scope (tenant and environment) and the key must all match, an expired record is not
 * found, and a different body under a found key is still a 409 for that request alone.
 *
 * The service runs on a real PostgreSQL database, with its lookups counted: they are the only
 * statements it sends through `readDb`. A look-up that fails fails the requests of its batch, and
 * the next batch runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KyselyPlugin } from 'kysely';
import { isDatabaseUnavailable, migrateToLatest, openStorage, type Storage } from '../../../src/db/database.js';
import { createTransactionRunner } from '../../../src/db/group-commit.js';
import { createIdempotencyService, type IdempotencyScope } from '../../../src/modules/idempotency/idempotency.service.js';
import { createSecretBox } from '../../../src/lib/crypto.js';
import { ManualClock } from '../../../src/lib/clock.js';
import { ApiError } from '../../../src/http/errors/error-registry.js';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';

describe.runIf(await isPostgresReachable())('idempotency lookups of requests that arrive together (PostgreSQL)', () => {
  let testDb: TestDatabase;
  let storage: Storage;
  const clock = new ManualClock('2026-11-29T12:00:00.000Z');
  const secretBox = createSecretBox(Buffer.alloc(32, 9));
  let lookups = 0;
  /** When set, the next look-up fails with this error after it ran, as a lost connection would. */
  let failNext: Error | null = null;
  const counting: KyselyPlugin = {
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      lookups += 1;
      const failure = failNext;
      failNext = null;
      if (failure) throw failure;
      return args.result;
    },
  };

  beforeAll(async () => {
    testDb = await createTestDatabase('postgres');
    storage = openStorage({ databaseUrl: testDb.databaseUrl, dataDir: testDb.dataDir });
    await migrateToLatest(storage.db);
  });
  afterAll(async () => {
    await storage?.close();
    await testDb?.drop();
  });

  const tenantA = { tenantId: 'tenant-a', environment: 'sandbox' } as const satisfies IdempotencyScope;
  const tenantALive = { tenantId: 'tenant-a', environment: 'live' } as const satisfies IdempotencyScope;
  const tenantB = { tenantId: 'tenant-b', environment: 'sandbox' } as const satisfies IdempotencyScope;

  /** A finished record as an earlier request of that scope stored it (its body sealed to its row). */
  async function stored(scope: IdempotencyScope, key: string, body: string, requestId: string, expiresInMs = 60_000): Promise<void> {
    const now = clock.now().getTime();
    await storage.db
      .insertInto('idempotency_keys')
      .values({
        tenant_id: scope.tenantId,
        environment: scope.environment,
        idempotency_key: key,
        fingerprint: `fingerprint-of-${key}`,
        status_code: 200,
        response_body: secretBox.seal(body, `idempotency:${scope.tenantId}:${scope.environment}:${key}`),
        request_id: requestId,
        created_at: now - 1_000,
        expires_at: now + expiresInMs,
      })
      .execute();
  }

  /**
   * A service whose look-ups are counted, and a request to it whose work (run only when no record
   * answers it) answers 201 with the key it ran for. `ran()` counts the requests that ran.
   */
  function countedService() {
    const service = createIdempotencyService({
      db: storage.db,
      readDb: storage.readDb.withPlugin(counting),
      transactions: createTransactionRunner(storage),
      clock,
      secretBox,
      dialect: storage.dialect,
    });
    let ran = 0;
    const request = (scope: IdempotencyScope, key: string, fingerprint = `fingerprint-of-${key}`) =>
      service
        .execute({
          scope,
          key,
          fingerprint: () => fingerprint,
          requestId: `req_new_${key}_${scope.environment}_${scope.tenantId}`,
          prepare: async () => {
            ran += 1;
            return async () => ({ statusCode: 201, body: `{"ran":"${key}"}` });
          },
        })
        .catch((err: unknown) => err);
    return { request, ran: () => ran };
  }

  it('sends one statement for the lookups of six keyed requests (five keys), and gives each request its own record', async () => {
    // The same key in three scopes, each with its own answer; one expired record; one key never used.
    await stored(tenantA, 'order-1', '{"scope":"a sandbox"}', 'req_a');
    await stored(tenantALive, 'order-1', '{"scope":"a live"}', 'req_a_live');
    await stored(tenantB, 'order-1', '{"scope":"b sandbox"}', 'req_b');
    await stored(tenantA, 'order-old', '{"scope":"expired"}', 'req_old', -1);

    const { request, ran } = countedService();

    lookups = 0;
    const answers = await Promise.all([
      request(tenantA, 'order-1'),
      request(tenantALive, 'order-1'),
      request(tenantB, 'order-1'),
      request(tenantA, 'order-old'),
      request(tenantA, 'order-new'),
      // The same key as the first, a different body: a conflict for this request only.
      request(tenantB, 'order-1', 'another-body'),
    ]);
    // Six requests of five distinct scoped keys, looked up together: one statement.
    expect(lookups).toBe(1);

    expect(answers[0]).toMatchObject({ statusCode: 200, body: '{"scope":"a sandbox"}', replayed: true, requestId: 'req_a' });
    expect(answers[1]).toMatchObject({ statusCode: 200, body: '{"scope":"a live"}', replayed: true, requestId: 'req_a_live' });
    expect(answers[2]).toMatchObject({ statusCode: 200, body: '{"scope":"b sandbox"}', replayed: true, requestId: 'req_b' });
    // The expired record is not found: the request runs as new and takes the key over.
    expect(answers[3]).toMatchObject({ statusCode: 201, body: '{"ran":"order-old"}', replayed: false });
    expect(answers[4]).toMatchObject({ statusCode: 201, body: '{"ran":"order-new"}', replayed: false });
    expect(answers[5]).toBeInstanceOf(ApiError);
    expect((answers[5] as ApiError).code).toBe('idempotency_conflict');
    expect(ran()).toBe(2);

    // The two that ran are replayed from their new records, again in one statement.
    lookups = 0;
    const again = await Promise.all([request(tenantA, 'order-old'), request(tenantA, 'order-new')]);
    expect(lookups).toBe(1);
    expect(again[0]).toMatchObject({ statusCode: 201, body: '{"ran":"order-old"}', replayed: true });
    expect(again[1]).toMatchObject({ statusCode: 201, body: '{"ran":"order-new"}', replayed: true });
    expect(ran()).toBe(2);
  });

  it("fails every request of a batch whose look-up failed, with the database's error, and the next batch runs", async () => {
    await stored(tenantA, 'order-after-outage', '{"scope":"kept"}', 'req_kept');
    const { request, ran } = countedService();

    const lost = Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
    failNext = lost;
    lookups = 0;
    const failed = await Promise.all([request(tenantA, 'order-after-outage'), request(tenantA, 'order-during-outage')]);
    expect(lookups).toBe(1);
    // Both get the error itself, which the HTTP layer answers with a 503, and neither ran its work.
    expect(failed).toEqual([lost, lost]);
    expect(isDatabaseUnavailable(lost)).toBe(true);
    expect(ran()).toBe(0);

    // The reader is not stuck behind the failure: the same requests are answered in the next batch.
    const answered = await Promise.all([request(tenantA, 'order-after-outage'), request(tenantA, 'order-during-outage')]);
    expect(answered[0]).toMatchObject({ statusCode: 200, body: '{"scope":"kept"}', replayed: true });
    expect(answered[1]).toMatchObject({ statusCode: 201, body: '{"ran":"order-during-outage"}', replayed: false });
    expect(ran()).toBe(1);
  });
});
