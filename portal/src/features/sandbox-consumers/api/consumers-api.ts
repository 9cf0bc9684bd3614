import { api, type Page } from '../../../lib/api-client';

export interface SandboxConsumer {
  id: string;
  name: string;
  email: string;
  phone: string | null;
  tier: 'soft' | 'enhanced' | 'hard' | null;
  seeded: boolean;
  identity_status: 'unverified' | 'verified' | 'failed';
  linked_accounts: Array<{ type: string; institution: string; mask: string }>;
  history_reset_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface Application {
  decision_id: string;
  status: string;
  outcome: string | null;
  kyc_tier: string;
  kyc_status: string;
  currency: string;
  requested_amount: string;
  approved_amount: string | null;
  plan: string | null;
  created_at: string;
}

export const consumersApi = {
  list: (query: { search?: string; seeded?: string; page: number }) => api.get<Page<SandboxConsumer> & { total: number }>('/sandbox/consumers', { ...query, page_size: 20 }),
  get: (id: string) => api.get<{ consumer: SandboxConsumer }>(`/sandbox/consumers/${id}`),
  applications: (id: string, page: number) => api.get<Page<Application> & { total: number }>(`/sandbox/consumers/${id}/applications`, { page, page_size: 10 }),
  reset: (id: string) => api.post<{ consumer: SandboxConsumer }>(`/sandbox/consumers/${id}/reset`),
};
