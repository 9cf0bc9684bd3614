import { api } from '../../../lib/api-client';

export interface SeededConsumer {
  id: string;
  name: string;
  tier: 'soft' | 'enhanced' | 'hard' | null;
}

export const overviewApi = {
  seededConsumers: () => api.get<{ data: SeededConsumer[] }>('/sandbox/consumers', { seeded: 'true', page_size: 3 }),
};
