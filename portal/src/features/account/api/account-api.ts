import { api } from '../../../lib/api-client';

export const accountApi = {
  /** 204; every other session of the signed-in user ends, this one stays. */
  changePassword: (input: { current_password: string; new_password: string }) => api.post<void>('/account/password', input),
};
