/**
 * The one way the web app talks to the service: JSON to /portal/api, the session cookie sent by
 * the browser (same origin), and the CSRF token echoed in X-CSRF-Token on every state change.
 * Errors arrive as the service's stable body {error, message, request_id} and become ApiError.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

let csrfToken = '';
let onUnauthenticated: (() => void) | null = null;

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

/** Called when a request finds the session gone (expired or signed out elsewhere). */
export function setUnauthenticatedHandler(handler: (() => void) | null): void {
  onUnauthenticated = handler;
}

export type Query = Record<string, string | number | boolean | null | undefined>;

export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const s = params.toString();
  return s ? `${path}?${s}` : path;
}

export async function apiRequest<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown, retried = false): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(`/portal/api${path}`, { method, headers, credentials: 'same-origin', ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  } catch {
    throw new ApiError(0, 'network_error', 'The service could not be reached. Check your connection and try again.', null);
  }
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  const data = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  if (!response.ok) {
    const error = new ApiError(response.status, String(data.error ?? 'error'), String(data.message ?? response.statusText), typeof data.request_id === 'string' ? data.request_id : null);
    // Another tab renewed this browser's session (a sign-in, a password change): the cookie is new
    // and this tab's CSRF token is the old session's. Take the current one and try once more.
    // (GET /session answers with the current token, which every answer's csrf_token sets below.)
    if (error.code === 'invalid_csrf_token' && !retried) {
      await apiRequest('GET', '/session', undefined, true).catch(() => {
        throw error;
      });
      return apiRequest<T>(method, path, body, true);
    }
    if (error.code === 'not_authenticated') onUnauthenticated?.();
    throw error;
  }
  if (typeof data.csrf_token === 'string') csrfToken = data.csrf_token;
  return data as T;
}

export const api = {
  get: <T>(path: string, query?: Query) => apiRequest<T>('GET', withQuery(path, query)),
  post: <T>(path: string, body: unknown = {}) => apiRequest<T>('POST', path, body),
  put: <T>(path: string, body: unknown) => apiRequest<T>('PUT', path, body),
  patch: <T>(path: string, body: unknown) => apiRequest<T>('PATCH', path, body),
  delete: (path: string) => apiRequest<void>('DELETE', path),
};

/** A page of a server-side paged table. */
export interface Page<T> {
  data: T[];
  page: number;
  page_size: number;
  total?: number;
  has_more?: boolean;
}
