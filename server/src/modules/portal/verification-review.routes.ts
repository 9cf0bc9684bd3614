/**
 * Verification review: failed hard-tier verifications and uploaded documents waiting for the
 * lender (kyc/document-review.service.ts). Documents are served only to roles with
 * `documents:read`, each viewing recorded, as the type sniffed from their bytes at upload, inline,
 * never cached and never content-sniffed by the browser.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app/context.js';
import type { Environment } from '../../config/config.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { PAGE_QUERY, paging, sessionOf } from './portal-http.js';
import { actorOf } from './referrals.routes.js';
import { presentReviewItem } from './underwriting.presenter.js';

const environment = { type: 'string', enum: ['sandbox', 'live'] } as const;
const uuid = { type: 'string', format: 'uuid' } as const;
const envParams = { type: 'object', required: ['environment'], properties: { environment } } as const;

type EnvParams = { environment: Environment };

const EXTENSIONS: Record<string, string> = { 'image/jpeg': 'jpg', 'image/png': 'png', 'application/pdf': 'pdf' };

export function registerVerificationReviewRoutes(api: FastifyInstance, ctx: AppContext): void {
  const scopeOf = (request: FastifyRequest<{ Params: EnvParams }>) => ({ tenantId: sessionOf(request).tenantId, environment: request.params.environment });

  api.get<{ Params: EnvParams; Querystring: { status?: 'pending' | 'reviewed' | 'all'; page?: string; page_size?: string } }>(
    '/verification-review/:environment',
    {
      schema: {
        hide: true,
        params: envParams,
        querystring: { type: 'object', additionalProperties: false, properties: { status: { type: 'string', enum: ['pending', 'reviewed', 'all'] }, ...PAGE_QUERY } },
      },
      config: { permission: 'referrals:read' },
    },
    async (request) => {
      const { page, pageSize, limit, offset } = paging(request.query, 20);
      const { items, total } = await ctx.documentReview.list(scopeOf(request), request.query.status ?? 'pending', { limit, offset });
      return { data: items.map(presentReviewItem), page, page_size: pageSize, total };
    },
  );

  api.get<{ Params: EnvParams & { documentId: string } }>(
    '/verification-review/:environment/documents/:documentId',
    { schema: { hide: true, params: { type: 'object', required: ['environment', 'documentId'], properties: { environment, documentId: uuid } } }, config: { permission: 'documents:read' } },
    async (request, reply) => {
      const doc = await ctx.documentReview.openDocument(scopeOf(request), request.params.documentId, actorOf(request));
      if (!doc) throw new ApiError('not_found', 'No such document in this environment.');
      request.log.info({ documentId: request.params.documentId, decisionId: doc.decisionId, userId: actorOf(request).userId }, 'portal: verification document viewed');
      return reply
        .type(doc.contentType)
        .header('Content-Disposition', `inline; filename="document-${request.params.documentId}.${EXTENSIONS[doc.contentType] ?? 'bin'}"`)
        .header('X-Content-Type-Options', 'nosniff')
        .header('Cache-Control', 'no-store')
        .send(doc.bytes);
    },
  );

  api.post<{ Params: EnvParams & { decisionId: string }; Body: { result: 'accepted' | 'rejected'; note?: string | null; expected_version: number } }>(
    '/verification-review/:environment/:decisionId/review',
    {
      schema: {
        hide: true,
        params: { type: 'object', required: ['environment', 'decisionId'], properties: { environment, decisionId: uuid } },
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['result', 'expected_version'],
          properties: { result: { type: 'string', enum: ['accepted', 'rejected'] }, note: { type: ['string', 'null'], maxLength: 1000 }, expected_version: { type: 'integer', minimum: 1 } },
        },
      },
      config: { permission: 'referrals:act' },
    },
    async (request) => {
      const b = request.body;
      const item = await ctx.documentReview.review(scopeOf(request), request.params.decisionId, actorOf(request), { result: b.result, note: b.note ?? null, expectedVersion: b.expected_version });
      return { item: presentReviewItem(item) };
    },
  );
}
