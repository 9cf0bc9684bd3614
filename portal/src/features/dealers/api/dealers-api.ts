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
  /** 1 when added, one more on each edit; an edit sends the one it loaded (409 if it moved on). */
  version: number;
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
  get: (env: Environment, id: string) => api.get<Dealer>(`${base(env)}/${id}`),
  create: (env: Environment, input: DealerInput) => api.post<Dealer>(base(env), input),
  /** `expectedVersion`: the version the form loaded; another person's edit since then is 409 `dealer_version_conflict`. */
  update: (env: Environment, id: string, input: Partial<DealerInput>, expectedVersion: number) => api.patch<Dealer>(`${base(env)}/${id}`, { expected_version: expectedVersion, ...input }),
  disable: (env: Environment, id: string) => api.post<Dealer>(`${base(env)}/${id}/disable`),
  enable: (env: Environment, id: string) => api.post<Dealer>(`${base(env)}/${id}/enable`),
};
