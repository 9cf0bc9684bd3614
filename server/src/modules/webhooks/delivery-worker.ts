/**
 * The webhook delivery worker: claims due deliveries with a lease, sends them, records the outcome.
 *
 * How it works (ADR 0005):
 * 1. Claim. A tick lists endpoints (active only) with due, unleased deliveries, oldest due first,
 *    with how many of each are in flight anywhere, and deals its free send slots round-robin under
 *    a per-endpoint cap (fairness.ts). For each endpoint it then claims that many rows in a short
 *    transaction: `UPDATE ... SET leased_until = now + lease, lease_token = <new uuid> WHERE id IN
 *    (SELECT ... ORDER BY next_attempt_at LIMIT n FOR UPDATE SKIP LOCKED)` on PostgreSQL, so
 *    several worker processes never claim the same row; on PostgreSQL an advisory lock per endpoint
 *    makes the cap hold across processes. SQLite has one writer, so the same UPDATE is atomic there
 *    without row locks (run one worker process on SQLite).
 * 2. Send. Every claimed delivery is sent at once (a claim never exceeds the free slots, so no
 *    leased row waits in a local queue): envelope {id, type, created, attempt, data}, a fresh
 *    signature for this attempt (two `v1=` during a rotation overlap), the spec's five headers,
 *    10 s time-out, no redirects, addresses checked (sender.ts).
 * 3. Record. One transaction: the next step from the pure retry decision (retry-schedule.ts)
 *    is written only if the lease token still matches; the attempt row is always written; a final
 *    outcome moves the endpoint's consecutive-failure count, and the 50th failure disables it.
 * A worker that dies mid-send leaves its rows leased; when the lease passes (it is longer than the
 * time-out plus a margin) any worker claims them again and sends the SAME attempt number again:
 * at least once, never silently dropped. The lease only expires early if a live worker is stuck
 * for longer than the lease, and then the receiver may see a duplicate, which `id` lets it drop.
 */
import { sql, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DialectName } from '../../db/database.js';
import type { Database, WebhookDeliveriesTable } from '../../db/schema.js';
import type { Clock, Random } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/crypto.js';
import { planClaims, type ClaimCandidate } from './fairness.js';
import { AUTO_DISABLE_THRESHOLD, DEFAULT_RETRY_SCHEDULE, endpointHealthAfter, scheduleNextAttempt, type NextStep, type RetrySchedule } from './retry-schedule.js';
import { createWebhookSender, DEFAULT_SEND_TIMEOUT_MS, type Resolver, type SendResult, type WebhookSender } from './sender.js';
import { secretAssociatedData, signatureHeader } from './signing.js';

export const USER_AGENT = 'Svc-Webhooks/1.0';

export interface DeliveryWorkerOptions {
  /** Per attempt (interface.md: 10 s). */
  timeoutMs: number;
  /** How long a claim holds a row; must exceed the time-out plus the time to record a result. */
  leaseMs: number;
  /** Deliveries in flight in this worker at most. */
  concurrency: number;
  /** Deliveries in flight per endpoint across all workers at most. */
  perEndpointConcurrency: number;
  /** How often a running worker looks for due work when nothing woke it. */
  pollIntervalMs: number;
  allowPrivateNetworks: boolean;
  /** CAs to trust instead of the default store (tests); production uses the store plus NODE_EXTRA_CA_CERTS. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** DNS resolution (tests simulate answers). */
  resolve?: Resolver;
  schedule: RetrySchedule;
  autoDisableThreshold: number;
}

export const DEFAULT_DELIVERY_OPTIONS: Readonly<DeliveryWorkerOptions> = Object.freeze({
  timeoutMs: DEFAULT_SEND_TIMEOUT_MS,
  leaseMs: 60_000,
  concurrency: 64,
  perEndpointConcurrency: 8,
  pollIntervalMs: 250,
  allowPrivateNetworks: false,
  schedule: DEFAULT_RETRY_SCHEDULE,
  autoDisableThreshold: AUTO_DISABLE_THRESHOLD,
});

export interface DeliveryWorkerDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  clock: Clock;
  random: Random;
  secretBox: SecretBox;
  logger: Logger;
}

/** A claimed delivery with everything needed to send it. */
interface ClaimedDelivery {
  id: string;
  token: string;
  endpointId: string;
  tenantId: string;
  attempts: number;
  url: string;
  secretSealed: string;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: number | null;
  eventId: string;
  eventType: string;
  eventCreatedAt: number;
  dataJson: string;
}

export interface DeliveryWorker {
  /** Claim what is due now (up to the free slots) and start sending it; resolves once claimed. */
  tick(): Promise<number>;
  /** Wait until nothing is being claimed or sent. */
  settle(): Promise<void>;
  /** tick + settle until a tick claims nothing: everything due at the clock's current time is attempted (tests). */
  deliverDue(): Promise<number>;
  /** Run: poll every pollIntervalMs, and tick again as soon as a send finishes. */
  start(): void;
  /** Stop claiming, let in-flight sends finish and record, close sockets. */
  stop(): Promise<void>;
  /** In flight right now in this worker. */
  inFlight(): number;
  /** What this worker has done since it was created (for logs and tests). */
  stats(): DeliveryWorkerStats;
}

export interface DeliveryWorkerStats {
  attempts: number;
  delivered: number;
  failed: number;
  leasesLost: number;
}

export function createDeliveryWorker(deps: DeliveryWorkerDeps, overrides: Partial<DeliveryWorkerOptions> = {}): DeliveryWorker {
  const options: DeliveryWorkerOptions = { ...DEFAULT_DELIVERY_OPTIONS, ...overrides };
  if (options.leaseMs <= options.timeoutMs) throw new RangeError('leaseMs must exceed timeoutMs, or a live send could be claimed twice');
  const { db, clock, logger } = deps;
  const postgres = deps.dialect === 'postgres';
  const sender: WebhookSender = createWebhookSender({
    timeoutMs: options.timeoutMs,
    allowPrivateNetworks: options.allowPrivateNetworks,
    ...(options.ca !== undefined ? { ca: options.ca } : {}),
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });

  const inFlight = new Map<string, Promise<void>>();
  const counters: DeliveryWorkerStats = { attempts: 0, delivered: 0, failed: 0, leasesLost: 0 };
  let claiming: Promise<number> | null = null;
  let claimAgain = false;
  let running = false;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;

  function tick(): Promise<number> {
    if (stopped) return Promise.resolve(0);
    if (claiming) {
      claimAgain = true;
      return claiming;
    }
    claiming = (async () => {
      let total = 0;
      do {
        claimAgain = false;
        try {
          total += await claimAndLaunch();
        } catch (err) {
          // A database hiccup must not kill the loop; the next tick tries again.
          logger.warn({ err: errorMessage(err) }, 'webhook claim failed; will retry');
          break;
        }
      } while (claimAgain && !stopped);
      return total;
    })().finally(() => {
      claiming = null;
    });
    return claiming;
  }

  async function claimAndLaunch(): Promise<number> {
    const free = options.concurrency - inFlight.size;
    if (free <= 0) return 0;
    const now = clock.now().getTime();
    const candidates = await dueEndpoints(now, free);
    if (candidates.length === 0) return 0;
    const plan = planClaims(candidates, { slots: free, perEndpointCap: options.perEndpointConcurrency });
    let launched = 0;
    for (const entry of plan) {
      const claimed = await claimForEndpoint(entry.endpointId, entry.count, now);
      for (const delivery of claimed) launch(delivery);
      launched += claimed.length;
    }
    return launched;
  }

  /** Endpoints with due, unleased deliveries and room under the cap, oldest due first. */
  async function dueEndpoints(now: number, limit: number): Promise<ClaimCandidate[]> {
    const cap = options.perEndpointConcurrency;
    const due = sql`d.endpoint_id = e.id and d.state = 'pending' and d.next_attempt_at <= ${now} and (d.leased_until is null or d.leased_until <= ${now})`;
    const leased = sql`(select count(*) from webhook_deliveries l where l.endpoint_id = e.id and l.state = 'pending' and l.leased_until > ${now})`;
    const result = await sql<{ endpoint_id: string; due: number | string; in_flight: number | string }>`
      select e.id as endpoint_id,
             (select count(*) from (select 1 as one from webhook_deliveries d where ${due} limit ${cap}) as due_rows) as due,
             ${leased} as in_flight,
             (select min(d.next_attempt_at) from webhook_deliveries d where ${due}) as oldest_due
        from webhook_endpoints e
       where e.state = 'active'
         and exists (select 1 from webhook_deliveries d where ${due})
         and ${leased} < ${cap}
       order by oldest_due asc, e.id asc
       limit ${limit}`.execute(db);
    return result.rows.map((r) => ({ endpointId: r.endpoint_id, due: Number(r.due), inFlight: Number(r.in_flight) }));
  }

  async function claimForEndpoint(endpointId: string, wanted: number, now: number): Promise<ClaimedDelivery[]> {
    return db.transaction().execute(async (trx) => {
      if (postgres) {
        // One claimer per endpoint at a time across processes, so the in-flight count below stays true.
        const lock = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(hashtext(${`cds.webhooks.claim.${endpointId}`})) as locked`.execute(trx);
        if (!lock.rows[0]?.locked) return [];
      }
      const leasedNow = await trx
        .selectFrom('webhook_deliveries')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('endpoint_id', '=', endpointId)
        .where('state', '=', 'pending')
        .where('leased_until', '>', now)
        .executeTakeFirstOrThrow();
      const take = Math.min(wanted, options.perEndpointConcurrency - Number(leasedNow.n));
      if (take <= 0) return [];
      const token = deps.random.uuid();
      let pick = trx
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('endpoint_id', '=', endpointId)
        .where('state', '=', 'pending')
        .where('next_attempt_at', '<=', now)
        .where((eb) => eb.or([eb('leased_until', 'is', null), eb('leased_until', '<=', now)]))
        .orderBy('next_attempt_at')
        .orderBy('id')
        .limit(take);
      if (postgres) pick = pick.forUpdate().skipLocked();
      const claimed = await trx
        .updateTable('webhook_deliveries')
        .set({ leased_until: now + options.leaseMs, lease_token: token, updated_at: now })
        .where('id', 'in', pick)
        .returning('id')
        .execute();
      if (claimed.length === 0) return [];
      const rows = await trx
        .selectFrom('webhook_deliveries as d')
        .innerJoin('events as ev', 'ev.id', 'd.event_id')
        .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
        .select([
          'd.id', 'd.attempts', 'd.endpoint_id', 'd.tenant_id', 'e.url', 'e.secret_sealed', 'e.previous_secret_sealed', 'e.previous_secret_expires_at',
          'ev.id as event_id', 'ev.type as event_type', 'ev.created_at as event_created_at', 'ev.data_json',
        ])
        .where('d.id', 'in', claimed.map((c) => c.id))
        .orderBy('d.next_attempt_at')
        .execute();
      return rows.map((r) => ({
        id: r.id,
        token,
        endpointId: r.endpoint_id,
        tenantId: r.tenant_id,
        attempts: r.attempts,
        url: r.url,
        secretSealed: r.secret_sealed,
        previousSecretSealed: r.previous_secret_sealed,
        previousSecretExpiresAt: r.previous_secret_expires_at,
        eventId: r.event_id,
        eventType: r.event_type,
        eventCreatedAt: r.event_created_at,
        dataJson: r.data_json,
      }));
    });
  }

  function launch(delivery: ClaimedDelivery): void {
    const p = deliver(delivery)
      .catch((err: unknown) => logger.error({ deliveryId: delivery.id, endpointId: delivery.endpointId, err: errorMessage(err) }, 'webhook delivery could not be recorded; its lease will expire and it will be retried'))
      .finally(() => {
        inFlight.delete(delivery.id);
        // A free slot: look for more work now rather than at the next poll.
        if (running && !stopped) void tick();
      });
    inFlight.set(delivery.id, p);
  }

  async function deliver(delivery: ClaimedDelivery): Promise<void> {
    const attempt = delivery.attempts + 1;
    const body = envelopeJson(delivery, attempt);
    const startedAt = clock.now();
    let headers: Record<string, string> = {};
    let result: SendResult;
    try {
      headers = requestHeaders(delivery, body, startedAt);
      result = await sender.send({ url: delivery.url, headers, body });
    } catch (err) {
      // A secret that no longer opens (changed DATA_ENCRYPTION_KEY) must still advance the schedule.
      result = { ok: false, status: null, responseBody: null, durationMs: 0, errorKind: 'internal', errorDetail: errorMessage(err).slice(0, 200) };
    }
    const finishedAt = clock.now();
    const step = scheduleNextAttempt({ attempt, succeeded: result.ok, finishedAt }, options.schedule);
    await record(delivery, attempt, headers, body, result, step, startedAt.getTime(), finishedAt.getTime());
  }

  /** The envelope, built around the stored `data` text so `data` is byte-identical on every attempt. */
  function envelopeJson(delivery: ClaimedDelivery, attempt: number): string {
    const created = Math.floor(delivery.eventCreatedAt / 1000);
    return `{"id":${JSON.stringify(delivery.eventId)},"type":${JSON.stringify(delivery.eventType)},"created":${created},"attempt":${attempt},"data":${delivery.dataJson}}`;
  }

  function requestHeaders(delivery: ClaimedDelivery, body: string, at: Date): Record<string, string> {
    const ad = secretAssociatedData(delivery.endpointId);
    const secrets = [deps.secretBox.openText(delivery.secretSealed, ad)];
    if (delivery.previousSecretSealed && delivery.previousSecretExpiresAt !== null && delivery.previousSecretExpiresAt > at.getTime()) {
      secrets.push(deps.secretBox.openText(delivery.previousSecretSealed, ad));
    }
    return {
      'Svc-Signature': signatureHeader({ timestamp: Math.floor(at.getTime() / 1000), body, secrets }),
      'Svc-Webhook-Id': delivery.eventId,
      'Svc-Webhook-Type': delivery.eventType,
      'Content-Type': 'application/json',
      'User-Agent': USER_AGENT,
    };
  }

  async function record(
    delivery: ClaimedDelivery,
    attempt: number,
    headers: Record<string, string>,
    body: string,
    result: SendResult,
    step: NextStep,
    startedAt: number,
    finishedAt: number,
  ): Promise<void> {
    const changes: Partial<WebhookDeliveriesTable> = {
      attempts: attempt,
      leased_until: null,
      lease_token: null,
      last_attempt_at: startedAt,
      last_response_status: result.status,
      last_error_kind: result.errorKind,
      updated_at: finishedAt,
    };
    if (step.kind === 'retry') Object.assign(changes, { state: 'pending', next_attempt_at: step.at.getTime() });
    else Object.assign(changes, { state: step.kind, next_attempt_at: null, finished_at: finishedAt });

    const outcome = await db.transaction().execute(async (trx): Promise<{ applied: boolean; disabled: boolean }> => {
      const updated = await trx
        .updateTable('webhook_deliveries')
        .set(changes)
        .where('id', '=', delivery.id)
        .where('lease_token', '=', delivery.token)
        .executeTakeFirst();
      // The attempt happened whatever became of the lease: it belongs in the history.
      await trx
        .insertInto('webhook_attempts')
        .values({
          id: deps.random.uuid(),
          delivery_id: delivery.id,
          endpoint_id: delivery.endpointId,
          attempt,
          request_headers_json: JSON.stringify({ ...headers, 'Content-Length': String(Buffer.byteLength(body)) }),
          request_body: body,
          response_status: result.status,
          response_body: result.responseBody,
          duration_ms: result.durationMs,
          error_kind: result.errorKind,
          error_detail: result.errorDetail,
          created_at: startedAt,
        })
        .execute();
      if (Number(updated.numUpdatedRows) === 0) return { applied: false, disabled: false };
      if (step.kind === 'delivered') {
        await trx.updateTable('webhook_endpoints').set({ consecutive_failures: 0 }).where('id', '=', delivery.endpointId).where('consecutive_failures', '<>', 0).execute();
        return { applied: true, disabled: false };
      }
      if (step.kind !== 'failed') return { applied: true, disabled: false };
      let current = trx.selectFrom('webhook_endpoints').select(['consecutive_failures', 'state']).where('id', '=', delivery.endpointId);
      if (postgres) current = current.forUpdate();
      const endpoint = await current.executeTakeFirst();
      if (!endpoint) return { applied: true, disabled: false };
      const health = endpointHealthAfter(endpoint.consecutive_failures, 'failed', options.autoDisableThreshold);
      const disable = health.disable && endpoint.state === 'active';
      await trx
        .updateTable('webhook_endpoints')
        .set({
          consecutive_failures: health.consecutiveFailures,
          ...(disable
            ? {
                state: 'disabled' as const,
                disabled_at: finishedAt,
                disabled_reason: `Auto-disabled after ${health.consecutiveFailures} consecutive failed deliveries (last: ${describeFailure(result)}).`,
                updated_at: finishedAt,
              }
            : {}),
        })
        .where('id', '=', delivery.endpointId)
        .execute();
      return { applied: true, disabled: disable };
    });

    counters.attempts += 1;
    if (!outcome.applied) {
      counters.leasesLost += 1;
      logger.warn({ deliveryId: delivery.id, endpointId: delivery.endpointId }, 'webhook lease was lost before the result was recorded (another worker took over)');
      return;
    }
    if (step.kind === 'delivered') counters.delivered += 1;
    if (step.kind === 'failed') counters.failed += 1;
    const logFields = { deliveryId: delivery.id, endpointId: delivery.endpointId, tenantId: delivery.tenantId, eventType: delivery.eventType, attempt, status: result.status, errorKind: result.errorKind, durationMs: result.durationMs };
    if (step.kind === 'failed') logger.warn(logFields, 'webhook delivery failed after its last attempt');
    else logger.debug({ ...logFields, next: step.kind === 'retry' ? step.at.toISOString() : step.kind }, 'webhook attempt');
    if (outcome.disabled) logger.warn({ endpointId: delivery.endpointId, tenantId: delivery.tenantId }, 'webhook endpoint auto-disabled');
  }

  async function settle(): Promise<void> {
    for (;;) {
      if (claiming) await claiming;
      if (inFlight.size === 0) return;
      await Promise.allSettled([...inFlight.values()]);
    }
  }

  return {
    tick,
    settle,
    async deliverDue() {
      let total = 0;
      for (;;) {
        const n = await tick();
        await settle();
        total += n;
        if (n === 0) return total;
      }
    },
    start() {
      if (running || stopped) return;
      running = true;
      // Not unref'd: a started loop is what keeps a `--role worker` process alive (nothing else may).
      timer = setInterval(() => void tick(), options.pollIntervalMs);
      void tick();
    },
    async stop() {
      stopped = true;
      running = false;
      if (timer) clearInterval(timer);
      await settle();
      sender.close();
    },
    inFlight: () => inFlight.size,
    stats: () => ({ ...counters }),
  };
}

function describeFailure(result: SendResult): string {
  if (result.errorKind === 'http_status') return `HTTP ${result.status}`;
  return result.errorKind ?? 'unknown error';
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
