/**
 * Consumers: the people decisions are about, per tenant and environment. A consumer id resolves
 * only inside its own tenant and environment (any other lookup is "unknown"). Identity fields are
 * PII: they are stored for verification and the portal, never logged or put in events; `ssn_last4`
 * is sealed (AES-256-GCM, bound to the consumer id) and only opened for a credit pull or a
 * verification check.
 */
import type { Kysely } from 'kysely';
import type { Environment } from '../../config/config.js';
import type { ConsumersTable, Database } from '../../db/schema.js';
import type { Clock, Random } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/crypto.js';

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
  createdAt: Date;
}

/** What this lender has seen of the consumer before (feeds the scorecard's history features). */
/** How many of a consumer's latest applications the history features look at. */
export const HISTORY_WINDOW = 50;

export interface ConsumerHistory {
  priorApplications: number;
  priorApprovals: number;
  priorDeclines: number;
  priorReferrals: number;
}

export function createConsumersService(deps: { db: Kysely<Database>; readDb: Kysely<Database>; clock: Clock; random: Random; secretBox: SecretBox }) {
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
    createdAt: new Date(row.created_at),
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

  async function createConsumer(trx: Kysely<Database>, scope: { tenantId: string; environment: Environment }, identity: NewConsumerIdentity, id = deps.random.uuid()): Promise<Consumer> {
    const now = deps.clock.now().getTime();
    const row: ConsumersTable = {
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
      identity_status: 'unverified',
      sandbox_profile: null,
      linked_accounts_json: '[]',
      created_at: now,
      updated_at: now,
    };
    await trx.insertInto('consumers').values(row).execute();
    return toConsumer(row);
  }

  /** The sealed last four digits, opened for a credit pull or verification; null when never given. */
  async function revealSsnLast4(consumerId: string, db: Kysely<Database> = deps.readDb): Promise<string | null> {
    const row = await db.selectFrom('consumers').select('ssn_last4_sealed').where('id', '=', consumerId).executeTakeFirst();
    return row?.ssn_last4_sealed ? deps.secretBox.openText(row.ssn_last4_sealed, consumerId) : null;
  }

  async function setIdentityStatus(trx: Kysely<Database>, consumerId: string, status: ConsumersTable['identity_status']): Promise<void> {
    await trx.updateTable('consumers').set({ identity_status: status, updated_at: deps.clock.now().getTime() }).where('id', '=', consumerId).execute();
  }

  /**
   * Counts of the consumer's earlier decided applications, newest first and capped at
   * HISTORY_WINDOW: the scorecard only distinguishes none, one and "three or more", so reading a
   * long-standing customer's whole history on every decision would cost time and tell nothing more.
   */
  async function history(consumerId: string, db: Kysely<Database> = deps.readDb): Promise<ConsumerHistory> {
    const rows = await db
      .selectFrom('decisions')
      .select('outcome')
      .where('consumer_id', '=', consumerId)
      .orderBy('created_at', 'desc')
      .limit(HISTORY_WINDOW)
      .execute();
    const count = (o: string) => rows.filter((r) => r.outcome === o).length;
    return { priorApplications: rows.length, priorApprovals: count('approved'), priorDeclines: count('declined'), priorReferrals: count('referred') };
  }

  return { findConsumer, createConsumer, revealSsnLast4, setIdentityStatus, history };
}

export type ConsumersService = ReturnType<typeof createConsumersService>;
