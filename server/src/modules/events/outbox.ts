/**
 * The event outbox. A module that changes state appends its events here through the SAME
 * transaction as the change, so an event exists exactly when its change does: no event for a
 * rolled-back decision, no committed decision without its events. The webhook worker reads the
 * outbox and delivers (at least once); nothing here talks to the network.
 *
 * Fan-out: when a `fanOut` hook is given (the webhooks module's, wired in app/context.ts), its
 * lookup (the scope's active endpoints) is read in the same transaction right after the events are
 * inserted, and it writes one webhook delivery per subscribed active endpoint. Nothing is cached:
 * an endpoint committed before this transaction looked gets the event, so a just-created endpoint
 * never misses one.
 *
 * Round trips: the caller's own inserts (`with`), the events insert and the fan-out's lookup go to
 * the database as one statement on PostgreSQL (db/statements.ts `runTogether`), one after another
 * on SQLite; the deliveries are a second statement only when some endpoint subscribes.
 *
 * Planned (`plan`, SQLite's writer thread, ADR 0030, and PostgreSQL's pipelined batches, ADR
 * 0037): the same statements as data, made before the transaction: the caller's writes, the
 * events insert, the fan-out's guard in place of its lookup, and the deliveries for the endpoints
 * the guard checks (webhooks/fan-out.ts). On PostgreSQL all but the deliveries are one statement,
 * as `append` sends them.
 */
import type { CompiledQuery, Kysely } from 'kysely';
import type { Environment } from '../../config/config.js';
import type { DialectName } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import { combinedStatement, insertStatement, runTogether } from '../../db/statements.js';
import { timeOrderedUuids, type Clock, type Random } from '../../lib/clock.js';
import { plannedStatement, type PlannedStatement } from '../../db/sqlite-writer-thread.js';
import type { PlannedFanOut } from '../webhooks/fan-out.js';

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

type Scope = { tenantId: string; environment: Environment };

/** What the fan-out does with freshly stored events, in the transaction that stores them (webhooks/fan-out.ts). */
export interface EventFanOut<Target = unknown> {
  /** The read the fan-out needs (the scope's active endpoints), sent right after the events insert. */
  lookup(scope: Scope): CompiledQuery<Target>;
  /** Writes the deliveries of `events` for the rows `lookup` returned (none: nothing to write). */
  write(trx: Kysely<Database>, scope: Scope, events: StoredEvent[], targets: Target[], atMs: number): Promise<void>;
}

export interface AppendOptions {
  /** false: store only (a `webhook.test` event goes to one endpoint, which its sender queues itself). */
  fanOut?: boolean;
  /**
   * The caller's own writes of the same change (statements whose results it does not read), sent
   * before the events insert and with it: one statement on PostgreSQL, in this order on SQLite.
   */
  with?: readonly CompiledQuery[];
}

/** A plan of `append`: its statements, and what `outdated` to call if the fan-out's guard fails. */
export interface PlannedAppend {
  statements: PlannedStatement[];
  outdated?: () => void;
}

export function createOutbox(deps: {
  db: Kysely<Database>;
  dialect: DialectName;
  clock: Clock;
  random: Random;
  fanOut?: EventFanOut & { planned?(scope: Scope): Promise<PlannedFanOut> };
  /** Whether a plan is wanted now (the transaction runner's `plansWanted`); none: never. */
  plansWanted?: () => boolean;
}) {
  const insertEvents = insertStatement(deps.db, 'events');
  const eventId = timeOrderedUuids(deps.random);

  function eventRows(scope: Scope, events: NewEvent[], now: number) {
    const rows = events.map((e) => ({
      id: eventId(now),
      tenant_id: scope.tenantId,
      environment: scope.environment,
      type: e.type,
      subject_id: e.subjectId,
      data_json: JSON.stringify(e.data),
      created_at: now,
    }));
    const stored = rows.map((r, i) => ({ id: r.id, type: events[i]!.type, created: Math.floor(now / 1000), data: events[i]!.data }));
    return { rows, stored };
  }

  /** Append events in one statement (with the caller's writes and the fan-out's lookup), inside the caller's transaction. */
  async function append(trx: Kysely<Database>, scope: Scope, events: NewEvent[], options: AppendOptions = {}): Promise<StoredEvent[]> {
    const writes = options.with ?? [];
    if (events.length === 0) {
      for (const write of writes) await trx.executeQuery(write);
      return [];
    }
    const now = deps.clock.now().getTime();
    const { rows, stored } = eventRows(scope, events, now);
    const insert = insertEvents(rows);
    const fanOut = options.fanOut === false ? undefined : deps.fanOut;
    if (!fanOut) {
      await runTogether(trx, deps.dialect, writes, insert);
      return stored;
    }
    const { rows: targets } = await runTogether(trx, deps.dialect, [...writes, insert], fanOut.lookup(scope));
    if (targets.length > 0) await fanOut.write(trx, scope, stored, targets, now);
    return stored;
  }

  /**
   * `append` as a plan (see the opening comment) for SQLite's writer thread or PostgreSQL's
   * pipelined batches (ADR 0037), or null when no plan is wanted now (SQLite without its writer
   * thread, or with an event loop that has time to spare, where the unit runs as its function and
   * a plan would be built for nothing): the caller then only has its function.
   */
  async function plan(scope: Scope, events: NewEvent[], options: AppendOptions = {}): Promise<PlannedAppend | null> {
    if (deps.plansWanted?.() !== true) return null;
    const statements: PlannedStatement[] = (options.with ?? []).map((write) => plannedStatement(write));
    if (events.length === 0) return { statements };
    const fanOut = options.fanOut === false ? undefined : deps.fanOut;
    if (fanOut !== undefined && fanOut.planned === undefined) return null;
    // Read before the events are stamped: the stamp is the time the plan was made, as close to its
    // transaction as `append`'s is.
    const planned = fanOut ? await fanOut.planned!(scope) : null;
    const now = deps.clock.now().getTime();
    const { rows, stored } = eventRows(scope, events, now);
    if (deps.dialect === 'postgres') {
      // One statement, as `append` sends it: the writes and the events as CTEs, then the guard
      // (whose value the plan expects) where `append` has the fan-out's lookup.
      const writes = options.with ?? [];
      if (planned === null) return { statements: [plannedStatement(combinedStatement(writes, insertEvents(rows)))] };
      const together = [plannedStatement(combinedStatement([...writes, insertEvents(rows)], planned.guard), planned.guard.expect)];
      const deliveries = planned.deliveries(stored, now);
      if (deliveries !== null) together.push(deliveries);
      return { statements: together, outdated: planned.forget };
    }
    statements.push(plannedStatement(insertEvents(rows)));
    if (planned === null) return { statements };
    statements.push(planned.guard);
    const deliveries = planned.deliveries(stored, now);
    if (deliveries !== null) statements.push(deliveries);
    return { statements, outdated: planned.forget };
  }

  return { append, plan };
}

export type Outbox = ReturnType<typeof createOutbox>;
