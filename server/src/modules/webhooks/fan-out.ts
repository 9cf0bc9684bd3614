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
 *
 * Planned (SQLite's writer thread, ADR 0030; PostgreSQL's pipelined batches, ADR 0037): a plan is data, made before its transaction, so it
 * cannot read the endpoints in it. `planned(scope)` gives the scope's active endpoints as last
 * read (kept up to a second), and a guard statement that, run in the transaction where the
 * lookup would be, must find exactly those endpoints; if any changed meanwhile the unit is run
 * again by its function, which reads them (group-commit.ts `RUN_AS_FUNCTION`), and the scope is
 * read afresh. So a planned unit writes the deliveries the function would, and a just-created
 * endpoint still never misses an event.
 */
import type { Kysely } from 'kysely';
import type { Environment } from '../../config/config.js';
import type { Database, WebhookDeliveriesTable } from '../../db/schema.js';
import { insertStatement, preparedOnPostgres, template } from '../../db/statements.js';
import type { DialectName } from '../../db/database.js';
import { RUN_AS_FUNCTION } from '../../db/group-commit.js';
import { plannedStatement, type PlannedStatement } from '../../db/sqlite-writer-thread.js';
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

type Scope = { tenantId: string; environment: Environment };

/** How long `planned` trusts what it read of a scope's endpoints (the guard checks it anyway). */
export const PLANNED_TARGETS_MAX_AGE_MS = 1_000;
const PLANNED_SCOPES_KEPT = 10_000;

/** The fan-out of a plan: the endpoints it is made for, and the guard that they still are. */
export interface PlannedFanOut {
  targets: Target[];
  guard: PlannedStatement;
  /** The deliveries of `events` for `targets` as one statement (none: null). */
  deliveries(events: StoredEvent[], atMs: number): PlannedStatement | null;
  /** The guard failed: read the scope again next time. */
  forget(): void;
}

// The active endpoints of a scope as one text, in id order (SQLite's binary order of ASCII ids is
// JavaScript's): the guard's value and what the plan expects it to be.
const GUARD_SQL =
  `select coalesce(group_concat("id" || ' ' || "event_types_json", char(10)), '') from ` +
  `(select "id", "event_types_json" from "webhook_endpoints" where "tenant_id" = ? and "environment" = ? and "state" = 'active' order by "id")`;
// PostgreSQL: the same text, ordered by the ids' bytes (collation "C", which is JavaScript's order
// of ASCII) whatever the database's collation. No `$` but the placeholders: it may become the last
// part of a combined statement, which renumbers them (db/statements.ts).
const GUARD_SQL_POSTGRES =
  `select coalesce(string_agg("id" || ' ' || "event_types_json", chr(10) order by "id" collate "C"), '') as "endpoints" ` +
  `from "webhook_endpoints" where "tenant_id" = $1 and "environment" = $2 and "state" = 'active'`;
const guardValueOf = (targets: readonly Target[]) => targets.map((t) => `${t.id} ${t.event_types_json}`).join('\n');

export function createWebhookFanOut(deps: { db: Kysely<Database>; readDb?: Kysely<Database>; random: Random; dialect?: DialectName }): EventFanOut<Target> & { planned(scope: Scope): Promise<PlannedFanOut> } {
  const guardSql = deps.dialect === 'postgres' ? preparedOnPostgres(GUARD_SQL_POSTGRES) : GUARD_SQL;
  // Compiled once (it runs with every event appended); the parameters are the scope.
  const activeEndpoints = template(['tenantId', 'environment', 'state'], (p) =>
    deps.db.selectFrom('webhook_endpoints').select(['id', 'event_types_json']).where('tenant_id', '=', p.tenantId).where('environment', '=', p.environment).where('state', '=', p.state),
  );
  const deliveryId = timeOrderedUuids(deps.random);
  const insertDeliveries = insertStatement(deps.db, 'webhook_deliveries');
  const readDb = deps.readDb ?? deps.db;
  const known = new Map<string, { targets: Target[]; guardValue: string; readAt: number }>();

  function deliveryRows(scope: Scope, events: StoredEvent[], endpoints: Target[], atMs: number): WebhookDeliveriesTable[] {
    const rows: WebhookDeliveriesTable[] = [];
    for (const endpoint of endpoints) {
      const types = parseEventTypes(endpoint.event_types_json);
      for (const event of events) if (subscribesTo(types, event.type)) rows.push(newDeliveryRow(deliveryId, scope, endpoint.id, event, atMs));
    }
    return rows;
  }

  return {
    lookup: (scope) => activeEndpoints({ tenantId: scope.tenantId, environment: scope.environment, state: 'active' }),
    async write(trx, scope, events: StoredEvent[], endpoints: Target[], atMs: number): Promise<void> {
      const rows = deliveryRows(scope, events, endpoints, atMs);
      if (rows.length > 0) await trx.insertInto('webhook_deliveries').values(rows).execute();
    },
    async planned(scope) {
      const key = `${scope.tenantId}\u0000${scope.environment}`;
      const now = performance.now();
      let entry = known.get(key);
      if (entry === undefined || now - entry.readAt > PLANNED_TARGETS_MAX_AGE_MS) {
        const { rows } = await readDb.executeQuery(activeEndpoints({ tenantId: scope.tenantId, environment: scope.environment, state: 'active' }));
        const targets = [...rows].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
        if (known.size >= PLANNED_SCOPES_KEPT) known.clear();
        entry = { targets, guardValue: guardValueOf(targets), readAt: now };
        known.set(key, entry);
      }
      const { targets, guardValue } = entry;
      return {
        targets,
        guard: { sql: guardSql, parameters: [scope.tenantId, scope.environment], expect: { kind: 'equals', value: guardValue, failure: RUN_AS_FUNCTION } },
        deliveries(events, atMs) {
          const rows = targets.length === 0 ? [] : deliveryRows(scope, events, targets, atMs);
          return rows.length === 0 ? null : plannedStatement(insertDeliveries(rows));
        },
        forget: () => {
          if (known.get(key) === entry) known.delete(key);
        },
      };
    },
  };
}
