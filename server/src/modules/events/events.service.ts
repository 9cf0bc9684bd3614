/**
 * The event history: what the outbox stored, read back by the tenant and environment it belongs to
 * (`GET /v1/events`, `GET /v1/events/{id}`), so a lender can recover what its receiver missed.
 *
 * How a page is read: newest first, ordered by (created_at, id) descending. `id` breaks ties
 * between events committed in the same millisecond, so the order is total and stable: paging never
 * skips or repeats an event. The cursor is an event id (`starting_after`): its (created_at, id) is
 * looked up inside the caller's scope and the page continues strictly below it. A cursor that
 * names no event of the scope (another tenant's, a typo) is refused rather than silently giving an
 * empty page. One row more than asked tells whether another page exists, without counting.
 * Only the last 30 days are visible: older rows are outside every answer (decisions.md section 9
 * keeps delivery history 30 days; the history API keeps the same promise). Reads use `readDb`.
 */
import type { Kysely } from 'kysely';
import type { Environment } from '../../config/config.js';
import type { Database } from '../../db/schema.js';
import { ApiError } from '../../http/errors/error-registry.js';
import type { Clock } from '../../lib/clock.js';
import type { EnvelopeSource } from './envelope.js';

export const EVENT_HISTORY_RETENTION_MS = 30 * 24 * 3600_000;
export const EVENT_PAGE_DEFAULT = 20;
export const EVENT_PAGE_MAX = 100;

export interface EventScope {
  tenantId: string;
  environment: Environment;
}

export interface ListEventsQuery {
  /** Only these types (already validated against EVENT_TYPES); empty or absent: all. */
  types?: readonly string[];
  /** Inclusive lower bound, epoch ms. */
  createdGteMs?: number;
  /** Exclusive upper bound, epoch ms. */
  createdLtMs?: number;
  limit: number;
  /** An event id from the previous page (its last element). */
  startingAfter?: string;
}

export interface EventPage {
  events: EnvelopeSource[];
  hasMore: boolean;
}

export function createEventsService(deps: { readDb: Kysely<Database>; clock: Clock }) {
  const oldestVisibleMs = () => deps.clock.now().getTime() - EVENT_HISTORY_RETENTION_MS;

  async function listEvents(scope: EventScope, query: ListEventsQuery): Promise<EventPage> {
    let q = deps.readDb
      .selectFrom('events')
      .select(['id', 'type', 'created_at', 'data_json'])
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .where('created_at', '>=', Math.max(oldestVisibleMs(), query.createdGteMs ?? 0));
    if (query.createdLtMs !== undefined) q = q.where('created_at', '<', query.createdLtMs);
    if (query.types && query.types.length > 0) q = q.where('type', 'in', [...query.types]);
    if (query.startingAfter !== undefined) {
      const cursor = await deps.readDb
        .selectFrom('events')
        .select(['id', 'created_at'])
        .where('id', '=', query.startingAfter)
        .where('tenant_id', '=', scope.tenantId)
        .where('environment', '=', scope.environment)
        .executeTakeFirst();
      if (!cursor) {
        throw new ApiError(
          'invalid_request',
          'starting_after names no event of this API key\'s tenant and environment; pass the next_cursor value of the previous page.',
        );
      }
      const { created_at: at, id } = cursor;
      q = q.where((eb) => eb.or([eb('created_at', '<', at), eb.and([eb('created_at', '=', at), eb('id', '<', id)])]));
    }
    const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit + 1).execute();
    return {
      events: rows.slice(0, query.limit).map((r) => ({ id: r.id, type: r.type, createdAtMs: r.created_at, dataJson: r.data_json })),
      hasMore: rows.length > query.limit,
    };
  }

  /** One event of the scope within the 30 days, or null (unknown, another scope's, or older). */
  async function getEvent(scope: EventScope, id: string): Promise<EnvelopeSource | null> {
    const row = await deps.readDb
      .selectFrom('events')
      .select(['id', 'type', 'created_at', 'data_json'])
      .where('id', '=', id)
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .where('created_at', '>=', oldestVisibleMs())
      .executeTakeFirst();
    return row ? { id: row.id, type: row.type, createdAtMs: row.created_at, dataJson: row.data_json } : null;
  }

  return { listEvents, getEvent };
}

export type EventsService = ReturnType<typeof createEventsService>;
