/**
 * The event outbox. A module that changes state appends its events here through the SAME
 * transaction as the change, so an event exists exactly when its change does: no event for a
 * rolled-back decision, no committed decision without its events. The webhook worker reads the
 * outbox and delivers (at least once); nothing here talks to the network.
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

export function createOutbox(deps: { clock: Clock; random: Random }) {
  /** Append events in one statement, inside the caller's transaction. */
  async function append(trx: Kysely<Database>, scope: { tenantId: string; environment: Environment }, events: NewEvent[]): Promise<StoredEvent[]> {
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
    return rows.map((r, i) => ({ id: r.id, type: events[i]!.type, created: Math.floor(now / 1000), data: events[i]!.data }));
  }

  return { append };
}

export type Outbox = ReturnType<typeof createOutbox>;
