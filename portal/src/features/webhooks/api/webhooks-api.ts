import { api, type Page } from '../../../lib/api-client';
import type { Environment } from '../../../lib/environment';

export interface WebhookEndpoint {
  id: string;
  environment: Environment;
  url: string;
  description: string | null;
  events: string[];
  state: 'active' | 'disabled';
  disabled_reason: string | null;
  disabled_at: string | null;
  consecutive_failures: number;
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
  /** 1 when created, one more on each edit (URL, description, events); an edit sends the one it loaded (409 if it moved on). */
  version: number;
}

export interface WebhookDelivery {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  state: 'pending' | 'delivered' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_response_status: number | null;
  last_error_kind: string | null;
  finished_at: string | null;
  created_at: string;
}

export interface WebhookAttempt {
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

export type EndpointInput = { url: string; description: string | null; events: '*' | string[] };

const base = (env: Environment) => `/webhooks/${env}`;

export const webhooksApi = {
  eventTypes: () => api.get<{ data: string[] }>('/webhooks/event-types'),
  list: (env: Environment) => api.get<{ data: WebhookEndpoint[] }>(`${base(env)}/endpoints`),
  get: (env: Environment, id: string) => api.get<{ endpoint: WebhookEndpoint }>(`${base(env)}/endpoints/${id}`),
  create: (env: Environment, input: EndpointInput) => api.post<{ endpoint: WebhookEndpoint; secret: string }>(`${base(env)}/endpoints`, input),
  /** `expectedVersion`: the version the form loaded; another person's edit since then is 409 `endpoint_version_conflict`. */
  update: (env: Environment, id: string, input: Partial<EndpointInput>, expectedVersion: number) =>
    api.patch<{ endpoint: WebhookEndpoint }>(`${base(env)}/endpoints/${id}`, { expected_version: expectedVersion, ...input }),
  remove: (env: Environment, id: string) => api.delete(`${base(env)}/endpoints/${id}`),
  sendTest: (env: Environment, id: string) => api.post<{ event_id: string; delivery_id: string }>(`${base(env)}/endpoints/${id}/test`),
  rotate: (env: Environment, id: string, overlapHours: number) => api.post<{ secret: string; previous_secret_expires_at: string | null }>(`${base(env)}/endpoints/${id}/rotate-secret`, { overlap_hours: overlapHours }),
  reenable: (env: Environment, id: string, resendMissedSince: string | null) =>
    api.post<{ endpoint: WebhookEndpoint; resent: { requeued: number; recovered: number } | null }>(`${base(env)}/endpoints/${id}/reenable`, resendMissedSince ? { resend_missed_since: resendMissedSince } : {}),
  deliveries: (env: Environment, id: string, query: { state?: string; event_type?: string; event_id?: string; page: number }) =>
    api.get<Page<WebhookDelivery>>(`${base(env)}/endpoints/${id}/deliveries`, { ...query, page_size: 15 }),
  attempts: (env: Environment, deliveryId: string) => api.get<{ data: WebhookAttempt[] }>(`${base(env)}/deliveries/${deliveryId}/attempts`),
  resend: (env: Environment, deliveryId: string) => api.post<{ delivery: WebhookDelivery }>(`${base(env)}/deliveries/${deliveryId}/resend`),
};
