/**
 * Consumers: the people decisions are about, per tenant and environment. A consumer id resolves
 * only inside its own tenant and environment (any other lookup is "unknown"). Identity fields are
 * PII: they are stored for verification and the portal, never logged or put in events; `ssn_last4`
 * is sealed (AES-256-GCM, bound to the consumer id) and only opened for a credit pull or a
 * verification check.
 */
import { sql, type CompiledQuery, type Kysely } from 'kysely';
import type { Environment } from '../../config/config.js';
import type { ConsumersTable, Database } from '../../db/schema.js';
import { insertStatement, template } from '../../db/statements.js';
import { batchedRead } from '../../db/batched-read.js';
import type { DialectName } from '../../db/database.js';
import type { Clock, Random } from '../../lib/clock.js';
import { openedTextCache, type SecretBox } from '../../lib/crypto.js';
import { SANDBOX_CONSUMERS, type SandboxConsumerFixture } from './sandbox-consumers.js';

export interface ConsumerAddress {
  line1: string;
  line2?: string;
  city: string;
  state: string;
  zip: string;
  country?: 'US';
}

export interface NewConsumerIdentity {
  firstName: string;
  lastName: string;
  email: string;
  phone: string | null;
  dob: string;
  ssnLast4: string | null;
  address: ConsumerAddress;
}

export interface Consumer {
  id: string;
  tenantId: string;
  environment: Environment;
  firstName: string;
  lastName: string;
  email: string;
  phone: string | null;
  dob: string;
  address: ConsumerAddress;
  hasSsnLast4: boolean;
  identityStatus: ConsumersTable['identity_status'];
  sandboxProfile: ConsumersTable['sandbox_profile'];
  linkedAccounts: LinkedAccount[];
  /** Set by Reset consumer state: decisions before it are no longer this consumer's history. */
  historyResetAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface LinkedAccount {
  type: string;
  institution: string;
  mask: string;
}

export interface ConsumerListOptions {
  /** Matches the id exactly, or a part of the name or email (case-insensitive). */
  search?: string;
  /** Only the three seeded sandbox consumers. */
  seededOnly?: boolean;
  limit?: number;
  offset?: number;
}

/** Every column of a consumer row. */
const CONSUMER_COLUMNS = [
  'id', 'tenant_id', 'environment', 'first_name', 'last_name', 'email', 'phone', 'dob', 'address_json', 'ssn_last4_sealed',
  'identity_status', 'sandbox_profile', 'linked_accounts_json', 'created_at', 'updated_at', 'history_reset_at',
] as const satisfies ReadonlyArray<keyof ConsumersTable>;
// A column added to ConsumersTable must be added above (this fails to compile otherwise).
const _everyConsumerColumn: [Exclude<keyof ConsumersTable, (typeof CONSUMER_COLUMNS)[number]>] extends [never] ? true : never = true;

/** What this lender has seen of the consumer before (feeds the scorecard's history features). */
/** How many of a consumer's latest applications the history features look at. */
export const HISTORY_WINDOW = 50;

export interface ConsumerHistory {
  priorApplications: number;
  priorApprovals: number;
  priorDeclines: number;
  priorReferrals: number;
}

/** The history counts as SQL gives them, "applications,approvals,declines,referrals". */
function historyOfCounts(counts: string): ConsumerHistory {
  const [applications, approvals, declines, referrals] = counts.split(',').map(Number) as [number, number, number, number];
  return { priorApplications: applications, priorApprovals: approvals, priorDeclines: declines, priorReferrals: referrals };
}

/** Opened ssn_last4 values kept per process at most. */
const OPENED_SSN_LIMIT = 10_000;

export function createConsumersService(deps: { db: Kysely<Database>; readDb: Kysely<Database>; clock: Clock; random: Random; secretBox: SecretBox; dialect?: DialectName }) {
  const insertConsumers = insertStatement(deps.db, 'consumers');
  // A returning consumer's ssn_last4 is opened on every create (lib/crypto.ts, openedTextCache).
  const openSsnLast4 = openedTextCache(deps.secretBox, OPENED_SSN_LIMIT);
  const updateIdentityStatus = template(['id', 'status', 'now'], (p) => deps.db.updateTable('consumers').set({ identity_status: p.status, updated_at: p.now }).where('id', '=', p.id));
  const toConsumer = (row: ConsumersTable): Consumer => ({
    id: row.id,
    tenantId: row.tenant_id,
    environment: row.environment,
    firstName: row.first_name,
    lastName: row.last_name,
    email: row.email,
    phone: row.phone,
    dob: row.dob,
    address: JSON.parse(row.address_json) as ConsumerAddress,
    hasSsnLast4: row.ssn_last4_sealed !== null,
    identityStatus: row.identity_status,
    sandboxProfile: row.sandbox_profile,
    linkedAccounts: JSON.parse(row.linked_accounts_json) as LinkedAccount[],
    historyResetAt: row.history_reset_at === undefined || row.history_reset_at === null ? null : new Date(row.history_reset_at),
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  });

  async function findConsumer(scope: { tenantId: string; environment: Environment }, consumerId: string, db: Kysely<Database> = deps.readDb): Promise<Consumer | null> {
    const row = await db
      .selectFrom('consumers')
      .selectAll()
      .where('id', '=', consumerId)
      .where('tenant_id', '=', scope.tenantId)
      .where('environment', '=', scope.environment)
      .executeTakeFirst();
    return row ? toConsumer(row) : null;
  }

  // A create's read of its returning applicant, built and compiled once: the consumer row (with the
  // sealed ssn_last4) and, in a scalar subquery, the counts `history` computes, as
  // "applications,approvals,declines,referrals". The same window and reset rule as `history`.
  const applicantColumns = (db: Kysely<Database>) =>
    db
      .selectFrom('consumers as c')
      // Named columns, not `*` (a prepared statement's columns must not change: db/statements.ts).
      .select(CONSUMER_COLUMNS.map((column) => `c.${column}` as const))
      .select(
        deps.dialect === 'postgres'
          ? // A plan that stops after the window whatever PostgreSQL estimates (migration 0020).
            sql<string>`cds_consumer_history(c.id, coalesce(c.history_reset_at, 0), ${sql.lit(HISTORY_WINDOW)})`.as('history_counts')
          : sql<string>`(select count(*) || ',' || count(*) filter (where h.outcome = 'approved') || ',' || count(*) filter (where h.outcome = 'declined') || ',' || count(*) filter (where h.outcome = 'referred')
          from (select d.outcome from decisions d where d.consumer_id = c.id and d.created_at >= coalesce(c.history_reset_at, 0) order by d.created_at desc limit ${sql.lit(HISTORY_WINDOW)}) h)`.as('history_counts'),
      );
  type ApplicantRow = ConsumersTable & { history_counts: string };
  // The applicants of creates that arrive together are read by one statement (batched-read.ts),
  // by primary key alone, their tenant and environment checked on the row below (another tenant's
  // consumer is not found). By key alone because a statement's plan must not depend on table
  // statistics: filtered by tenant too, PostgreSQL's generic plan for a table never analysed read
  // the tenant's every consumer through `consumers_tenant` (test/integration/foundation/
  // generic-plans.test.ts). Batched because each read a create made on its own cost more than
  // the row: on SQLite a read transaction whose page cache starts cold after every commit of the
  // writer (+26 to +33% creates over 1,000 consumers); on PostgreSQL a round trip on each side, and
  // creates that read together commit together, in fewer and larger batches (+28 to +36% over
  // 1,000 consumers, +8 to +27% over one: docs/performance.md, "twenty-first session"). Two
  // statements out at a time there, so a read need not wait for the one before it to answer.
  // `in (select unnest(…))` on PostgreSQL: the array's ids, each looked up by the primary key, in
  // the generic plan as in a custom one. SQLite takes the ids as a JSON array.
  const postgres = deps.dialect === 'postgres';
  const consumersForDecision = template(['ids'], (p) =>
    applicantColumns(deps.readDb).where(postgres ? sql<boolean>`c.id in (select unnest(${p.ids}::text[]))` : sql<boolean>`c.id in (select value from json_each(${p.ids}))`),
  );
  const idsParameter: (ids: string[]) => unknown = postgres ? (ids) => ids : (ids) => JSON.stringify(ids);
  const readApplicant = batchedRead({
    keyIndex: 0,
    fetch: async (ids) => {
      const { rows } = await deps.readDb.executeQuery(consumersForDecision({ ids: idsParameter(ids) }));
      return rows.map((row) => [row.id, row]);
    },
    ...(postgres ? { maxBatchesInFlight: 2 } : {}),
  });

  /**
   * The consumer, its ssn_last4 (opened) and its history from one read: a create needs all three
   * (one round trip on PostgreSQL instead of two).
   */
  async function findConsumerForDecision(
    scope: { tenantId: string; environment: Environment },
    consumerId: string,
  ): Promise<{ consumer: Consumer; ssnLast4: string | null; history: ConsumerHistory } | null> {
    const row = (await readApplicant(consumerId))?.[1] as ApplicantRow | undefined;
    if (!row || row.tenant_id !== scope.tenantId || row.environment !== scope.environment) return null;
    return {
      consumer: toConsumer(row),
      ssnLast4: row.ssn_last4_sealed ? openSsnLast4(row.ssn_last4_sealed, row.id) : null,
      history: historyOfCounts(row.history_counts),
    };
  }

  async function createConsumer(trx: Kysely<Database>, scope: { tenantId: string; environment: Environment }, identity: NewConsumerIdentity, id = deps.random.uuid()): Promise<Consumer> {
    const row = newConsumerRow(scope, identity, id, 'unverified');
    await trx.executeQuery(insertConsumers([row]));
    return toConsumer(row);
  }

  /**
   * The insert of a new consumer whose identity check is already decided (a create's applicant),
   * for the caller to send with its own writes (outbox `with`): the same row as createConsumer
   * followed by setIdentityStatus, in one statement.
   */
  function newConsumerInsert(scope: { tenantId: string; environment: Environment }, identity: NewConsumerIdentity, id: string, identityStatus: ConsumersTable['identity_status']): CompiledQuery {
    return insertConsumers([newConsumerRow(scope, identity, id, identityStatus)]);
  }

  function newConsumerRow(scope: { tenantId: string; environment: Environment }, identity: NewConsumerIdentity, id: string, identityStatus: ConsumersTable['identity_status']): ConsumersTable {
    const now = deps.clock.now().getTime();
    return {
      id,
      tenant_id: scope.tenantId,
      environment: scope.environment,
      first_name: identity.firstName,
      last_name: identity.lastName,
      email: identity.email,
      phone: identity.phone,
      dob: identity.dob,
      address_json: JSON.stringify(identity.address),
      ssn_last4_sealed: identity.ssnLast4 === null ? null : deps.secretBox.seal(identity.ssnLast4, id),
      identity_status: identityStatus,
      sandbox_profile: null,
      linked_accounts_json: '[]',
      created_at: now,
      updated_at: now,
    };
  }

  /** The sealed last four digits, opened for a credit pull or verification; null when never given. */
  async function revealSsnLast4(consumerId: string, db: Kysely<Database> = deps.readDb): Promise<string | null> {
    const row = await db.selectFrom('consumers').select('ssn_last4_sealed').where('id', '=', consumerId).executeTakeFirst();
    return row?.ssn_last4_sealed ? openSsnLast4(row.ssn_last4_sealed, consumerId) : null;
  }

  async function setIdentityStatus(trx: Kysely<Database>, consumerId: string, status: ConsumersTable['identity_status']): Promise<void> {
    await trx.executeQuery(identityStatusUpdate(consumerId, status));
  }

  /** setIdentityStatus as a statement, for the caller to send with its own writes (outbox `with`). */
  function identityStatusUpdate(consumerId: string, status: ConsumersTable['identity_status']): CompiledQuery {
    return updateIdentityStatus({ id: consumerId, status, now: deps.clock.now().getTime() });
  }

  /**
   * Counts of the consumer's earlier decided applications, newest first and capped at
   * HISTORY_WINDOW: the scorecard only distinguishes none, one and "three or more", so reading a
   * long-standing customer's whole history on every decision would cost time and tell nothing more.
   */
  async function history(consumerId: string, db: Kysely<Database> = deps.readDb): Promise<ConsumerHistory> {
    if (deps.dialect === 'postgres') {
      // The same counts through migration 0020's function, whose plan stops after the window.
      const { rows } = await sql<{ counts: string }>`select cds_consumer_history(${consumerId}, coalesce((select history_reset_at from consumers where id = ${consumerId}), 0), ${HISTORY_WINDOW}) as counts`.execute(db);
      return historyOfCounts(rows[0]!.counts);
    }
    const rows = await db
      .selectFrom('decisions')
      .select('outcome')
      .where('consumer_id', '=', consumerId)
      // After Reset consumer state only later decisions count (null: never reset, everything counts).
      .where('created_at', '>=', sql<number>`coalesce((select history_reset_at from consumers where id = ${consumerId}), 0)`)
      .orderBy('created_at', 'desc')
      .limit(HISTORY_WINDOW)
      .execute();
    const count = (o: string) => rows.filter((r) => r.outcome === o).length;
    return { priorApplications: rows.length, priorApprovals: count('approved'), priorDeclines: count('declined'), priorReferrals: count('referred') };
  }

  /** One page of a tenant's consumers in one environment, newest first, and how many match. */
  async function listConsumers(scope: { tenantId: string; environment: Environment }, options: ConsumerListOptions = {}): Promise<{ consumers: Consumer[]; total: number }> {
    const limit = Math.min(Math.max(options.limit ?? 25, 1), 100);
    const offset = Math.max(options.offset ?? 0, 0);
    let q = deps.readDb.selectFrom('consumers').where('tenant_id', '=', scope.tenantId).where('environment', '=', scope.environment);
    if (options.seededOnly) q = q.where('sandbox_profile', 'is not', null);
    const search = options.search?.trim().toLowerCase();
    if (search) {
      const like = `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      q = q.where((eb) =>
        eb.or([
          eb('id', '=', search),
          sql<boolean>`lower(email) like ${like} escape '\\'`,
          sql<boolean>`lower(first_name || ' ' || last_name) like ${like} escape '\\'`,
        ]),
      );
    }
    const [{ n }, rows] = await Promise.all([
      q.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
      q
        .selectAll()
        // The seeded three first, in tier order; then everyone else, newest first.
        .orderBy(sql`case sandbox_profile when 'soft' then 0 when 'enhanced' then 1 when 'hard' then 2 else 3 end`)
        .orderBy('created_at', 'desc').orderBy('id').limit(limit).offset(offset).execute(),
    ]);
    return { consumers: rows.map(toConsumer), total: Number(n) };
  }

  /** The identity columns of a seeded sandbox consumer, as created and as restored by a reset. */
  function fixtureColumns(fixture: SandboxConsumerFixture, id: string) {
    return {
      first_name: fixture.firstName,
      last_name: fixture.lastName,
      email: fixture.email,
      phone: fixture.phone,
      dob: fixture.dob,
      address_json: JSON.stringify(fixture.address),
      ssn_last4_sealed: deps.secretBox.seal(fixture.ssnLast4, id),
      identity_status: 'verified' as const,
      linked_accounts_json: JSON.stringify(fixture.linkedAccounts),
    };
  }

  /** The three consumers every sandbox starts with (interface.md, Sandbox), inside the caller's transaction. */
  async function seedSandboxConsumers(trx: Kysely<Database>, tenantId: string): Promise<Array<{ consumerId: string; tier: SandboxConsumerFixture['profile'] }>> {
    const now = deps.clock.now().getTime();
    const seeded: Array<{ consumerId: string; tier: SandboxConsumerFixture['profile'] }> = [];
    for (const fixture of SANDBOX_CONSUMERS) {
      const id = deps.random.uuid();
      await trx
        .insertInto('consumers')
        .values({ id, tenant_id: tenantId, environment: 'sandbox', ...fixtureColumns(fixture, id), sandbox_profile: fixture.profile, created_at: now, updated_at: now })
        .execute();
      seeded.push({ consumerId: id, tier: fixture.profile });
    }
    return seeded;
  }

  /**
   * Reset consumer state, sandbox only, scoped to the caller's tenant. A seeded consumer gets its
   * fixture back (identity, identity_status `verified`, linked accounts); any other sandbox
   * consumer goes back to `unverified` as when first seen. Either way its application history is
   * marked reset: decisions stay (they are records, with events and webhooks already sent) but no
   * longer count as history for the scorecard, nor show in the portal's history. Null: not found.
   */
  async function resetSandboxConsumer(scope: { tenantId: string }, consumerId: string): Promise<Consumer | null> {
    return deps.db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('consumers')
        .selectAll()
        .where('id', '=', consumerId)
        .where('tenant_id', '=', scope.tenantId)
        .where('environment', '=', 'sandbox')
        .executeTakeFirst();
      if (!row) return null;
      const now = deps.clock.now().getTime();
      const fixture = SANDBOX_CONSUMERS.find((f) => f.profile === row.sandbox_profile);
      const changes: Partial<ConsumersTable> = fixture
        ? fixtureColumns(fixture, row.id)
        : { identity_status: 'unverified' };
      const updated = { ...row, ...changes, history_reset_at: now, updated_at: now };
      await trx.updateTable('consumers').set({ ...changes, history_reset_at: now, updated_at: now }).where('id', '=', row.id).execute();
      return toConsumer(updated);
    });
  }

  return { findConsumer, findConsumerForDecision, createConsumer, newConsumerInsert, seedSandboxConsumers, revealSsnLast4, setIdentityStatus, identityStatusUpdate, history, listConsumers, resetSandboxConsumer };
}

export type ConsumersService = ReturnType<typeof createConsumersService>;
