/**
 * Five hostile webhook receivers at once against one RUNNING delivery worker, plus a healthy one
 * (issue 11, dependency faults). delivery.test.ts checks each failure kind alone with a worker
 * driven tick by tick; here the worker runs on its own (start(), as the worker role does) while a
 * receiver hangs, one resets connections, one answers after the time-out, one redirects and one
 * presents a certificate from an unknown CA, on SQLite and PostgreSQL:
 * - every attempt is recorded with its failure kind (timeout, timeout, connection, http_status 302
 *   with the redirect not followed, tls) and scheduled again, round after round of retries;
 * - the healthy receiver gets every event of every round while the others fail;
 * - nothing is stuck: the hanging endpoint never holds more than its cap of sends, no lease is left
 *   behind, and the worker stops promptly with nothing in flight.
 * The worker's clock is a ManualClock: between rounds the test moves it past the next retry, once
 * every send of the round has been recorded (synchronised on the database, never on time).
 */
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../../src/db/schema.js';
import { ManualClock } from '../../../src/lib/clock.js';
import type { NewEvent } from '../../../src/modules/events/outbox.js';
import { createDeliveryWorker } from '../../../src/modules/webhooks/delivery-worker.js';
import type { WebhookScope } from '../../../src/modules/webhooks/webhooks.service.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { pollUntil } from '../../support/server-process.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const TIMEOUT_MS = 1_000;
const PER_ENDPOINT = 3;
const ROUNDS = 3;
const EVENTS_PER_ROUND = 3;
/** Past the first two retries of the schedule (+1 min, then +5 min). */
const ROUND_GAP_MS = 6 * 60_000 + 1_000;

/** What each hostile receiver must leave in the attempt history. */
const HOSTILE = {
  '/hang': { error_kind: 'timeout', response_status: null },
  '/slow': { error_kind: 'timeout', response_status: null },
  '/reset': { error_kind: 'connection', response_status: null },
  '/redirect': { error_kind: 'http_status', response_status: 302 },
  '/bad-certificate': { error_kind: 'tls', response_status: null },
} as const;

describe.each(await dialectMatrix())('hostile webhook receivers against a running worker [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  let receiver: WebhookReceiver;
  let untrusted: WebhookReceiver;
  let store: Kysely<Database>;
  const clock = new ManualClock('2026-04-06T08:00:00.000Z');

  beforeAll(async () => {
    [receiver, untrusted, db] = await Promise.all([startWebhookReceiver(), startWebhookReceiver({ certificate: 'untrusted' }), createTestDatabase(dialect)]);
    t = await createTestApp(db, { clock });
    store = t.ctx.storage.db;
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([receiver?.stop(), untrusted?.stop()]);
    await db?.drop();
  });

  it('hang, reset, slow answer, redirect and bad certificate each recorded as their failure kind while a healthy receiver keeps receiving; no worker stuck', async () => {
    const scope: WebhookScope = { tenantId: t.tenant.tenantId, environment: 'sandbox' };
    receiver.setMode('/hang', { kind: 'hang' });
    receiver.setMode('/slow', { kind: 'status', status: 200, delayMs: TIMEOUT_MS * 3 });
    receiver.setMode('/reset', { kind: 'reset' });
    receiver.setMode('/redirect', { kind: 'redirect', status: 302 });
    receiver.setMode('/healthy', { kind: 'status', status: 204 });
    const endpointOf = new Map<string, string>();
    for (const path of [...Object.keys(HOSTILE), '/healthy']) {
      const url = path === '/bad-certificate' ? untrusted.url(path) : receiver.url(path);
      endpointOf.set(path, (await t.ctx.webhooks.createEndpoint(scope, { url, events: '*' })).endpoint.id);
    }
    const hostileIds = Object.keys(HOSTILE).map((p) => endpointOf.get(p)!);

    const worker = createDeliveryWorker(
      { db: store, dialect: t.ctx.storage.dialect, walSync: t.ctx.storage.walSync, pipelined: t.ctx.storage.pipelined, offLoopWriter: t.ctx.storage.offLoopWriter, clock, random: t.ctx.random, secretBox: t.ctx.secretBox, logger: t.ctx.logger },
      { ca: receiver.ca, allowPrivateNetworks: true, timeoutMs: TIMEOUT_MS, leaseMs: 10_000, concurrency: 16, perEndpointConcurrency: PER_ENDPOINT, pollIntervalMs: 20 },
    );
    worker.start();
    const eventIds: string[] = [];
    try {
      for (let round = 1; round <= ROUNDS; round++) {
        const events: NewEvent[] = Array.from({ length: EVENTS_PER_ROUND }, (_, i) => ({
          type: 'decision.created',
          subjectId: null,
          data: { decision_id: `00000000-0000-4000-8000-${String(round * 100 + i).padStart(12, '0')}`, status: 'complete' },
        }));
        eventIds.push(...(await store.transaction().execute((trx) => t.ctx.outbox.append(trx, scope, events))).map((e) => e.id));
        // The healthy receiver gets this round's events while the hostile ones fail.
        await receiver.waitFor((reqs) => reqs.filter((r) => r.path === '/healthy').length >= eventIds.length, 20_000);
        // Quiet before the clock moves: every hostile delivery has been attempted, recorded, and is waiting for its retry.
        await pollUntil(
          async () => {
            const rows = await store.selectFrom('webhook_deliveries').select(['attempts', 'leased_until', 'next_attempt_at', 'state']).where('endpoint_id', 'in', hostileIds).execute();
            return rows.length === hostileIds.length * eventIds.length && rows.every((r) => r.state === 'pending' && r.attempts >= 1 && r.leased_until === null && r.next_attempt_at! > clock.now().getTime());
          },
          { timeoutMs: 30_000, intervalMs: 25 },
        );
        if (round < ROUNDS) clock.advance(ROUND_GAP_MS);
      }
    } finally {
      await worker.stop();
    }
    expect(worker.inFlight()).toBe(0);

    // Healthy: every event delivered, each exactly once.
    const healthy = await store.selectFrom('webhook_deliveries').select(['event_id', 'state']).where('endpoint_id', '=', endpointOf.get('/healthy')!).execute();
    expect(healthy.map((d) => d.state)).toEqual(Array(eventIds.length).fill('delivered'));
    expect(receiver.requestsTo('/healthy').map((r) => (JSON.parse(r.body) as { id: string }).id).sort()).toEqual([...eventIds].sort());

    // Hostile: each attempt recorded with its kind; the first round's deliveries were retried every round.
    for (const [path, expected] of Object.entries(HOSTILE)) {
      const attempts = await store.selectFrom('webhook_attempts').select(['attempt', 'error_kind', 'response_status']).where('endpoint_id', '=', endpointOf.get(path)!).execute();
      expect(attempts.length, path).toBe(EVENTS_PER_ROUND * (ROUNDS * (ROUNDS + 1)) / 2);
      for (const a of attempts) expect({ error_kind: a.error_kind, response_status: a.response_status }, path).toEqual(expected);
      expect(Math.max(...attempts.map((a) => a.attempt)), path).toBe(ROUNDS);
      const deliveries = await store.selectFrom('webhook_deliveries').select(['state', 'last_error_kind', 'lease_token']).where('endpoint_id', '=', endpointOf.get(path)!).execute();
      expect(deliveries.every((d) => d.state === 'pending' && d.last_error_kind === expected.error_kind && d.lease_token === null), path).toBe(true);
    }
    expect(receiver.requestsTo('/redirected'), 'a redirect was followed').toEqual([]);
    expect(untrusted.requests, 'a request went through a certificate nobody trusts').toEqual([]);
    expect(receiver.maxConcurrent('/hang')).toBeLessThanOrEqual(PER_ENDPOINT);
    expect(worker.stats().leasesLost).toBe(0);
  }, 120_000);
});
