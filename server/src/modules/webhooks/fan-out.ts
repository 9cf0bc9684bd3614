/**
 * Fan-out: outbox events become webhook deliveries in the transaction that commits the events.
 *
 * How it works: the outbox calls `fanOut` right after inserting its events, through the caller's
 * transaction. One query reads the active endpoints of the event's tenant and environment (an index
 * on tenant, environment, state; at most 16 rows); each event gets one `pending` delivery per
 * endpoint subscribed to its type or to `*`, due at once; one insert writes them all. Because this
 * is the same transaction, an event and its deliveries exist together or not at all: a crash can
 * neither lose a committed event's deliveries nor deliver an event that rolled back. Disabled and
 * deleted endpoints get nothing (decisions.md section 9: a re-enabled endpoint recovers what it
 * missed with "resend failed since").
 */
import type { Kysely } from 'kysely';
import type { Environment } from '../../config/config.js';
import type { Database, WebhookDeliveriesTable } from '../../db/schema.js';
import type { Random } from '../../lib/clock.js';
import type { EventFanOut, StoredEvent } from '../events/outbox.js';

export const ALL_EVENTS = '*';

/** True when an endpoint's subscription (a list of types, or ["*"]) includes `type`. */
export function subscribesTo(eventTypes: readonly string[], type: string): boolean {
  return eventTypes.includes(ALL_EVENTS) || eventTypes.includes(type);
}

export function parseEventTypes(json: string): string[] {
  const parsed = JSON.parse(json) as unknown;
  return Array.isArray(parsed) ? parsed.filter((t): t is string => typeof t === 'string') : [];
}

/** A new delivery of `event` to `endpointId`, due at `atMs`. */
export function newDeliveryRow(
  random: Random,
  scope: { tenantId: string; environment: Environment },
  endpointId: string,
  event: { id: string; type: string },
  atMs: number,
): WebhookDeliveriesTable {
  return {
    id: random.uuid(),
    endpoint_id: endpointId,
    event_id: event.id,
    tenant_id: scope.tenantId,
    environment: scope.environment,
    event_type: event.type,
    state: 'pending',
    attempts: 0,
    next_attempt_at: atMs,
    leased_until: null,
    lease_token: null,
    last_attempt_at: null,
    last_response_status: null,
    last_error_kind: null,
    finished_at: null,
    created_at: atMs,
    updated_at: atMs,
  };
}

export function createWebhookFanOut(deps: { random: Random }): EventFanOut {
  return async function fanOut(trx: Kysely<Database>, scope, events: StoredEvent[], atMs: number): Promise<void> {
    if (events.length === 0) return;
    const endpoints = await trx
      .selectFrom('webhook_endpoints')
      .select(['id', 'event_types_json'])
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .where('state', '=', 'active')
      .execute();
    if (endpoints.length === 0) return;
    const rows: WebhookDeliveriesTable[] = [];
    for (const endpoint of endpoints) {
      const types = parseEventTypes(endpoint.event_types_json);
      for (const event of events) if (subscribesTo(types, event.type)) rows.push(newDeliveryRow(deps.random, scope, endpoint.id, event, atMs));
    }
    if (rows.length > 0) await trx.insertInto('webhook_deliveries').values(rows).execute();
  };
}
