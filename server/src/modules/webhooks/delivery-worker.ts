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
 * 3. Record. The send slot is freed as soon as the HTTP exchange ends; the result joins a batch
 *    (results that finish together share one transaction, one commit). In it: the next step from
 *    the pure retry decision (retry-schedule.ts), written only where the lease token still matches;
 *    every attempt row; and each final outcome moves its endpoint's consecutive-failure count, the
 *    50th failure in a row disabling it. The row stays leased until this commits.
 * A worker that dies mid-send leaves its rows leased; when the lease passes (it is longer than the
 * time-out plus a margin) any worker claims them again and sends the SAME attempt number again:
 * at least once, never silently dropped. The lease only expires early if a live worker is stuck
 * for longer than the lease, and then the receiver may see a duplicate, which `id` lets it drop.
 */
import { sql, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DialectName } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import type { Clock, Random } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/crypto.js';
import { eventEnvelopeJson } from '../events/envelope.js';
import { planClaims, type ClaimCandidate, type ClaimPlanEntry } from './fairness.js';
import { AUTO_DISABLE_THRESHOLD, DEFAULT_RETRY_SCHEDULE, endpointHealthAfter, scheduleNextAttempt, type NextStep, type RetrySchedule } from './retry-schedule.js';
import { createWebhookSender, DEFAULT_SEND_TIMEOUT_MS, type Resolver, type SendResult, type WebhookSender } from './sender.js';
import { secretAssociatedData, signatureHeader } from './signing.js';

export const USER_AGENT = 'Svc-Webhooks/1.0';
/** Results written per transaction at most. */
const RECORD_BATCH = 100;

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
  /** Claim transactions that claimed something, and result-writing transactions. */
  claims: number;
  writes: number;
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

  /** Sends in progress (they hold the slots). */
  const inFlight = new Map<string, Promise<void>>();
  /** Results waiting to be written (their rows are still leased). */
  const recording = new Set<Promise<void>>();
  const counters: DeliveryWorkerStats = { attempts: 0, delivered: 0, failed: 0, leasesLost: 0, claims: 0, writes: 0 };
  let claiming: Promise<number> | null = null;
  let claimAgain = false;
  let running = false;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;

  /** Many sends finish in the same turn of the event loop: one claim round for all of them. */
  let wakePending = false;
  function wake(): void {
    if (!running || stopped || wakePending) return;
    wakePending = true;
    setImmediate(() => {
      wakePending = false;
      void tick();
    });
  }

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
    // Results not yet written still hold their leases; don't run ahead of the writer by more than a round.
    const free = options.concurrency - inFlight.size - Math.max(0, recording.size - options.concurrency);
    if (free <= 0) return 0;
    const now = clock.now().getTime();
    const candidates = await dueEndpoints(now, free);
    if (candidates.length === 0) return 0;
    const plan = planClaims(candidates, { slots: free, perEndpointCap: options.perEndpointConcurrency });
    const claimed = await claim(plan, now);
    if (claimed.length > 0) counters.claims += 1;
    for (const delivery of claimed) launch(delivery);
    return claimed.length;
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

  /** Claim what the plan says, all endpoints in one short transaction (one commit per tick). */
  async function claim(plan: ClaimPlanEntry[], now: number): Promise<ClaimedDelivery[]> {
    if (plan.length === 0) return [];
    const token = deps.random.uuid();
    return db.transaction().execute(async (trx) => {
      const ids: string[] = [];
      for (const entry of plan) {
        if (postgres) {
          // One claimer per endpoint at a time across processes, so the in-flight count below stays true.
          const lock = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(hashtext(${`cds.webhooks.claim.${entry.endpointId}`})) as locked`.execute(trx);
          if (!lock.rows[0]?.locked) continue;
        }
        const leasedNow = await trx
          .selectFrom('webhook_deliveries')
          .select((eb) => eb.fn.countAll<number | string>().as('n'))
          .where('endpoint_id', '=', entry.endpointId)
          .where('state', '=', 'pending')
          .where('leased_until', '>', now)
          .executeTakeFirstOrThrow();
        const take = Math.min(entry.count, options.perEndpointConcurrency - Number(leasedNow.n));
        if (take <= 0) continue;
        let pick = trx
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('endpoint_id', '=', entry.endpointId)
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
        ids.push(...claimed.map((c) => c.id));
      }
      if (ids.length === 0) return [];
      const rows = await trx
        .selectFrom('webhook_deliveries as d')
        .innerJoin('events as ev', 'ev.id', 'd.event_id')
        .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
        .select([
          'd.id', 'd.attempts', 'd.endpoint_id', 'd.tenant_id', 'e.url', 'e.secret_sealed', 'e.previous_secret_sealed', 'e.previous_secret_expires_at',
          'ev.id as event_id', 'ev.type as event_type', 'ev.created_at as event_created_at', 'ev.data_json',
        ])
        .where('d.id', 'in', ids)
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

  /**
   * A send slot is held for the HTTP exchange only; recording happens after the slot is freed (the
   * row's lease still covers it until the result is written), so sending and writing overlap.
   */
  function launch(delivery: ClaimedDelivery): void {
    const p = send(delivery)
      .then((outcome) => {
        const written = record(outcome)
          .catch((err: unknown) => logger.error({ deliveryId: delivery.id, endpointId: delivery.endpointId, err: errorMessage(err) }, 'webhook result could not be recorded; its lease will expire and it will be retried'))
          .finally(() => {
            recording.delete(written);
            // Its lease is released now: the endpoint may have room again.
            wake();
          });
        recording.add(written);
      })
      .finally(() => {
        inFlight.delete(delivery.id);
        // A free slot: look for more work now rather than at the next poll.
        wake();
      });
    inFlight.set(delivery.id, p);
  }

  async function send(delivery: ClaimedDelivery): Promise<Outcome> {
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
    return { delivery, attempt, headers, body, result, step, startedAt: startedAt.getTime(), finishedAt: finishedAt.getTime() };
  }

  /** The envelope, built around the stored `data` text so `data` is byte-identical on every attempt. */
  function envelopeJson(delivery: ClaimedDelivery, attempt: number): string {
    return eventEnvelopeJson({ id: delivery.eventId, type: delivery.eventType, createdAtMs: delivery.eventCreatedAt, dataJson: delivery.dataJson }, attempt);
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

  interface Outcome {
    delivery: ClaimedDelivery;
    attempt: number;
    headers: Record<string, string>;
    body: string;
    result: SendResult;
    step: NextStep;
    startedAt: number;
    finishedAt: number;
  }

  // Results are written in batches: sends finishing at about the same time share one transaction,
  // so recording costs one commit (one fsync on SQLite) per batch rather than per delivery.
  const resultQueue: Array<{ outcome: Outcome; resolve: () => void; reject: (err: unknown) => void }> = [];
  let flushing: Promise<void> | null = null;

  function record(outcome: Outcome): Promise<void> {
    return new Promise((resolve, reject) => {
      resultQueue.push({ outcome, resolve, reject });
      kickFlush();
    });
  }

  function kickFlush(): void {
    if (flushing) return;
    flushing = flushQueue().finally(() => {
      flushing = null;
      if (resultQueue.length > 0) kickFlush();
    });
  }

  async function flushQueue(): Promise<void> {
    // Let the other sends that finished in this same moment join the batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (resultQueue.length > 0) {
      const batch = resultQueue.splice(0, RECORD_BATCH);
      try {
        report(batch.map((b) => b.outcome), await writeResults(batch.map((b) => b.outcome)));
        for (const b of batch) b.resolve();
      } catch (err) {
        if (batch.length === 1) {
          batch[0]!.reject(err);
          continue;
        }
        // One result that cannot be written must not sink the others: write them one by one.
        for (const b of batch) {
          try {
            report([b.outcome], await writeResults([b.outcome]));
            b.resolve();
          } catch (single) {
            b.reject(single);
          }
        }
      }
    }
  }

  /** One transaction: next steps (only where the lease token still matches), attempt rows, endpoint health. */
  async function writeResults(outcomes: Outcome[]): Promise<{ applied: Set<string>; disabled: Set<string> }> {
    counters.writes += 1;
    return db.transaction().execute(async (trx) => {
      const applied = await applyNextSteps(trx, outcomes);
      // Every attempt happened, whatever became of its lease: all belong in the history.
      const attempts = outcomes.map((o) => ({
        id: deps.random.uuid(),
        delivery_id: o.delivery.id,
        endpoint_id: o.delivery.endpointId,
        attempt: o.attempt,
        request_headers_json: JSON.stringify({ ...o.headers, 'Content-Length': String(Buffer.byteLength(o.body)) }),
        request_body: o.body,
        response_status: o.result.status,
        response_body: o.result.responseBody,
        duration_ms: o.result.durationMs,
        error_kind: o.result.errorKind,
        error_detail: o.result.errorDetail,
        created_at: o.startedAt,
      }));
      for (let i = 0; i < attempts.length; i += 100) await trx.insertInto('webhook_attempts').values(attempts.slice(i, i + 100)).execute();

      // Final outcomes move their endpoint's failure count, in the order they finished.
      const finals = new Map<string, Outcome[]>();
      for (const o of [...outcomes].sort((a, b) => a.finishedAt - b.finishedAt)) {
        if (!applied.has(o.delivery.id) || o.step.kind === 'retry') continue;
        finals.set(o.delivery.endpointId, [...(finals.get(o.delivery.endpointId) ?? []), o]);
      }
      const disabled = new Set<string>();
      for (const endpointId of [...finals.keys()].sort(compare)) {
        const list = finals.get(endpointId)!;
        if (list.every((o) => o.step.kind === 'delivered')) {
          await trx.updateTable('webhook_endpoints').set({ consecutive_failures: 0 }).where('id', '=', endpointId).where('consecutive_failures', '<>', 0).execute();
          continue;
        }
        let current = trx.selectFrom('webhook_endpoints').select(['consecutive_failures', 'state']).where('id', '=', endpointId);
        if (postgres) current = current.forUpdate();
        const endpoint = await current.executeTakeFirst();
        if (!endpoint) continue;
        let count = endpoint.consecutive_failures;
        let crossedWith: Outcome | null = null;
        for (const o of list) {
          const health = endpointHealthAfter(count, o.step.kind === 'delivered' ? 'delivered' : 'failed', options.autoDisableThreshold);
          count = health.consecutiveFailures;
          if (health.disable && crossedWith === null) crossedWith = o;
        }
        const disable = crossedWith !== null && endpoint.state === 'active';
        const at = list[list.length - 1]!.finishedAt;
        await trx
          .updateTable('webhook_endpoints')
          .set({
            consecutive_failures: count,
            ...(disable
              ? {
                  state: 'disabled' as const,
                  disabled_at: at,
                  disabled_reason: `Auto-disabled after ${options.autoDisableThreshold} consecutive failed deliveries (last: ${describeFailure(crossedWith!.result)}).`,
                  updated_at: at,
                }
              : {}),
          })
          .where('id', '=', endpointId)
          .execute();
        if (disable) disabled.add(endpointId);
      }
      return { applied, disabled };
    });
  }

  /**
   * Each delivery's next step, only where this worker's lease token still holds. PostgreSQL gets one
   * statement for the whole batch (one round trip); SQLite runs in-process, so one per row is cheap.
   */
  async function applyNextSteps(trx: Kysely<Database>, outcomes: Outcome[]): Promise<Set<string>> {
    const rows = [...outcomes]
      // Rows in id order, endpoints in id order: two workers' batches always lock in the same order.
      .sort((a, b) => compare(a.delivery.id, b.delivery.id))
      .map((o) => ({
        id: o.delivery.id,
        token: o.delivery.token,
        attempts: o.attempt,
        state: o.step.kind === 'retry' ? ('pending' as const) : o.step.kind,
        next_attempt_at: o.step.kind === 'retry' ? o.step.at.getTime() : null,
        last_attempt_at: o.startedAt,
        last_response_status: o.result.status,
        last_error_kind: o.result.errorKind,
        finished_at: o.step.kind === 'retry' ? null : o.finishedAt,
        updated_at: o.finishedAt,
      }));
    if (postgres) {
      const values = rows.map(
        (r) =>
          sql`(${r.id}::text, ${r.token}::text, ${r.attempts}::integer, ${r.state}::text, ${r.next_attempt_at}::bigint, ${r.last_attempt_at}::bigint, ${r.last_response_status}::integer, ${r.last_error_kind}::text, ${r.finished_at}::bigint, ${r.updated_at}::bigint)`,
      );
      const updated = await sql<{ id: string }>`
        update webhook_deliveries as d
           set attempts = v.attempts, state = v.state, next_attempt_at = v.next_attempt_at, leased_until = null, lease_token = null,
               last_attempt_at = v.last_attempt_at, last_response_status = v.last_response_status, last_error_kind = v.last_error_kind,
               finished_at = v.finished_at, updated_at = v.updated_at
          from (values ${sql.join(values)}) as v(id, token, attempts, state, next_attempt_at, last_attempt_at, last_response_status, last_error_kind, finished_at, updated_at)
         where d.id = v.id and d.lease_token = v.token
        returning d.id`.execute(trx);
      return new Set(updated.rows.map((r) => r.id));
    }
    const applied = new Set<string>();
    for (const { id, token, ...changes } of rows) {
      const updated = await trx.updateTable('webhook_deliveries').set({ ...changes, leased_until: null, lease_token: null }).where('id', '=', id).where('lease_token', '=', token).executeTakeFirst();
      if (Number(updated.numUpdatedRows) > 0) applied.add(id);
    }
    return applied;
  }

  function report(outcomes: Outcome[], written: { applied: Set<string>; disabled: Set<string> }): void {
    for (const o of outcomes) {
      counters.attempts += 1;
      const { delivery, step, result, attempt } = o;
      if (!written.applied.has(delivery.id)) {
        counters.leasesLost += 1;
        logger.warn({ deliveryId: delivery.id, endpointId: delivery.endpointId }, 'webhook lease was lost before the result was recorded (another worker took over)');
        continue;
      }
      if (step.kind === 'delivered') counters.delivered += 1;
      if (step.kind === 'failed') counters.failed += 1;
      const logFields = { deliveryId: delivery.id, endpointId: delivery.endpointId, tenantId: delivery.tenantId, eventType: delivery.eventType, attempt, status: result.status, errorKind: result.errorKind, durationMs: result.durationMs };
      if (step.kind === 'failed') logger.warn(logFields, 'webhook delivery failed after its last attempt');
      else logger.debug({ ...logFields, next: step.kind === 'retry' ? step.at.toISOString() : step.kind }, 'webhook attempt');
    }
    for (const endpointId of written.disabled) {
      const tenantId = outcomes.find((o) => o.delivery.endpointId === endpointId)?.delivery.tenantId;
      logger.warn({ endpointId, tenantId }, 'webhook endpoint auto-disabled');
    }
  }

  async function settle(): Promise<void> {
    for (;;) {
      if (claiming) await claiming;
      if (inFlight.size === 0 && recording.size === 0) return;
      await Promise.allSettled([...inFlight.values(), ...recording]);
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

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function describeFailure(result: SendResult): string {
  if (result.errorKind === 'http_status') return `HTTP ${result.status}`;
  return result.errorKind ?? 'unknown error';
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
