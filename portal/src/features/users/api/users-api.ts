import { api, type Page } from '../../../lib/api-client';
import type { Role } from '../../../lib/session';

export interface TeamMember {
  id: string;
  email: string;
  name: string;
  role: Role;
  created_at: string;
  last_login_at: string | null;
}

export interface Invitation {
  id: string;
  email: string;
  role: Role;
  created_at: string;
  expires_at: string;
}

/** A one-time link for a member to set a new password (shown once; 24 hours). */
export interface PasswordReset {
  reset_url: string;
  expires_at: string;
  user: TeamMember;
}

export const usersApi = {
  list: (page: number) => api.get<Page<TeamMember> & { total: number }>('/users', { page, page_size: 25 }),
  changeRole: (id: string, role: Role) => api.patch<{ user: TeamMember }>(`/users/${id}`, { role }),
  remove: (id: string) => api.delete(`/users/${id}`),
  invitations: () => api.get<{ data: Invitation[] }>('/invitations'),
  invite: (email: string, role: Role) => api.post<{ invitation: Invitation; invite_url: string }>('/invitations', { email, role }),
  revokeInvitation: (id: string) => api.delete(`/invitations/${id}`),
  createPasswordReset: (id: string) => api.post<PasswordReset>(`/users/${id}/password-reset`, {}),
};
