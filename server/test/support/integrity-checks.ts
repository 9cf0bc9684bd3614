/**
 * "Nothing half-written", checked with SQL through each dialect's own driver (never the
 * application's code, which is what is under test): every decision has its audit record and its
 * events, every event of a decision has exactly one delivery per subscribed endpoint, no row points
 * at a missing parent, no idempotency record is left claimed without its stored answer, every
 * consumer made by an application has that application, and every stored 200 names a decision
 * that exists. Crash and outage tests call `halfWrittenState()` after the dust settles and expect
 * every list in it to be empty.
 */
import Sqlite from 'better-sqlite3';
import path from 'node:path';
import pg from 'pg';
import type { TestDatabase } from './databases.js';
import { createSecretBox } from '../../src/lib/crypto.js';
import { TEST_ENCRYPTION_KEY } from './server-process.js';

export type Row = Record<string, unknown>;

/** Run a read-only query on the test database with the dialect's own driver. */
export async function queryRows(db: TestDatabase, text: string): Promise<Row[]> {
  if (db.databaseUrl === null) {
    const sqlite = new Sqlite(path.join(db.dataDir, 'cds.sqlite'));
    try {
      return sqlite.prepare(text).all() as Row[];
    } finally {
      sqlite.close();
    }
  }
  const client = new pg.Client({ connectionString: db.databaseUrl });
  await client.connect();
  try {
    return (await client.query(text)).rows as Row[];
  } finally {
    await client.end();
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function uuid(value: string): string {
  // The checks interpolate ids into SQL text; only ever a UUID.
  if (!UUID.test(value)) throw new Error(`not a UUID: ${value}`);
  return value;
}

/** Each list names what is half-written or orphaned; all empty means whole. */
export interface HalfWrittenReport {
  decisionsWithoutAudit: string[];
  auditsWithoutDecision: string[];
  /** Decisions whose events do not match their state (opening events once each; a complete one also scored and finalized). */
  decisionsWithWrongEvents: Array<{ id: string; status: string; events: string }>;
  eventsWithoutDecision: string[];
  /** Events of a decision with other than exactly one delivery for each endpoint given. */
  eventsWithoutOneDelivery: Array<{ eventId: string; endpointId: string; deliveries: number }>;
  deliveriesWithoutEvent: string[];
  attemptsWithoutDelivery: string[];
  /** Idempotency records claimed but with no stored answer (they would block or confuse a retry). */
  unfinishedIdempotencyKeys: string[];
  /** Stored 200 answers naming a decision that does not exist. */
  storedAnswersWithoutDecision: string[];
  /** Consumers created by an application (not seeded) that has no decision. */
  consumersWithoutDecision: string[];
  /** SQLite only: integrity_check and foreign_key_check findings. */
  sqliteProblems: string[];
}

/**
 * Inspect the whole database. `endpointIds`: webhook endpoints subscribed to every event type of
 * the decisions' tenant and environment, created before the first decision (each must have one
 * delivery per decision event).
 */
export async function halfWrittenState(db: TestDatabase, options: { endpointIds?: string[] } = {}): Promise<HalfWrittenReport> {
  const ids = (rows: Row[], column = 'id') => rows.map((r) => String(r[column]));
  const decisionEventTypes = `('application.created', 'decision.created', 'score.completed', 'score.errored', 'decision.finalized', 'application.kyc_failed', 'application.kyc_completed')`;

  const decisionsWithoutAudit = ids(await queryRows(db, 'select d.id from decisions d left join decision_audits a on a.decision_id = d.id where a.decision_id is null'));
  const auditsWithoutDecision = ids(await queryRows(db, 'select a.decision_id as id from decision_audits a left join decisions d on d.id = a.decision_id where d.id is null'));

  const eventRows = await queryRows(
    db,
    `select d.id, d.status, e.type from decisions d left join events e on e.subject_id = d.id and e.type in ${decisionEventTypes} order by d.id, e.type`,
  );
  const eventsByDecision = new Map<string, { status: string; types: string[] }>();
  for (const r of eventRows) {
    const entry = eventsByDecision.get(String(r.id)) ?? { status: String(r.status), types: [] };
    if (r.type !== null) entry.types.push(String(r.type));
    eventsByDecision.set(String(r.id), entry);
  }
  const decisionsWithWrongEvents: HalfWrittenReport['decisionsWithWrongEvents'] = [];
  for (const [id, { status, types }] of eventsByDecision) {
    const count = (t: string) => types.filter((x) => x === t).length;
    const opening = count('application.created') === 1 && count('decision.created') === 1;
    const scored = count('score.completed') + count('score.errored');
    const whole =
      status === 'complete'
        ? opening && count('decision.finalized') === 1 && scored === 1
        : opening && count('decision.finalized') === 0 && scored === 0;
    if (!whole) decisionsWithWrongEvents.push({ id, status, events: types.join(',') });
  }

  const eventsWithoutDecision = ids(
    await queryRows(db, `select e.id from events e left join decisions d on d.id = e.subject_id where e.type in ${decisionEventTypes} and d.id is null`),
  );

  const eventsWithoutOneDelivery: HalfWrittenReport['eventsWithoutOneDelivery'] = [];
  for (const endpointId of options.endpointIds ?? []) {
    const rows = await queryRows(
      db,
      `select e.id, (select count(*) from webhook_deliveries w where w.event_id = e.id and w.endpoint_id = '${uuid(endpointId)}') as n
       from events e join decisions d on d.id = e.subject_id
       join webhook_endpoints p on p.id = '${uuid(endpointId)}' and p.tenant_id = e.tenant_id and p.environment = e.environment`,
    );
    for (const r of rows) if (Number(r.n) !== 1) eventsWithoutOneDelivery.push({ eventId: String(r.id), endpointId, deliveries: Number(r.n) });
  }

  const deliveriesWithoutEvent = ids(await queryRows(db, 'select w.id from webhook_deliveries w left join events e on e.id = w.event_id where e.id is null'));
  const attemptsWithoutDelivery = ids(await queryRows(db, 'select a.id from webhook_attempts a left join webhook_deliveries w on w.id = a.delivery_id where w.id is null'));
  const unfinishedIdempotencyKeys = ids(
    await queryRows(db, 'select idempotency_key from idempotency_keys where status_code is null or response_body is null'),
    'idempotency_key',
  );

  // Stored answers are sealed at rest (ADR 0003), bound to tenant, environment and key; the
  // servers under test run with TEST_ENCRYPTION_KEY. Open each one, as the server does on a replay.
  const box = createSecretBox(Buffer.from(TEST_ENCRYPTION_KEY, 'hex'));
  const stored = (await queryRows(db, 'select idempotency_key, tenant_id, environment, response_body from idempotency_keys where status_code = 200')).map((r) => {
    const body = String(r.response_body);
    const opened = body.startsWith('v1.') ? box.openText(body, `idempotency:${String(r.tenant_id)}:${String(r.environment)}:${String(r.idempotency_key)}`) : body;
    return { key: String(r.idempotency_key), decisionId: (JSON.parse(opened) as { decision_id?: unknown }).decision_id };
  });
  const decisionIds = new Set(ids(await queryRows(db, 'select id from decisions')));
  const storedAnswersWithoutDecision = stored
    .filter((r) => r.decisionId !== undefined && !decisionIds.has(String(r.decisionId)))
    .map((r) => r.key);

  const consumersWithoutDecision = ids(
    await queryRows(db, 'select c.id from consumers c where c.sandbox_profile is null and not exists (select 1 from decisions d where d.consumer_id = c.id)'),
  );

  const sqliteProblems: string[] = [];
  if (db.dialect === 'sqlite') {
    const integrity = await queryRows(db, 'pragma integrity_check');
    if (integrity.length !== 1 || integrity[0]!.integrity_check !== 'ok') sqliteProblems.push(JSON.stringify(integrity));
    for (const r of await queryRows(db, 'pragma foreign_key_check')) sqliteProblems.push(`foreign key: ${JSON.stringify(r)}`);
  }

  return {
    decisionsWithoutAudit,
    auditsWithoutDecision,
    decisionsWithWrongEvents,
    eventsWithoutDecision,
    eventsWithoutOneDelivery,
    deliveriesWithoutEvent,
    attemptsWithoutDelivery,
    unfinishedIdempotencyKeys,
    storedAnswersWithoutDecision,
    consumersWithoutDecision,
    sqliteProblems,
  };
}

/** The report with every list empty: compare with `toEqual(WHOLE)` so a failure shows what is broken. */
export const WHOLE: HalfWrittenReport = Object.freeze({
  decisionsWithoutAudit: [],
  auditsWithoutDecision: [],
  decisionsWithWrongEvents: [],
  eventsWithoutDecision: [],
  eventsWithoutOneDelivery: [],
  deliveriesWithoutEvent: [],
  attemptsWithoutDelivery: [],
  unfinishedIdempotencyKeys: [],
  storedAnswersWithoutDecision: [],
  consumersWithoutDecision: [],
  sqliteProblems: [],
}) as HalfWrittenReport;
