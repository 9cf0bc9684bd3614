import { api, type Page } from '../../../lib/api-client';
import type { Environment } from '../../../lib/environment';

export interface Person {
  id: string;
  name: string | null;
}

export interface StoredVersion {
  source: 'stored';
  id: string;
  product: string;
  environment: Environment;
  version: number;
  name: string;
  status: 'draft' | 'active' | 'retired';
  scorecard_version: string;
  engine_version: string;
  note: string | null;
  based_on: string | null;
  created_by: Person;
  created_at: string;
  promoted_by: Person | null;
  promoted_at: string | null;
  retired_at: string | null;
}

export interface BundledVersion {
  source: 'bundled';
  id: null;
  name: string;
  status: 'active';
  scorecard_version: string;
  engine_version: string;
}

export type AnyVersion = StoredVersion | BundledVersion;

export interface ProductPolicy {
  product: string;
  label: string;
  current: AnyVersion;
  bundled_default: string;
  scorecard_versions: string[];
  version_count: number;
  latest: StoredVersion | null;
}

/** The structured view of a BNPL policy: money as "2500.00", rates as percent "9.99" (null: not priced). */
export interface BnplPolicyTables {
  grades: Array<{ grade: string; min_score: number | null; band: 'approve' | 'refer' | 'decline'; limit: string }>;
  pricing: Array<{ grade: string; pay_in_4: string | null; pay_in_6: string | null; monthly: string | null }>;
  kyc_tiers: { enhanced_from: string; hard_from: string };
  plan_minimums: { pay_in_4: string; pay_in_6: string; monthly: string };
  default_plan: { pay_in_4_up_to: string; pay_in_6_up_to: string };
}

export const AUTO_LOAN_TERM_BUCKETS = ['up_to_48', 'months_60', 'months_72', 'months_84'] as const;
export type AutoLoanTermBucket = (typeof AUTO_LOAN_TERM_BUCKETS)[number];

/** The structured view of an auto-loan policy: buy rates by grade and term, LTV and limit per grade, dealer terms. */
export interface AutoLoanPolicyTables {
  grades: Array<{ grade: string; min_score: number | null; band: 'approve' | 'refer' | 'decline'; limit: string; max_ltv_pct: number | null }>;
  buy_rates: Array<{ grade: string } & Record<AutoLoanTermBucket, string | null>>;
  used_vehicle_adder: string;
  markup_caps: { up_to_60_months: string; above_60_months: string };
  dealer_reserve_share_pct: number;
  kyc_tiers: { enhanced_from: string; hard_from: string };
  amount_financed: { min: string; max: string };
}

/** Each product's structured view; the server says which by the product the screen is for. */
export type PolicyTables = BnplPolicyTables | AutoLoanPolicyTables;

export function isAutoLoanTables(tables: PolicyTables): tables is AutoLoanPolicyTables {
  return 'buy_rates' in tables;
}

export interface VersionDetail {
  version: AnyVersion;
  document: unknown;
  tables: PolicyTables | null;
  tables_unavailable_reason: string | null;
}

export interface Problem {
  path: string;
  rule: string;
  message: string;
}

export interface DraftInput {
  tables?: PolicyTables;
  document_json?: string;
  base_version_id?: string | null;
  note?: string | null;
}

export interface SandboxOutcome {
  outcome: 'approved' | 'declined' | 'referred';
  risk_grade: string | null;
  score: number | null;
  kyc_tier: string;
  plan: string;
  amount: string | null;
  apr: string | null;
  reasons: string[];
}

export interface SandboxTestRow {
  id: string;
  label: string;
  requested_amount: string;
  active: SandboxOutcome;
  draft: SandboxOutcome;
  changed: string[];
}

export interface SandboxTestResult {
  against: string;
  version: StoredVersion;
  changed_count: number;
  rows: SandboxTestRow[];
}

const base = (env: Environment, product: string) => `/policy/${env}/${product}`;

export const creditPolicyApi = {
  overview: (env: Environment) => api.get<{ products: ProductPolicy[] }>(`/policy/${env}`),
  versions: (env: Environment, product: string, page: number) => api.get<Page<StoredVersion>>(`${base(env, product)}/versions`, { page, page_size: 20 }),
  current: (env: Environment, product: string) => api.get<VersionDetail>(`${base(env, product)}/current`),
  get: (env: Environment, product: string, id: string) => api.get<VersionDetail>(`${base(env, product)}/versions/${id}`),
  validate: (env: Environment, product: string, input: DraftInput) =>
    api.post<{ valid: boolean; problems: Problem[]; scorecard_version: string; based_on: string | null; tables: PolicyTables | null }>(`${base(env, product)}/validate`, input),
  create: (env: Environment, product: string, input: DraftInput) => api.post<VersionDetail & { version: StoredVersion }>(`${base(env, product)}/versions`, input),
  test: (env: Environment, product: string, id: string) => api.post<SandboxTestResult>(`${base(env, product)}/versions/${id}/test`),
  promote: (env: Environment, product: string, id: string) => api.post<{ version: StoredVersion }>(`${base(env, product)}/versions/${id}/promote`),
};
