import { api, type Page } from '../../../lib/api-client';
import type { Environment } from '../../../lib/environment';

export interface Reason {
  code: string;
  reason: string;
}

export interface MaskedApplicant {
  consumer_id: string;
  initials: string;
  email: string;
  phone: string | null;
  state: string;
}

export interface Referral {
  decision_id: string;
  application_id: string;
  version: number;
  status: string;
  outcome: 'approved' | 'declined' | 'referred' | null;
  kyc_tier: string;
  kyc_status: string;
  requested_amount: string;
  requested_plan: string | null;
  requested_term_months: number | null;
  currency: string;
  merchant_name: string;
  merchant_category: string;
  score: number | null;
  risk_grade: string | null;
  engine_version: string | null;
  approved_amount: string | null;
  plan: string | null;
  term_months: number | null;
  apr: string | null;
  payment_schedule: Array<{ num: number; due_date: string; amount: string }> | null;
  tila_disclosure: Record<string, string> | null;
  expires_at: string | null;
  created_at: string;
  referred_at: string | null;
  updated_at: string;
  applicant: MaskedApplicant | null;
  reasons: Reason[];
}

export interface ReferralAction {
  id: string;
  kind: 'approved' | 'declined' | 'documents_requested' | 'condition_added' | 'pii_revealed' | 'document_viewed' | 'verification_reviewed';
  user_id: string;
  user_name: string;
  details: Record<string, unknown>;
  created_at: string;
}

export interface DocumentRequest {
  id: string;
  document_types: string[];
  note: string | null;
  upload_url: string;
  requested_by: string;
  created_at: string;
  expires_at: string;
  fulfilled_at: string | null;
}

export interface Condition {
  id: string;
  code: string;
  note: string | null;
  added_by: string;
  created_at: string;
}

export interface UploadedDocument {
  id: string;
  content_type: string;
  size_bytes: number;
  document_type: string;
  uploaded_at: string;
}

/** An auto loan's application and its pricing by term (null for BNPL). */
export interface AutoLoanReferral {
  vehicle: { vin: string; year: number; make: string; model: string; mileage: number; condition: 'new' | 'used'; value: string; age_years: number };
  loan: { amount: string; down_payment: string; trade_in_value: string; amount_financed: string; term_months: number };
  ltv: string;
  channel: 'direct' | 'indirect';
  dealer: { dealer_id: string | null; name: string | null; markup_rate_pct: string } | null;
  pricing: {
    risk_grade: string | null;
    source: 'decision' | 'lowest_priced_grade';
    policy_version: string;
    dealer_reserve_share_pct: number;
    terms: Array<{ term_months: number; buy_rate: string | null; markup_cap_pct: string; markup_allowed: boolean; collateral_rules: string[] }>;
  };
}

export interface ReferralDetail extends Referral {
  product: 'bnpl' | 'auto_loan';
  /** Once worked: the adverse action taken (a notice is owed), a decline or a counteroffer; else null. */
  adverse_action: 'declined' | 'counteroffer' | null;
  recommended_amount: string | null;
  /** BNPL pricing by plan; null for auto loans (see auto_loan.pricing). */
  pricing: { risk_grade: string | null; source: 'decision' | 'lowest_priced_grade'; policy_version: string; rates_bps: Record<string, number | null> } | null;
  auto_loan: AutoLoanReferral | null;
  audit_record: unknown;
  actions: ReferralAction[];
  document_requests: DocumentRequest[];
  conditions: Condition[];
  documents: UploadedDocument[];
}

export interface Catalogue {
  reasons: Array<Reason & { allowed_on_decline: boolean }>;
  max_decline_reasons: number;
  plans: Array<{ plan: string; min_amount: string; max_amount: string }>;
  monthly_terms: number[];
  document_types: string[];
  condition_codes: string[];
}

export interface RevealedApplicant {
  first_name: string;
  last_name: string;
  email: string;
  phone: string | null;
  dob: string;
  address: { line1: string; line2: string | null; city: string; state: string; zip: string; country: string };
}

const base = (env: Environment, id: string) => `/referrals/${env}/${id}`;

export const referralsApi = {
  catalogue: () => api.get<Catalogue>('/referrals/catalogue'),
  list: (env: Environment, page: number) => api.get<Page<Referral>>(`/referrals/${env}`, { page, page_size: 20 }),
  get: (env: Environment, id: string) => api.get<{ referral: ReferralDetail }>(base(env, id)),
  reveal: (env: Environment, id: string) => api.post<{ applicant: RevealedApplicant }>(`${base(env, id)}/reveal`),
  /** BNPL: amount and plan (term_months for monthly); auto loans: amount financed and term_months, no plan. reason_codes: a counteroffer's (ADR 0046). */
  approve: (env: Environment, id: string, input: { expected_version: number; amount: string; plan?: string; term_months?: number | null; reason_codes?: string[] }) =>
    api.post<{ decision: Record<string, unknown>; version: number }>(`${base(env, id)}/approve`, input),
  decline: (env: Environment, id: string, input: { expected_version: number; reason_codes: string[] }) => api.post<{ decision: Record<string, unknown>; version: number }>(`${base(env, id)}/decline`, input),
  requestDocuments: (env: Environment, id: string, input: { expected_version: number; document_types: string[]; note: string | null }) =>
    api.post<{ document_request: DocumentRequest; version: number }>(`${base(env, id)}/document-requests`, input),
  addCondition: (env: Environment, id: string, input: { expected_version: number; code: string; note: string | null }) => api.post<{ condition: Condition; version: number }>(`${base(env, id)}/conditions`, input),
};
