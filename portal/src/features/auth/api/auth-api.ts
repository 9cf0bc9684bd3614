import { api } from '../../../lib/api-client';
import type { Role, SessionInfo } from '../../../lib/session';

export type SignUpResponse = SessionInfo & { sandbox_api_key: string };

export const authApi = {
  signUp: (input: { company_name: string; name: string; email: string; password: string }) => api.post<SignUpResponse>('/signup', input),
  signIn: (input: { email: string; password: string }) => api.post<SessionInfo>('/login', input),
  lookUpInvitation: (token: string) => api.post<{ email: string; role: Role; tenant_name: string; expires_at: string }>('/invitation-links/lookup', { token }),
  acceptInvitation: (input: { token: string; name: string; password: string }) => api.post<SessionInfo>('/invitation-links/accept', input),
  lookUpPasswordReset: (token: string) => api.post<{ email: string; tenant_name: string; expires_at: string }>('/password-reset-links/lookup', { token }),
  acceptPasswordReset: (input: { token: string; password: string }) => api.post<SessionInfo>('/password-reset-links/accept', input),
};
