import { api, type Page } from '../../../lib/api-client';
import type { Environment } from '../../../lib/environment';

export interface ApiKey {
  id: string;
  environment: Environment;
  label: string | null;
  last4: string;
  status: 'active' | 'revoked';
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export const apiKeysApi = {
  list: (query: { environment: Environment; status?: string; page: number }) => api.get<Page<ApiKey> & { total: number }>('/api-keys', { ...query, page_size: 20 }),
  generate: (input: { environment: Environment; label?: string }) => api.post<{ key: ApiKey; secret: string }>('/api-keys', input),
  revoke: (id: string) => api.post<{ key: ApiKey }>(`/api-keys/${id}/revoke`),
};
