/**
 * Webhook endpoints and their deliveries: the service layer the portal and `cds webhooks` use.
 *
 * Use cases, in the order a lender meets them:
 *   createEndpoint      url (https, <= 2,048 chars, no user-info), description, event types or `*`;
 *                       at most 16 per tenant and environment; returns the `whsec_` secret ONCE
 *                       (stored sealed with AES-256-GCM, bound to the endpoint id)
 *   updateEndpoint      url, description, event types (the secret is kept), if the endpoint is
 *                       still at the version the editor loaded (else 409)
 *   sendTestEvent       a `webhook.test` event queued for this endpoint only, sent within seconds
 *   rotateSecret        a new secret signs at once; the old one adds a second `v1=` for the
 *                       overlap chosen (default 24 h, 0 allowed, at most 7 days)
 *   reenableEndpoint    an auto-disabled endpoint becomes active; its kept deliveries resume
 *   resendDelivery      one delivery again, from attempt 1 (or "now", if it is still retrying)
 *   resendFailedSince   every failed delivery since a time again, plus the events the endpoint
 *                       missed while disabled (no delivery was created for them)
 *   deleteEndpoint      soft delete; pending deliveries are cancelled, history stays until purged
 *   listDeliveries, listAttempts, listAttemptsOfDeliveries: the delivery history (30 days;
 *                       purgeHistory removes older), per endpoint, filtered by state, event id
 *                       or event type; a decision's deliveries' attempts in one read
 * Scope is always tenant + environment: an id of another tenant or environment is "not found".
 */
import { sql, type CompiledQuery, type Kysely, type Selectable } from 'kysely';
import type { Environment } from '../../config/config.js';
import type { DialectName } from '../../db/database.js';
import type { Database, WebhookAttemptsTable, WebhookDeliveriesTable, WebhookEndpointsTable } from '../../db/schema.js';
import { purgeInBatches } from '../../db/batched-purge.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { editVersionMessage } from '../../http/errors/messages.js';
import { timeOrderedUuids, type Clock, type Random } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/crypto.js';
import { EVENT_TYPES, type Outbox } from '../events/outbox.js';
import { checkEndpointUrl } from './address-policy.js';
import { ALL_EVENTS, newDeliveryRow, parseEventTypes, subscribesTo } from './fan-out.js';
import { generateSigningSecret, secretAssociatedData } from './signing.js';

export const MAX_ENDPOINTS_PER_ENVIRONMENT = 16;
export const HISTORY_RETENTION_MS = 30 * 24 * 3600_000;
export const DEFAULT_ROTATION_OVERLAP_MS = 24 * 3600_000;
export const MAX_ROTATION_OVERLAP_MS = 7 * 24 * 3600_000;
const MAX_DESCRIPTION_LENGTH = 500;
const INSERT_BATCH = 500;

export interface DeliveryListOptions {
  state?: WebhookDeliveriesTable['state'];
  limit?: number;
  before?: Date;
  offset?: number;
  eventId?: string;
  eventType?: string;
}

/**
 * The portal's list of an endpoint's deliveries, newest first (created_at, then id), as one query.
 *
 * On SQLite the index each filter reads is named (`indexed by`), because SQLite keeps no
 * statistics and its planner cannot tell a rare state from a common one; the list runs on the
 * event loop there, so a slow page holds every API request behind it (migration 0017):
 * - every state, `delivered`, an event type, a time: 0017's `(endpoint_id, created_at, id)`,
 *   read newest first and stopped after the page (no sort, whatever the history kept);
 * - `pending`: 0016's partial index of the queue (`state = 'pending'` is spelled as a literal so
 *   SQLite may use it), then a sort of those rows, which are few unless a receiver is long down;
 * - `failed`, `cancelled`: 0003's `(endpoint_id, state, next_attempt_at)`, then a sort: rare states
 *   whose rows may all be old, where a newest-first walk would step over the whole history;
 * - one event: the unique `(endpoint_id, event_id)`, one row (the planner's own choice).
 * PostgreSQL plans from its statistics and has no 0017 index (see the migration for why).
 */
export function deliveryListQuery(
  db: Kysely<Database>,
  dialect: DialectName,
  endpointId: string,
  options: DeliveryListOptions = {},
): CompiledQuery<Selectable<WebhookDeliveriesTable>> {
  const limit = Math.min(Math.max(options.limit ?? 50, 1), 500);
  const offset = Math.max(options.offset ?? 0, 0);
  const conditions = [sql`endpoint_id = ${endpointId}`];
  if (options.state) conditions.push(options.state === 'pending' ? sql`state = 'pending'` : sql`state = ${options.state}`);
  // Per event (the portal's "history of one event"): by its id, or every event of a type.
  if (options.eventId) conditions.push(sql`event_id = ${options.eventId}`);
  if (options.eventType) conditions.push(sql`event_type = ${options.eventType}`);
  if (options.before) conditions.push(sql`created_at < ${options.before.getTime()}`);
  let index: string | null = null;
  if (dialect === 'sqlite' && !options.eventId) {
    index =
      options.state === 'pending'
        ? 'webhook_deliveries_pending'
        : options.state === 'failed' || options.state === 'cancelled'
          ? 'webhook_deliveries_endpoint_due'
          : 'webhook_deliveries_endpoint_created';
  }
  const from = index === null ? sql`webhook_deliveries` : sql`webhook_deliveries indexed by ${sql.id(index)}`;
  return sql<Selectable<WebhookDeliveriesTable>>`select * from ${from} where ${sql.join(conditions, sql` and `)}
    order by created_at desc, id desc limit ${limit} offset ${offset}`.compile(db);
}

export interface WebhookScope {
  tenantId: string;
  environment: Environment;
}

export interface WebhookEndpointView {
  id: string;
  tenantId: string;
  environment: Environment;
  url: string;
  description: string | null;
  /** Subscribed types, or ['*'] for all present and future types. */
  events: string[];
  state: 'active' | 'disabled';
  disabledReason: string | null;
  disabledAt: Date | null;
  consecutiveFailures: number;
  /** While a rotation overlap lasts: when the old secret stops signing. */
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  /** Counts the edits of url, description and events (migration 0024): an edit sends the one it loaded. */
  version: number;
}

export interface WebhookDeliveryView {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  state: WebhookDeliveriesTable['state'];
  attempts: number;
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  lastResponseStatus: number | null;
  lastErrorKind: string | null;
  finishedAt: Date | null;
  createdAt: Date;
}

export interface WebhookAttemptView {
  id: string;
  deliveryId: string;
  attempt: number;
  requestHeaders: Record<string, string>;
  requestBody: string;
  responseStatus: number | null;
  responseBody: string | null;
  durationMs: number;
  errorKind: string | null;
  errorDetail: string | null;
  createdAt: Date;
}

export interface EndpointInput {
  url: string;
  description?: string | null;
  /** Event types, or '*' (the default) for all. */
  events?: readonly string[] | '*';
}

export interface WebhooksDeps {
  db: Kysely<Database>;
  readDb: Kysely<Database>;
  dialect: DialectName;
  clock: Clock;
  random: Random;
  secretBox: SecretBox;
  outbox: Outbox;
  allowPrivateNetworks: boolean;
}

/** `*` alone, or known event types without duplicates. Throws 400 naming the problem. */
export function normalizeEventTypes(input: readonly string[] | '*' | undefined): string[] {
  if (input === undefined || input === ALL_EVENTS) return [ALL_EVENTS];
  const types = [...new Set(input.map((t) => t.trim()).filter((t) => t !== ''))];
  if (types.length === 0) throw new ApiError('invalid_request', 'events must list at least one event type, or be "*" for all.');
  if (types.includes(ALL_EVENTS)) {
    if (types.length > 1) throw new ApiError('invalid_request', 'events is either "*" alone or a list of event types.');
    return [ALL_EVENTS];
  }
  const unknown = types.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length > 0) throw new ApiError('invalid_request', `events: unknown event type ${unknown.map((t) => JSON.stringify(t)).join(', ')}; known types: ${EVENT_TYPES.join(', ')}.`);
  return types;
}

export function createWebhooksService(deps: WebhooksDeps) {
  const { db, clock, random } = deps;
  const deliveryId = timeOrderedUuids(random);
  const postgres = deps.dialect === 'postgres';

  function checkUrl(raw: string): string {
    const check = checkEndpointUrl(raw, { allowPrivateNetworks: deps.allowPrivateNetworks });
    if (!check.ok) throw new ApiError('invalid_request', `${check.problem}.`);
    return check.url;
  }

  function checkDescription(raw: string | null | undefined): string | null {
    if (raw === undefined || raw === null) return null;
    const d = raw.trim();
    if (d.length > MAX_DESCRIPTION_LENGTH) throw new ApiError('invalid_request', `description must be at most ${MAX_DESCRIPTION_LENGTH} characters.`);
    return d === '' ? null : d;
  }

  async function createEndpoint(scope: WebhookScope, input: EndpointInput): Promise<{ endpoint: WebhookEndpointView; secret: string }> {
    const url = checkUrl(input.url);
    const description = checkDescription(input.description);
    const events = normalizeEventTypes(input.events);
    return db.transaction().execute(async (trx) => {
      // Serialise creations per tenant and environment so two at once cannot pass the limit together.
      if (postgres) await sql`select pg_advisory_xact_lock(hashtext(${`cds.webhooks.endpoints.${scope.tenantId}.${scope.environment}`}))`.execute(trx);
      const { n } = await trx
        .selectFrom('webhook_endpoints')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('tenant_id', '=', scope.tenantId)
        .where('environment', '=', scope.environment)
        .where('state', '<>', 'deleted')
        .executeTakeFirstOrThrow();
      if (Number(n) >= MAX_ENDPOINTS_PER_ENVIRONMENT) {
        throw new ApiError('unprocessable_entity', `At most ${MAX_ENDPOINTS_PER_ENVIRONMENT} webhook endpoints per environment; delete one first.`);
      }
      const id = random.uuid();
      const secret = generateSigningSecret(random);
      const now = clock.now().getTime();
      const row: WebhookEndpointsTable = {
        id,
        tenant_id: scope.tenantId,
        environment: scope.environment,
        url,
        description,
        event_types_json: JSON.stringify(events),
        state: 'active',
        disabled_reason: null,
        disabled_at: null,
        deleted_at: null,
        secret_sealed: deps.secretBox.seal(secret, secretAssociatedData(id)),
        previous_secret_sealed: null,
        previous_secret_expires_at: null,
        consecutive_failures: 0,
        created_at: now,
        updated_at: now,
        version: 1,
        updated_by: null,
        edited_at: null,
      };
      await trx.insertInto('webhook_endpoints').values(row).execute();
      return { endpoint: endpointView(row), secret };
    });
  }

  async function findEndpoint(executor: Kysely<Database>, scope: WebhookScope, id: string, forUpdate = false): Promise<WebhookEndpointsTable> {
    let q = executor
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('id', '=', id)
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .where('state', '<>', 'deleted');
    if (forUpdate && postgres) q = q.forUpdate();
    const row = await q.executeTakeFirst();
    if (!row) throw new ApiError('not_found', 'No such webhook endpoint.');
    return row;
  }

  async function getEndpoint(scope: WebhookScope, id: string): Promise<WebhookEndpointView> {
    return endpointView(await findEndpoint(deps.readDb, scope, id));
  }

  async function listEndpoints(scope: WebhookScope): Promise<WebhookEndpointView[]> {
    const rows = await deps.readDb
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .where('state', '<>', 'deleted')
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(endpointView);
  }

  /**
   * Changes what the edit form shows (url, description, events), if the endpoint is still at
   * `expectedVersion` (the version the editor loaded); else 409 `endpoint_version_conflict` and
   * nothing is written. Every accepted edit bumps the version, even one that changes no value: the
   * editor saved what it showed, over what it loaded.
   */
  async function updateEndpoint(scope: WebhookScope, id: string, patch: Partial<EndpointInput>, expectedVersion: number, editorId: string | null = null): Promise<WebhookEndpointView> {
    const changes: Partial<WebhookEndpointsTable> = {};
    if (patch.url !== undefined) changes.url = checkUrl(patch.url);
    if (patch.description !== undefined) changes.description = checkDescription(patch.description);
    if (patch.events !== undefined) changes.event_types_json = JSON.stringify(normalizeEventTypes(patch.events));
    return db.transaction().execute(async (trx) => {
      const now = clock.now().getTime();
      // One conditional statement, not a read and then a write: of two saves from the same version
      // the second finds no row at that version (on PostgreSQL it waits for the first's row lock and
      // then reads the committed row), so both cannot win. It returns the row as written; only an
      // edit that matched nothing reads, to tell "not here" from "moved on".
      const updated = await trx
        .updateTable('webhook_endpoints')
        .set({ ...changes, updated_at: now, version: expectedVersion + 1, updated_by: editorId, edited_at: now })
        .where('id', '=', id)
        .where('tenant_id', '=', scope.tenantId)
        .where('environment', '=', scope.environment)
        .where('state', '<>', 'deleted')
        .where('version', '=', expectedVersion)
        .returningAll()
        .executeTakeFirst();
      if (!updated) throw await endpointConflict(trx, scope, id, expectedVersion);
      return endpointView(updated);
    });
  }

  /** Why an edit matched no row: 404 when there is no such endpoint here, else 409 (it moved on since it was loaded), naming who edited it last and when. */
  async function endpointConflict(trx: Kysely<Database>, scope: WebhookScope, id: string, expectedVersion: number): Promise<ApiError> {
    const { version, updated_by: editorId, edited_at: editedAt } = await findEndpoint(trx, scope, id);
    const editor = editorId === null ? undefined : await trx.selectFrom('users').select('name').where('id', '=', editorId).executeTakeFirst();
    return new ApiError('endpoint_version_conflict', editVersionMessage('This webhook endpoint', 'its current settings', version, expectedVersion, editor?.name ?? null, editedAt));
  }

  async function deleteEndpoint(scope: WebhookScope, id: string): Promise<void> {
    await db.transaction().execute(async (trx) => {
      // No row lock on the endpoint before touching its deliveries: the worker locks a delivery and
      // then its endpoint, so taking them the other way round here could deadlock with it.
      await findEndpoint(trx, scope, id);
      const now = clock.now().getTime();
      // Clearing the lease token too: a send in flight then cannot write its result over the cancellation.
      await trx
        .updateTable('webhook_deliveries')
        .set({ state: 'cancelled', next_attempt_at: null, leased_until: null, lease_token: null, finished_at: now, updated_at: now })
        .where('endpoint_id', '=', id)
        .where('state', '=', 'pending')
        .execute();
      await trx.updateTable('webhook_endpoints').set({ state: 'deleted', deleted_at: now, updated_at: now }).where('id', '=', id).execute();
    });
  }

  async function rotateSecret(scope: WebhookScope, id: string, options: { overlapMs?: number } = {}): Promise<{ secret: string; previousSecretExpiresAt: Date | null }> {
    const overlapMs = options.overlapMs ?? DEFAULT_ROTATION_OVERLAP_MS;
    if (!Number.isInteger(overlapMs) || overlapMs < 0 || overlapMs > MAX_ROTATION_OVERLAP_MS) {
      throw new ApiError('invalid_request', `overlap_hours must be a whole number from 0 to ${MAX_ROTATION_OVERLAP_MS / 3_600_000} (7 days).`);
    }
    return db.transaction().execute(async (trx) => {
      const row = await findEndpoint(trx, scope, id, true);
      const now = clock.now().getTime();
      const secret = generateSigningSecret(random);
      // The current secret's sealed text is reused as-is: it is bound to the same endpoint id.
      const previousSecretExpiresAt = overlapMs > 0 ? now + overlapMs : null;
      await trx
        .updateTable('webhook_endpoints')
        .set({
          secret_sealed: deps.secretBox.seal(secret, secretAssociatedData(id)),
          previous_secret_sealed: overlapMs > 0 ? row.secret_sealed : null,
          previous_secret_expires_at: previousSecretExpiresAt,
          updated_at: now,
        })
        .where('id', '=', id)
        .execute();
      return { secret, previousSecretExpiresAt: previousSecretExpiresAt === null ? null : new Date(previousSecretExpiresAt) };
    });
  }

  async function reenableEndpoint(scope: WebhookScope, id: string): Promise<WebhookEndpointView> {
    return db.transaction().execute(async (trx) => {
      const row = await findEndpoint(trx, scope, id, true);
      if (row.state === 'active') return endpointView(row);
      const now = clock.now().getTime();
      const changes = { state: 'active' as const, disabled_reason: null, disabled_at: null, consecutive_failures: 0, updated_at: now };
      await trx.updateTable('webhook_endpoints').set(changes).where('id', '=', id).execute();
      return endpointView({ ...row, ...changes });
    });
  }

  function requireActive(row: WebhookEndpointsTable): void {
    if (row.state !== 'active') throw new ApiError('unprocessable_entity', 'This webhook endpoint is disabled; re-enable it first.');
  }

  async function sendTestEvent(scope: WebhookScope, id: string): Promise<{ eventId: string; deliveryId: string }> {
    return db.transaction().execute(async (trx) => {
      const row = await findEndpoint(trx, scope, id);
      requireActive(row);
      // Stored without fan-out: the test goes to this endpoint only, subscribed to it or not.
      const [event] = await deps.outbox.append(
        trx,
        scope,
        [{ type: 'webhook.test', subjectId: id, data: { endpoint_id: id, message: 'This is a test event sent from the lender portal.' } }],
        { fanOut: false },
      );
      const delivery = newDeliveryRow(deliveryId, scope, id, event!, clock.now().getTime());
      await trx.insertInto('webhook_deliveries').values(delivery).execute();
      return { eventId: event!.id, deliveryId: delivery.id };
    });
  }

  async function resendDelivery(scope: WebhookScope, deliveryId: string): Promise<WebhookDeliveryView> {
    return db.transaction().execute(async (trx) => {
      let q = trx
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('id', '=', deliveryId)
        .where('tenant_id', '=', scope.tenantId)
        .where('environment', '=', scope.environment);
      if (postgres) q = q.forUpdate();
      const delivery = await q.executeTakeFirst();
      if (!delivery) throw new ApiError('not_found', 'No such webhook delivery.');
      const endpoint = await findEndpoint(trx, scope, delivery.endpoint_id);
      requireActive(endpoint);
      const now = clock.now().getTime();
      let changes: Partial<WebhookDeliveriesTable>;
      if (delivery.state === 'pending') {
        // Still retrying: bring the next attempt forward, unless one is being sent right now.
        if (delivery.leased_until !== null && delivery.leased_until > now) return deliveryView(delivery);
        changes = { next_attempt_at: now, updated_at: now };
      } else {
        changes = { state: 'pending', attempts: 0, next_attempt_at: now, finished_at: null, leased_until: null, lease_token: null, updated_at: now };
      }
      await trx.updateTable('webhook_deliveries').set(changes).where('id', '=', deliveryId).execute();
      return deliveryView({ ...delivery, ...changes });
    });
  }

  async function resendFailedSince(scope: WebhookScope, endpointId: string, since: Date): Promise<{ requeued: number; recovered: number }> {
    const now = clock.now().getTime();
    if (Number.isNaN(since.getTime()) || since.getTime() < now - HISTORY_RETENTION_MS) {
      throw new ApiError('invalid_request', 'since must be a time within the last 30 days (the delivery history kept).');
    }
    return db.transaction().execute(async (trx) => {
      const endpoint = await findEndpoint(trx, scope, endpointId); // unlocked, as in deleteEndpoint
      requireActive(endpoint);
      const requeued = await trx
        .updateTable('webhook_deliveries')
        .set({ state: 'pending', attempts: 0, next_attempt_at: now, finished_at: null, leased_until: null, lease_token: null, updated_at: now })
        .where('endpoint_id', '=', endpointId)
        .where('state', '=', 'failed')
        // Unary plus: SQLite (no statistics) would otherwise read every delivery since then
        // through 0017's (endpoint_id, created_at, id); the failed ones, rare, come from 0003's index.
        .where(sql<number>`+created_at`, '>=', since.getTime())
        .executeTakeFirst();
      // Events the endpoint missed while it was disabled have no delivery row at all: create them.
      const missed = await trx
        .selectFrom('events as ev')
        .select(['ev.id', 'ev.type'])
        .where('ev.tenant_id', '=', scope.tenantId)
        .where('ev.environment', '=', scope.environment)
        .where('ev.created_at', '>=', Math.max(since.getTime(), endpoint.created_at))
        .where('ev.type', '<>', 'webhook.test')
        .where((eb) => eb.not(eb.exists(eb.selectFrom('webhook_deliveries as d').select('d.id').whereRef('d.event_id', '=', 'ev.id').where('d.endpoint_id', '=', endpointId))))
        .orderBy('ev.created_at')
        .execute();
      const types = parseEventTypes(endpoint.event_types_json);
      const rows = missed.filter((e) => subscribesTo(types, e.type)).map((e) => newDeliveryRow(deliveryId, scope, endpointId, e, now));
      for (let i = 0; i < rows.length; i += INSERT_BATCH) await trx.insertInto('webhook_deliveries').values(rows.slice(i, i + INSERT_BATCH)).execute();
      return { requeued: Number(requeued.numUpdatedRows), recovered: rows.length };
    });
  }

  async function listDeliveries(scope: WebhookScope, endpointId: string, options: DeliveryListOptions = {}): Promise<WebhookDeliveryView[]> {
    await findEndpoint(deps.readDb, scope, endpointId);
    const { rows } = await deps.readDb.executeQuery(deliveryListQuery(deps.readDb, deps.dialect, endpointId, options));
    return rows.map(deliveryView);
  }

  /**
   * Every delivery of the given events in this scope, whichever endpoint (deleted ones included:
   * history stays readable), oldest first: the portal's "what did this decision cause".
   */
  async function listDeliveriesOfEvents(scope: WebhookScope, eventIds: readonly string[]): Promise<WebhookDeliveryView[]> {
    if (eventIds.length === 0) return [];
    // The deliveries to the scope's endpoints (a delivery's scope is its endpoint's), by the unique
    // (endpoint_id, event_id) index: there is none on event_id alone (migration 0026), and a scope
    // has few endpoints. A condition on the delivery's own tenant_id would let SQLite's planner
    // walk the scope's whole history by (tenant_id, environment, created_at) instead.
    const rows = await deps.readDb
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('endpoint_id', 'in', (eb) =>
        eb.selectFrom('webhook_endpoints').select('id').where('tenant_id', '=', scope.tenantId).where('environment', '=', scope.environment),
      )
      .where('event_id', 'in', [...eventIds].slice(0, 500))
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(deliveryView);
  }

  async function listAttempts(scope: WebhookScope, deliveryId: string): Promise<WebhookAttemptView[]> {
    const delivery = await deps.readDb
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('id', '=', deliveryId)
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .executeTakeFirst();
    if (!delivery) throw new ApiError('not_found', 'No such webhook delivery.');
    const rows = await deps.readDb.selectFrom('webhook_attempts').selectAll().where('delivery_id', '=', deliveryId).orderBy('created_at').orderBy('attempt').execute();
    return rows.map(attemptView);
  }

  /**
   * The attempts of several deliveries of this scope in one read (a decision's detail shows every
   * delivery with its attempts: one query, not two per delivery), by delivery id, each oldest
   * first. Deliveries of another scope, or unknown, have none.
   */
  async function listAttemptsOfDeliveries(scope: WebhookScope, deliveryIds: readonly string[]): Promise<Map<string, WebhookAttemptView[]>> {
    const byDelivery = new Map<string, WebhookAttemptView[]>();
    if (deliveryIds.length === 0) return byDelivery;
    const rows = await deps.readDb
      .selectFrom('webhook_attempts as a')
      .innerJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
      .selectAll('a')
      .where('a.delivery_id', 'in', [...deliveryIds])
      .where('d.tenant_id', '=', scope.tenantId)
      .where('d.environment', '=', scope.environment)
      .orderBy('a.created_at')
      .orderBy('a.attempt')
      .execute();
    for (const row of rows) {
      const list = byDelivery.get(row.delivery_id) ?? [];
      list.push(attemptView(row));
      byDelivery.set(row.delivery_id, list);
    }
    return byDelivery;
  }

  /**
   * Retention: attempts older than 30 days; finished deliveries that finished more than 30 days
   * ago; deleted endpoints once nothing of theirs is left; the in-flight counts of stopped workers.
   * Pending deliveries are never purged (a disabled endpoint's kept deliveries wait for it), except
   * those of deleted endpoints, which are cancelled first. Deletes go in batches with a turn of the
   * event loop between them (db/batched-purge.ts), so no statement holds the writer for long.
   */
  async function purgeHistory(): Promise<{ attempts: number; deliveries: number; endpoints: number }> {
    const now = clock.now().getTime();
    const cutoff = now - HISTORY_RETENTION_MS;
    const attempts = await purgeInBatches((limit) =>
      db.deleteFrom('webhook_attempts').where('id', 'in', db.selectFrom('webhook_attempts').select('id').where('created_at', '<', cutoff).limit(limit)).executeTakeFirst(),
    );
    await db
      .updateTable('webhook_deliveries')
      .set({ state: 'cancelled', next_attempt_at: null, leased_until: null, lease_token: null, finished_at: now, updated_at: now })
      .where('state', '=', 'pending')
      .where('endpoint_id', 'in', (eb) => eb.selectFrom('webhook_endpoints').select('id').where('state', '=', 'deleted'))
      .execute();
    const deliveries = await purgeInBatches((limit) =>
      db
        .deleteFrom('webhook_deliveries')
        .where('id', 'in', db.selectFrom('webhook_deliveries').select('id').where('state', 'in', ['delivered', 'failed', 'cancelled']).where('finished_at', '<', cutoff).limit(limit))
        .executeTakeFirst(),
    );
    const endpoints = await db
      .deleteFrom('webhook_endpoints')
      .where('state', '=', 'deleted')
      .where('deleted_at', '<', cutoff)
      .where((eb) => eb.not(eb.exists(eb.selectFrom('webhook_deliveries as d').select('d.id').whereRef('d.endpoint_id', '=', 'webhook_endpoints.id'))))
      .executeTakeFirst();
    // The in-flight counts of workers that stopped (each process writes under a new id, ADR 0021):
    // expired long ago, they count for nothing and are only left over.
    await db.deleteFrom('webhook_in_flight').where('held_until', '<', cutoff).execute();
    return { attempts, deliveries, endpoints: Number(endpoints.numDeletedRows) };
  }

  return {
    createEndpoint,
    getEndpoint,
    listEndpoints,
    updateEndpoint,
    deleteEndpoint,
    rotateSecret,
    reenableEndpoint,
    sendTestEvent,
    resendDelivery,
    resendFailedSince,
    listDeliveries,
    listDeliveriesOfEvents,
    listAttempts,
    listAttemptsOfDeliveries,
    purgeHistory,
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;

function date(ms: number | null): Date | null {
  return ms === null ? null : new Date(ms);
}

function endpointView(row: WebhookEndpointsTable): WebhookEndpointView {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    environment: row.environment,
    url: row.url,
    description: row.description,
    events: parseEventTypes(row.event_types_json),
    state: row.state === 'disabled' ? 'disabled' : 'active',
    disabledReason: row.disabled_reason,
    disabledAt: date(row.disabled_at),
    consecutiveFailures: row.consecutive_failures,
    previousSecretExpiresAt: row.previous_secret_sealed !== null ? date(row.previous_secret_expires_at) : null,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    version: row.version,
  };
}

function deliveryView(row: WebhookDeliveriesTable): WebhookDeliveryView {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    state: row.state,
    attempts: row.attempts,
    nextAttemptAt: date(row.next_attempt_at),
    lastAttemptAt: date(row.last_attempt_at),
    lastResponseStatus: row.last_response_status,
    lastErrorKind: row.last_error_kind,
    finishedAt: date(row.finished_at),
    createdAt: new Date(row.created_at),
  };
}

function attemptView(row: WebhookAttemptsTable): WebhookAttemptView {
  return {
    id: row.id,
    deliveryId: row.delivery_id,
    attempt: row.attempt,
    requestHeaders: JSON.parse(row.request_headers_json) as Record<string, string>,
    requestBody: row.request_body,
    responseStatus: row.response_status,
    responseBody: row.response_body,
    durationMs: row.duration_ms,
    errorKind: row.error_kind,
    errorDetail: row.error_detail,
    createdAt: new Date(row.created_at),
  };
}
