import { api, withQuery } from '../../../lib/api-client';
import type { Environment } from '../../../lib/environment';

export type Outcome = 'approved' | 'declined' | 'referred' | 'pending';

export interface DecisionFilters {
  decision_id?: string;
  consumer_id?: string;
  outcome?: string;
  /** `any`, `declined` or `counteroffer`: the decisions that owe an adverse-action notice. */
  adverse_action?: string;
  product?: string;
  /** ISO 8601 date-times: created_at >= from, created_at < to. */
  from?: string;
  to?: string;
}

export interface DecisionSummary {
  decision_id: string;
  application_id: string;
  consumer_id: string;
  product: string;
  status: 'complete' | 'needs_consumer_action';
  outcome: Outcome;
  kyc_tier: string;
  kyc_status: string;
  currency: string;
  requested_amount: string;
  approved_amount: string | null;
  plan: string | null;
  term_months: number | null;
  apr: string | null;
  score: number | null;
  risk_grade: string | null;
  reason_codes: string[];
  /** The adverse action taken (a notice is owed): a decline, or an approval that is a counteroffer. */
  adverse_action: 'declined' | 'counteroffer' | null;
  /** The last day to send the adverse-action notice (YYYY-MM-DD); null without adverse action. */
  notice_due_by: string | null;
  engine_version: string | null;
  latency_ms: number | null;
  created_at: string;
  completed_at: string | null;
}

export interface PartialScore {
  characteristic: string;
  feature: string;
  value: unknown;
  attribute: string;
  data_present: boolean;
  points: number;
  max_points: number;
  points_below_maximum: number;
  reason_code: string;
  reason: string | null;
}

export interface DecisionAttempt {
  id: string;
  attempt: number;
  request_headers: Record<string, string>;
  request_body: string;
  response_status: number | null;
  response_body: string | null;
  duration_ms: number;
  error_kind: string | null;
  error_detail: string | null;
  created_at: string;
}

export interface DecisionDelivery {
  id: string;
  endpoint_id: string;
  endpoint_url: string | null;
  event_id: string;
  event_type: string;
  state: 'pending' | 'delivered' | 'failed' | 'cancelled';
  attempts: number;
  last_response_status: number | null;
  finished_at: string | null;
  created_at: string;
  attempt_history: DecisionAttempt[];
}

export interface DecisionDetail {
  summary: DecisionSummary;
  decision: Record<string, unknown>;
  explanation: {
    inputs: unknown;
    features: unknown;
    partial_scores: PartialScore[];
    reasons: Array<{ code: string; reason: string }>;
    /** An approval for less than requested: why not the full amount (empty otherwise). */
    counteroffer_reasons: Array<{ code: string; reason: string }>;
    score: number | null;
    /** FCRA 615(a): what a notice discloses when this score was used in adverse action; null when nothing was scored. */
    credit_score_disclosure: {
      score: number;
      range: { min: number; max: number } | null;
      scored_at: string | null;
      scorecard: string | null;
      credit_file_source: string | null;
      key_factors: Array<{ code: string; reason: string | null }>;
    } | null;
    risk_grade: string | null;
    confidence: number | null;
    versions: { engine_version: string | null; engine: string | null; scorecard: string | null; policy: string | null };
    kyc: unknown;
    offer: unknown;
    timings: Record<string, unknown>;
    record: unknown;
  };
  events: Array<{ id: string; type: string; subject_id: string | null; data: unknown; created_at: string }>;
  deliveries: DecisionDelivery[];
}

export interface DecisionPage {
  data: DecisionSummary[];
  limit: number;
  next_cursor: string | null;
  has_more: boolean;
}

const base = (env: Environment) => `/decisions/${env}`;

export const decisionsApi = {
  list: (env: Environment, filters: DecisionFilters, cursor: string | null) => api.get<DecisionPage>(base(env), { ...filters, limit: 25, cursor }),
  get: (env: Environment, id: string) => api.get<DecisionDetail>(`${base(env)}/${id}`),
  /** A plain link: the browser downloads the file itself (cookie sent, Content-Disposition: attachment). */
  csvUrl: (env: Environment, filters: DecisionFilters) => withQuery(`/portal/api${base(env)}/export.csv`, { ...filters }),
};
