import { api } from '../../../lib/api-client';
import type { SessionInfo } from '../../../lib/session';

export const accountApi = {
  /** Every session of the signed-in user ends; this browser gets a new one (cookie and CSRF token), returned as a sign-in's. */
  changePassword: (input: { current_password: string; new_password: string }) => api.post<SessionInfo>('/account/password', input),
};
