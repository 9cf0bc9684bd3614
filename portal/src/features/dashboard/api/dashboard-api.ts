import { api } from '../../../lib/api-client';
import type { Environment } from '../../../lib/environment';

export interface DashboardHour {
  hour: string;
  approved: number;
  declined: number;
  referred: number;
  pending: number;
  total: number;
  approval_rate: number | null;
  latency_count: number;
  latency_p50_ms: number | null;
  latency_p99_ms: number | null;
}

export interface DashboardData {
  environment: Environment;
  from: string;
  to: string;
  hours: DashboardHour[];
  totals: { approved: number; declined: number; referred: number; pending: number; total: number; approval_rate: number | null };
  latency: { count: number; p50_ms: number | null; p99_ms: number | null };
  pending_verifications: { as_of: string; total: number; buckets: Array<{ key: string; label: string; count: number }> };
  webhooks: Array<{ endpoint_id: string; url: string; state: string; delivered: number; failed: number; pending: number; cancelled: number; finished: number; success_rate: number | null }>;
}

export const dashboardApi = {
  get: (env: Environment, period: { from: string; to: string } | null) => api.get<DashboardData>(`/dashboard/${env}`, period ?? {}),
};
