/**
 * Fan-out: outbox events become webhook deliveries in the transaction that commits the events.
 *
 * How it works: right after inserting its events, the outbox reads the fan-out's `lookup` through
 * the caller's transaction (in the same statement as the insert on PostgreSQL: one round trip): the
 * active endpoints of the events' tenant and environment (an index on tenant, environment, state;
 * at most 16 rows). Then `write` gives each event one `pending` delivery per endpoint subscribed to
 * its type or to `*`, due at once, and one insert writes them all. Because this is the same
 * transaction, an event and its deliveries exist together or not at all: a crash can
 * neither lose a committed event's deliveries nor deliver an event that rolled back. Disabled and
 * deleted endpoints get nothing (decisions.md section 9: a re-enabled endpoint recovers what it
 * missed with "resend failed since").
 */
import type { Kysely } from 'kysely';
import type { Environment } from '../../config/config.js';
import type { Database, WebhookDeliveriesTable } from '../../db/schema.js';
import { template } from '../../db/statements.js';
import { timeOrderedUuids, type Random } from '../../lib/clock.js';
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

/** A new delivery of `event` to `endpointId`, due at `atMs`; `newId` is a timeOrderedUuids source (ADR 0022). */
export function newDeliveryRow(
  newId: (unixMs: number) => string,
  scope: { tenantId: string; environment: Environment },
  endpointId: string,
  event: { id: string; type: string },
  atMs: number,
): WebhookDeliveriesTable {
  return {
    id: newId(atMs),
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

interface Target {
  id: string;
  event_types_json: string;
}

export function createWebhookFanOut(deps: { db: Kysely<Database>; random: Random }): EventFanOut<Target> {
  // Compiled once (it runs with every event appended); the parameters are the scope.
  const activeEndpoints = template(['tenantId', 'environment', 'state'], (p) =>
    deps.db.selectFrom('webhook_endpoints').select(['id', 'event_types_json']).where('tenant_id', '=', p.tenantId).where('environment', '=', p.environment).where('state', '=', p.state),
  );
  const deliveryId = timeOrderedUuids(deps.random);
  return {
    lookup: (scope) => activeEndpoints({ tenantId: scope.tenantId, environment: scope.environment, state: 'active' }),
    async write(trx, scope, events: StoredEvent[], endpoints: Target[], atMs: number): Promise<void> {
      const rows: WebhookDeliveriesTable[] = [];
      for (const endpoint of endpoints) {
        const types = parseEventTypes(endpoint.event_types_json);
        for (const event of events) if (subscribesTo(types, event.type)) rows.push(newDeliveryRow(deliveryId, scope, endpoint.id, event, atMs));
      }
      if (rows.length > 0) await trx.insertInto('webhook_deliveries').values(rows).execute();
    },
  };
}
