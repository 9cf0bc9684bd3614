/**
 * Table types for Kysely. One interface per table, matching the migrations exactly.
 *
 * Dialect-neutral conventions (so the same queries run on SQLite and PostgreSQL):
 * ids are UUID text; times are integer epoch milliseconds (`*_at`); money is integer cents;
 * booleans are 0/1 integers; structured values are JSON text. The modules own their tables:
 * only a module's repository touches them.
 */


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
  /** Reset consumer state (portal): earlier decisions no longer count as history. Migration 0005. */
  history_reset_at?: number | null;
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

export interface DecisionsTable {
  id: string;
  /** Equal to id for a first-time decision. */
  application_id: string;
  tenant_id: string;
  environment: 'sandbox' | 'live';
  consumer_id: string;
  product: 'bnpl' | 'auto_loan';
  status: 'complete' | 'needs_consumer_action';
  kyc_tier: 'soft' | 'enhanced' | 'hard';
  kyc_status: 'matched' | 'pending' | 'skipped';
  outcome: 'approved' | 'declined' | 'referred' | null;
  currency: string;
  requested_amount_cents: number;
  /** The plan asked for (plan_preference or order.installment_count), null when the service chooses. */
  requested_plan: string | null;
  /** order.installment_count for a monthly plan, else null. */
  requested_term_months: number | null;
  merchant_name: string;
  merchant_category: string;
  approved_amount_cents: number | null;
  plan: string | null;
  term_months: number | null;
  /** Disclosed APR, two-decimal string. */
  apr: string | null;
  payment_frequency: string | null;
  /** JSON: [{num, due_date, amount}] as on the wire. */
  schedule_json: string | null;
  /** JSON: the tila_disclosure block as on the wire. */
  tila_json: string | null;
  /** JSON: [{code, reason}]. */
  reasons_json: string;
  score: number | null;
  risk_grade: string | null;
  engine_version: string | null;
  /** SHA-256 of the hosted-verification token (the token itself is only in the URL). */
  verification_token_hash: string | null;
  /** The token itself, sealed, so a poll can return the same consumer_complete_url. */
  verification_token_sealed: string | null;
  /** Pending: when the pending state expires. Approved: when the offer expires. */
  expires_at: number;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
  /** Optimistic-concurrency version, bumped on every change after creation. */
  version: number;
  /** Auto loans (migration 0006; null for BNPL): `direct` or `indirect`. */
  channel?: 'direct' | 'indirect' | null;
  /** Indirect auto loans: the dealer (modules/dealers). */
  dealer_id?: string | null;
  /** Auto loans: the vehicle's VIN (not PII; kept for the lender's records). */
  vin?: string | null;
  /** Auto loans: JSON { vehicle, loan, markup_bps } as normalised (docs/auto-loan.md). */
  auto_loan_json?: string | null;
  /** Auto-loan approvals: rates as on the wire ("6.49"), the dealer's reserve, the LTV ("85.23"). */
  buy_rate?: string | null;
  contract_rate?: string | null;
  dealer_reserve_cents?: number | null;
  ltv?: string | null;
  /** Time the service spent deciding (ms); null until decided by the engine. Migration 0009. */
  latency_ms?: number | null;
  /**
   * A final decision's poll answer as JSON text, written by the statement that made it final, and
   * the presenter format it was rendered in (migration 0029, ADR 0051). Null while pending, and
   * after any other change to a column the answer is made from (the migration's trigger).
   */
  answer_json?: string | null;
  answer_format?: number | null;
}

/** A dealer of an auto-loan tenant's network, per environment (migration 0006). */
export interface DealersTable {
  id: string;
  tenant_id: string;
  environment: 'sandbox' | 'live';
  name: string;
  license_number: string | null;
  /** USPS two-letter code. */
  state: string | null;
  /** `disabled` is a soft delete: indirect applications naming it are refused (422). */
  status: 'active' | 'disabled';
  created_at: number;
  updated_at: number;
  disabled_at: number | null;
  /** Migration 0024: 1 when added, one more on each edit (name, license number, state); an edit names the one it loaded. */
  version: number;
  /** Migration 0025: the portal user who made the last of those edits (null before one). */
  updated_by: string | null;
  /** Migration 0027: when the last of those edits was made (epoch ms; null before one). */
  edited_at: number | null;
}

export interface DecisionAuditsTable {
  decision_id: string;
  /** JSON audit record: inputs (PII redacted), features, partial scores, reasons, versions, timings. */
  record_json: string;
  created_at: number;
}

export interface EventsTable {
  id: string;
  tenant_id: string;
  environment: 'sandbox' | 'live';
  type: string;
  /** The resource the event is about (decision id, ...), for lookups. */
  subject_id: string | null;
  /** JSON: the envelope's `data`. */
  data_json: string;
  created_at: number;
}

export interface VerificationsTable {
  decision_id: string;
  tenant_id: string;
  environment: 'sandbox' | 'live';
  tier: 'enhanced' | 'hard';
  /** JSON KycState (modules/kyc/kyc-state-machine.ts). */
  state_json: string;
  channel: 'sms' | 'email' | null;
  /** HMAC of the current one-time code; null before one is sent. */
  code_hash: string | null;
  code_expires_at: number | null;
  code_sent_at: number | null;
  codes_sent: number;
  created_at: number;
  updated_at: number;
  version: number;
}

export interface VerificationDocumentsTable {
  id: string;
  decision_id: string;
  tenant_id: string;
  environment: 'sandbox' | 'live';
  content_type: string;
  size_bytes: number;
  sha256: string;
  /** AES-256-GCM sealed base64 of the file, bound to the document id. */
  sealed_content: string;
  created_at: number;
  /** Migration 0007: the underwriter's document request this upload answered (null: the hard-tier ID step). */
  document_request_id?: string | null;
  /** Migration 0007: the requested document type it answers (null: the hard-tier ID document). */
  document_type?: string | null;
}

export interface WebhookEndpointsTable {
  id: string;
  tenant_id: string;
  environment: 'sandbox' | 'live';
  /** https only, at most 2,048 characters, no user-info (checked by the webhooks service). */
  url: string;
  description: string | null;
  /** JSON array of event types, or ["*"] for every type present and future. */
  event_types_json: string;
  /** `deleted` is a soft delete: history stays readable until it is purged. */
  state: 'active' | 'disabled' | 'deleted';
  disabled_reason: string | null;
  disabled_at: number | null;
  deleted_at: number | null;
  /** The signing secret `whsec_...`, sealed (AES-256-GCM) and bound to the endpoint id. */
  secret_sealed: string;
  /** During a rotation overlap: the old secret, which signs a second `v1=` until the expiry. */
  previous_secret_sealed: string | null;
  previous_secret_expires_at: number | null;
  /** Deliveries failed in a row (each after its last attempt); any delivered event resets it. */
  consecutive_failures: number;
  created_at: number;
  updated_at: number;
  /** Migration 0024: 1 when created, one more on each edit (URL, description, events); an edit names the one it loaded. */
  version: number;
  /** Migration 0025: the portal user who made the last of those edits (null before one). */
  updated_by: string | null;
  /** Migration 0027: when the last of those edits was made (epoch ms; null before one). */
  edited_at: number | null;
}

export interface WebhookDeliveriesTable {
  id: string;
  endpoint_id: string;
  event_id: string;
  tenant_id: string;
  environment: 'sandbox' | 'live';
  event_type: string;
  state: 'pending' | 'delivered' | 'failed' | 'cancelled';
  /** Attempts made so far (recorded results; an attempt lost to a crash is sent again). */
  attempts: number;
  /** When the next attempt is due; null once finished. */
  next_attempt_at: number | null;
  /** A worker holds the row until then; null when nobody does. */
  leased_until: number | null;
  /** The holder's claim; a result is applied only with the matching token. */
  lease_token: string | null;
  last_attempt_at: number | null;
  last_response_status: number | null;
  last_error_kind: string | null;
  /** When it became delivered, failed or cancelled. */
  finished_at: number | null;
  created_at: number;
  updated_at: number;
}

/**
 * The sends one delivery worker holds at one endpoint (claimed and not yet sent to the end:
 * sending, or waiting for a slot; ADR 0031 as amended): the per-endpoint cap sums the live rows
 * (ADR 0021). Written only by that worker.
 */
export interface WebhookInFlightTable {
  endpoint_id: string;
  /** Random per worker process: a restarted worker never takes over its predecessor's count. */
  worker_id: string;
  sends: number;
  /** The count holds until then (a lease's length after the worker last wrote it). */
  held_until: number;
}

/** The fingerprint of the DATA_ENCRYPTION_KEY this database's values are sealed with (app/data-key-check.ts). */
export interface DataKeyChecksTable {
  /** Always 1. */
  id: number;
  /** HMAC-SHA256 of a fixed text under the key, hex: names the key without revealing it. */
  fingerprint: string;
  created_at: number;
}

export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  endpoint_id: string;
  attempt: number;
  /** JSON object of the request headers as sent (signature included; it is not a secret). */
  request_headers_json: string;
  request_body: string;
  response_status: number | null;
  /** The first 4 KiB of the response body. */
  response_body: string | null;
  duration_ms: number;
  /** null on success; else http_status, timeout, tls, connection, dns, blocked_address, invalid_url. */
  error_kind: string | null;
  error_detail: string | null;
  created_at: number;
}

export type PortalRole = 'admin' | 'developer' | 'underwriter' | 'viewer';

/** A person who signs in to the lender portal; one tenant, one role. */
export interface UsersTable {
  id: string;
  tenant_id: string;
  /** Lower-cased; unique across all tenants. */
  email: string;
  name: string;
  /** argon2id PHC string. */
  password_hash: string;
  role: PortalRole;
  created_at: number;
  updated_at: number;
  last_login_at: number | null;
  /** Removed from the tenant: cannot sign in, sessions end. */
  deactivated_at: number | null;
}

export interface InvitationsTable {
  id: string;
  tenant_id: string;
  email: string;
  role: PortalRole;
  /** SHA-256 hex of the invitation token (the token is only in the link). */
  token_hash: string;
  invited_by: string;
  created_at: number;
  expires_at: number;
  accepted_at: number | null;
  revoked_at: number | null;
}

/** A one-time link to set a new password (migration 0022; accounts.service.ts). */
export interface PasswordResetsTable {
  id: string;
  tenant_id: string;
  user_id: string;
  /** SHA-256 hex of the token (the token is only in the link). */
  token_hash: string;
  /** The admin who made it; null when the operator did (`cds users reset-password`). */
  created_by: string | null;
  created_at: number;
  expires_at: number;
  used_at: number | null;
  revoked_at: number | null;
}

/**
 * What a tenant's adverse-action notices say about the lender (migration 0023; modules/notices):
 * the creditor, the federal agency of Regulation B's ECOA notice, the consumer reporting agency of
 * FCRA 615(a). Free text as the admin entered it, multi-line addresses included.
 */
export interface NoticeSettingsTable {
  tenant_id: string;
  creditor_name: string;
  creditor_address: string;
  creditor_phone: string | null;
  /** The agency's name and address, as Regulation B Appendix A gives it for this creditor. */
  agency: string;
  cra_name: string | null;
  cra_address: string | null;
  cra_phone: string | null;
  /** 1 on the first save, one more on each: the optimistic-concurrency check of a save. */
  version: number;
  updated_by: string | null;
  updated_at: number;
}

export interface SessionsTable {
  /** SHA-256 hex of the session cookie's random value (the value itself is never stored). */
  id_hash: string;
  user_id: string;
  tenant_id: string;
  created_at: number;
  last_seen_at: number;
  idle_expires_at: number;
  absolute_expires_at: number;
  revoked_at: number | null;
}

/** Migration 0007: what people did to a decision in the portal (append-only; details never hold PII). */
export interface UnderwritingActionsTable {
  id: string;
  decision_id: string;
  tenant_id: string;
  environment: 'sandbox' | 'live';
  kind: 'approved' | 'declined' | 'documents_requested' | 'condition_added' | 'pii_revealed' | 'document_viewed' | 'verification_reviewed';
  user_id: string;
  /** The user's name when they acted, so the history reads the same after they leave. */
  user_name: string;
  details_json: string;
  created_at: number;
}

/** Migration 0007: an underwriter's request for documents and its hosted upload link. */
export interface DocumentRequestsTable {
  id: string;
  decision_id: string;
  tenant_id: string;
  environment: 'sandbox' | 'live';
  /** JSON array of document types. */
  document_types_json: string;
  /** The underwriter's note (portal only; never in a webhook). */
  note: string | null;
  /** SHA-256 of the single-use upload token. */
  token_hash: string;
  /** The token, sealed and bound to the request id, so the portal can show the link again. */
  token_sealed: string;
  requested_by: string;
  created_at: number;
  expires_at: number;
  /** When the applicant uploaded (the token is then used up). */
  fulfilled_at: number | null;
}

/** Migration 0007: an approval condition attached by an underwriter. */
export interface DecisionConditionsTable {
  id: string;
  decision_id: string;
  tenant_id: string;
  environment: 'sandbox' | 'live';
  code: string;
  note: string | null;
  added_by: string;
  created_at: number;
}

/** Migration 0007: the verification review queue, one row per decision with something to review. */
export interface VerificationReviewItemsTable {
  decision_id: string;
  tenant_id: string;
  environment: 'sandbox' | 'live';
  /** 1 when a hard-tier verification failed. */
  verification_failed: number;
  status: 'pending' | 'accepted' | 'rejected';
  /** When it (last) became pending: the failure or the newest upload. */
  opened_at: number;
  reviewed_by: string | null;
  reviewed_at: number | null;
  review_note: string | null;
  version: number;
}

export interface Database {
  tenants: TenantsTable;
  api_keys: ApiKeysTable;
  consumers: ConsumersTable;
  idempotency_keys: IdempotencyKeysTable;
  decisions: DecisionsTable;
  decision_audits: DecisionAuditsTable;
  events: EventsTable;
  verifications: VerificationsTable;
  verification_documents: VerificationDocumentsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  webhook_in_flight: WebhookInFlightTable;
  data_key_checks: DataKeyChecksTable;
  users: UsersTable;
  invitations: InvitationsTable;
  password_resets: PasswordResetsTable;
  notice_settings: NoticeSettingsTable;
  sessions: SessionsTable;
  dealers: DealersTable;
  policy_versions: PolicyVersionsTable;
  policy_heads: PolicyHeadsTable;
  underwriting_actions: UnderwritingActionsTable;
  document_requests: DocumentRequestsTable;
  decision_conditions: DecisionConditionsTable;
  verification_review_items: VerificationReviewItemsTable;
}


/** A credit policy version of one tenant, environment and product (modules/credit-policy). */
export interface PolicyVersionsTable {
  id: string;
  tenant_id: string;
  environment: 'sandbox' | 'live';
  product: string;
  /** 1, 2, 3... per tenant, environment and product. */
  version: number;
  /** What engine_version names, e.g. bnpl-policy-sandbox-v3. */
  name: string;
  /** The JDM decision graph, exactly as validated and stored. */
  document_json: string;
  scorecard_version: string;
  status: 'draft' | 'active' | 'retired';
  note: string | null;
  /** The version name this one was derived from (a stored version or a bundled one); null for an upload. */
  based_on: string | null;
  created_by: string;
  created_at: number;
  promoted_at: number | null;
  promoted_by: string | null;
  retired_at: number | null;
}

/** One row per tenant, environment and product: the active version and the promote generation. */
export interface PolicyHeadsTable {
  tenant_id: string;
  environment: 'sandbox' | 'live';
  product: string;
  active_version_id: string | null;
  /** Incremented by every promote; other processes compare it to their cached value. */
  generation: number;
  /** The last version number handed out in this scope. */
  last_version: number;
  updated_at: number;
}
