/**
 * The announced products (interface.md, Coming soon; decisions.md section 8): mortgage, personal
 * loan and credit card. Their create and poll paths exist so a caller gets a clear, stable answer,
 * 404 `product_not_available` naming the product, instead of a generic `not_found`. They sit in
 * the /v1 scope, so authentication and rate limits apply first (no key is still 401). Bodies are
 * not read or validated: there is no shape to validate against yet.
 */
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../http/errors/error-registry.js';
import { errorResponses } from '../../http/openapi.js';

export const COMING_SOON_PRODUCTS = [
  { path: 'mortgage', name: 'Mortgage' },
  { path: 'personal-loan', name: 'Personal loan' },
  { path: 'credit-card', name: 'Credit card' },
] as const;

export function comingSoonMessage(name: string): string {
  return `${name} decisions are coming soon and not available yet; BNPL and auto-loan decisions are available now.`;
}

export function registerComingSoonRoutes(v1: FastifyInstance): void {
  for (const { path, name } of COMING_SOON_PRODUCTS) {
    const fail = async (): Promise<never> => {
      throw new ApiError('product_not_available', comingSoonMessage(name));
    };
    const tags = ['Coming soon'];
    v1.post(
      `/decisions/${path}`,
      {
        schema: {
          operationId: `create${name.replace(' ', '')}Decision`,
          tags,
          summary: `${name} decisions (coming soon)`,
          description: 'Announced, not available yet: answers 404 `product_not_available`.',
          response: errorResponses(400, 401, 404, 413, 415, 429),
        },
      },
      fail,
    );
    v1.get(
      `/decisions/${path}/:decision_id`,
      {
        schema: {
          operationId: `get${name.replace(' ', '')}Decision`,
          tags,
          summary: `Poll a ${name.toLowerCase()} decision (coming soon)`,
          description: 'Announced, not available yet: answers 404 `product_not_available`.',
          response: errorResponses(401, 404, 429),
        },
      },
      fail,
    );
  }
}
