/**
 * Table types for Kysely. One interface per table, matching the migrations exactly.
 *
 * Dialect-neutral conventions (so the same queries run on SQLite and PostgreSQL):
 * ids are UUID text; times are integer epoch milliseconds (`*_at`); money is integer cents;
 * booleans are 0/1 integers; structured values are JSON text. The modules own their tables:
 * only a module's repository touches them.
 */
import type { Generated } from 'kysely';

export interface TenantsTable {
  id: string;
  name: string;
  created_at: number;
  /** Per-tenant overrides of the deployment's default rate limits (requests/s); null = default. */
  rate_limit_live_per_s: number | null;
  rate_limit_sandbox_per_s: number | null;
  /** JSON: { default_merchant_name, default_merchant_category } used by the `order` form. */
  settings_json: string;
}

export interface ApiKeysTable {
  id: string;
  tenant_id: string;
  environment: 'sandbox' | 'live';
  /** SHA-256 hex of the full key; the key itself is never stored. */
  key_hash: string;
  last4: string;
  label: string | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface ConsumersTable {
  id: string;
  tenant_id: string;
  environment: 'sandbox' | 'live';
  first_name: string;
  last_name: string;
  email: string;
  phone: string | null;
  dob: string;
  /** JSON: { line1, line2?, city, state, zip, country? } */
  address_json: string;
  /** AES-256-GCM sealed, bound to the consumer id; null when never given. */
  ssn_last4_sealed: string | null;
  identity_status: 'unverified' | 'verified' | 'failed';
  /** Seeded sandbox consumers: the tier they were seeded for; null for everyone else. */
  sandbox_profile: 'soft' | 'enhanced' | 'hard' | null;
  /** JSON array of linked accounts (sandbox fixtures, later bank links). */
  linked_accounts_json: string;
  created_at: number;
  updated_at: number;
}

export interface IdempotencyKeysTable {
  tenant_id: string;
  environment: 'sandbox' | 'live';
  idempotency_key: string;
  /** SHA-256 of method, path and canonical JSON body. */
  fingerprint: string;
  /** Null while the first request is still running (only ever visible inside its transaction). */
  status_code: number | null;
  response_body: string | null;
  /** The request id of the request whose response is stored; replays carry it. */
  request_id: string;
  created_at: number;
  expires_at: number;
}

export interface Database {
  tenants: TenantsTable;
  api_keys: ApiKeysTable;
  consumers: ConsumersTable;
  idempotency_keys: IdempotencyKeysTable;
}

export type { Generated };
