import { api } from '../../../lib/api-client';
import type { Environment } from '../../../lib/environment';

/** A dealership in the lender's network, as the service presents it (one per environment). */
export interface Dealer {
  id: string;
  environment: Environment;
  name: string;
  license_number: string | null;
  /** USPS two-letter code, or null when not recorded. */
  state: string | null;
  status: 'active' | 'disabled';
  created_at: string;
  updated_at: string;
  disabled_at: string | null;
}

/** What Add and Edit send: null clears an optional field. */
export interface DealerInput {
  name: string;
  license_number: string | null;
  state: string | null;
}

const base = (env: Environment) => `/dealers/${env}/dealers`;

export const dealersApi = {
  list: (env: Environment) => api.get<{ data: Dealer[] }>(base(env)),
  create: (env: Environment, input: DealerInput) => api.post<Dealer>(base(env), input),
  update: (env: Environment, id: string, input: Partial<DealerInput>) => api.patch<Dealer>(`${base(env)}/${id}`, input),
  disable: (env: Environment, id: string) => api.post<Dealer>(`${base(env)}/${id}/disable`),
  enable: (env: Environment, id: string) => api.post<Dealer>(`${base(env)}/${id}/enable`),
};
