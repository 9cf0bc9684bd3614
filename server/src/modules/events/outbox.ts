/**
 * The event outbox. A module that changes state appends its events here through the SAME
 * transaction as the change, so an event exists exactly when its change does: no event for a
 * rolled-back decision, no committed decision without its events. The webhook worker reads the
 * outbox and delivers (at least once); nothing here talks to the network.
 *
 * Fan-out: when a `fanOut` hook is given (the webhooks module's, wired in app/context.ts), `append`
 * hands it the stored events in the same transaction, and it writes one webhook delivery per
 * subscribed active endpoint. Nothing is cached: an endpoint committed before this transaction
 * looked gets the event, so a just-created endpoint never misses one.
 */
import type { Kysely } from 'kysely';
import type { Environment } from '../../config/config.js';
import type { Database } from '../../db/schema.js';
import type { Clock, Random } from '../../lib/clock.js';

/** Every event type of interface.md (Events). New types are appended, never renamed. */
export const EVENT_TYPES = [
  'decision.finalized',
  'decision.adjusted',
  'decision.created',
  'application.created',
  'application.kyc_completed',
  'application.kyc_failed',
  'application.documents_requested',
  'application.condition_added',
  'score.completed',
  'score.errored',
  'dealer.added',
  'dealer.removed',
  'webhook.test',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface NewEvent {
  type: EventType;
  subjectId: string | null;
  data: Record<string, unknown>;
}

export interface StoredEvent {
  id: string;
  type: EventType;
  created: number;
  data: Record<string, unknown>;
}

/** Writes the deliveries of freshly stored events through the same transaction (webhooks/fan-out.ts). */
export type EventFanOut = (trx: Kysely<Database>, scope: { tenantId: string; environment: Environment }, events: StoredEvent[], atMs: number) => Promise<void>;

export interface AppendOptions {
  /** false: store only (a `webhook.test` event goes to one endpoint, which its sender queues itself). */
  fanOut?: boolean;
}

export function createOutbox(deps: { clock: Clock; random: Random; fanOut?: EventFanOut }) {
  /** Append events in one statement (plus the fan-out's lookup and insert), inside the caller's transaction. */
  async function append(trx: Kysely<Database>, scope: { tenantId: string; environment: Environment }, events: NewEvent[], options: AppendOptions = {}): Promise<StoredEvent[]> {
    if (events.length === 0) return [];
    const now = deps.clock.now().getTime();
    const rows = events.map((e) => ({
      id: deps.random.uuid(),
      tenant_id: scope.tenantId,
      environment: scope.environment,
      type: e.type,
      subject_id: e.subjectId,
      data_json: JSON.stringify(e.data),
      created_at: now,
    }));
    await trx.insertInto('events').values(rows).execute();
    const stored = rows.map((r, i) => ({ id: r.id, type: events[i]!.type, created: Math.floor(now / 1000), data: events[i]!.data }));
    if (deps.fanOut && options.fanOut !== false) await deps.fanOut(trx, scope, stored, now);
    return stored;
  }

  return { append };
}

export type Outbox = ReturnType<typeof createOutbox>;
