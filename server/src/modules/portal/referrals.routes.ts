/**
 * The referral queue (underwriting workplace) on the decisions module's underwriting service, which
 * owns every rule: referred only, amounts and plans, reasons from the catalogue, optimistic
 * concurrency, the audit and the event of each action. The environment is in the path, the tenant
 * comes from the session: a decision of another tenant or environment is "not found".
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app/context.js';
import type { Environment } from '../../config/config.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { ADVERSE_ACTION_REASONS, REFERRAL_ONLY_CODES } from '../engine/index.js';
import { CONDITION_CODES, DOCUMENT_TYPES, MAX_DECLINE_REASONS, MAX_NOTE_LENGTH, type Actor } from '../decisions/underwriting.service.js';
import { PLAN_RULES, PLANS, MONTHLY_TERMS } from '../offers/schedule.js';
import { formatMoney } from '../../lib/money.js';
import { PAGE_QUERY, paging, sessionOf } from './portal-http.js';
import { can } from './permissions.js';
import { presentCondition, presentDocumentRequest, presentReferralDetail, presentReferralSummary, presentRevealed } from './underwriting.presenter.js';

const environment = { type: 'string', enum: ['sandbox', 'live'] } as const;
const envParams = { type: 'object', required: ['environment'], properties: { environment } } as const;
const decisionParams = { type: 'object', required: ['environment', 'id'], properties: { environment, id: { type: 'string', format: 'uuid' } } } as const;
const expectedVersion = { type: 'integer', minimum: 1 } as const;
const note = { type: ['string', 'null'], maxLength: MAX_NOTE_LENGTH } as const;
/** Adverse-action codes, a decline's or a counteroffer's: the service checks them against the catalogue. */
const reasonCodes = { maxItems: 25, items: { type: 'string', maxLength: 10 } } as const;

type EnvParams = { environment: Environment };
type DecisionParams = EnvParams & { id: string };

export function actorOf(request: FastifyRequest): Actor {
  const { user } = sessionOf(request);
  return { userId: user.id, name: user.name };
}

export function registerReferralsRoutes(api: FastifyInstance, ctx: AppContext): void {
  const scopeOf = (request: FastifyRequest<{ Params: EnvParams }>) => ({ tenantId: sessionOf(request).tenantId, environment: request.params.environment });
  const read = { permission: 'referrals:read' } as const;
  const act = { permission: 'referrals:act' } as const;

  /** What the action forms offer: the reasons catalogue, plan ranges, document types, condition codes. */
  api.get('/referrals/catalogue', { schema: { hide: true }, config: read }, async () => ({
    reasons: ADVERSE_ACTION_REASONS.map((r) => ({ code: r.code, reason: r.reason, allowed_on_decline: !REFERRAL_ONLY_CODES.has(r.code) })),
    max_decline_reasons: MAX_DECLINE_REASONS,
    plans: PLANS.map((plan) => ({ plan, min_amount: formatMoney(PLAN_RULES[plan].minCents), max_amount: formatMoney(PLAN_RULES[plan].maxCents) })),
    monthly_terms: MONTHLY_TERMS,
    document_types: DOCUMENT_TYPES,
    condition_codes: CONDITION_CODES,
  }));

  api.get<{ Params: EnvParams; Querystring: { page?: string; page_size?: string } }>(
    '/referrals/:environment',
    { schema: { hide: true, params: envParams, querystring: { type: 'object', additionalProperties: false, properties: PAGE_QUERY } }, config: read },
    async (request) => {
      const { page, pageSize, limit, offset } = paging(request.query, 20);
      const { items, total } = await ctx.underwriting.listReferrals(scopeOf(request), { limit, offset });
      return { data: items.map(presentReferralSummary), page, page_size: pageSize, total };
    },
  );

  api.get<{ Params: DecisionParams }>('/referrals/:environment/:id', { schema: { hide: true, params: decisionParams }, config: read }, async (request) => {
    const detail = await ctx.underwriting.getReferral(scopeOf(request), request.params.id);
    if (!detail) throw new ApiError('not_found', 'No such decision in this environment.');
    // An upload link is single use: whoever holds it can spend it. Only the roles that request
    // documents (and pass the link on) see it; a read-only role sees it masked, as the explorer
    // masks the consumer's verification link.
    const linkVisible = can(sessionOf(request).user.role, 'referrals:act');
    return { referral: presentReferralDetail(detail, await ctx.documentReview.documentsOf(detail.row.id), { uploadLinks: linkVisible }) };
  });

  api.post<{ Params: DecisionParams }>('/referrals/:environment/:id/reveal', { schema: { hide: true, params: decisionParams }, config: { permission: 'pii:reveal' } }, async (request) => ({
    applicant: presentRevealed(await ctx.underwriting.revealApplicant(scopeOf(request), request.params.id, actorOf(request))),
  }));

  // BNPL: {expected_version, amount, plan, term_months?, reason_codes?}; auto loans: {expected_version,
  // amount (the amount financed), term_months?, reason_codes?} and no plan. The service answers a plan
  // on an auto loan, or none on BNPL, with a 422 that says so; reason_codes are a counteroffer's
  // (required below the requested amount or on another plan or term, ADR 0046).
  api.post<{ Params: DecisionParams; Body: { expected_version: number; amount: string; plan?: string | null; term_months?: number | null; reason_codes?: string[] | null } }>(
    '/referrals/:environment/:id/approve',
    {
      schema: {
        hide: true,
        params: decisionParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['expected_version', 'amount'],
          properties: {
            expected_version: expectedVersion,
            amount: { type: 'string', maxLength: 20 },
            plan: { type: ['string', 'null'], maxLength: 20 },
            term_months: { type: ['integer', 'null'] },
            reason_codes: { type: ['array', 'null'], ...reasonCodes },
          },
        },
      },
      config: act,
    },
    async (request) => {
      const b = request.body;
      const row = await ctx.underwriting.approve(scopeOf(request), request.params.id, actorOf(request), {
        expectedVersion: b.expected_version,
        amount: b.amount,
        plan: b.plan ?? null,
        termMonths: b.term_months ?? null,
        reasonCodes: b.reason_codes ?? null,
      });
      request.log.info({ decisionId: row.id, userId: actorOf(request).userId, version: row.version }, 'portal: referral approved');
      return { decision: (await ctx.decisions.getDecision(scopeOf(request), row.product, row.id))!.body, version: row.version };
    },
  );

  api.post<{ Params: DecisionParams; Body: { expected_version: number; reason_codes: string[] } }>(
    '/referrals/:environment/:id/decline',
    {
      schema: {
        hide: true,
        params: decisionParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['expected_version', 'reason_codes'],
          properties: { expected_version: expectedVersion, reason_codes: { type: 'array', ...reasonCodes } },
        },
      },
      config: act,
    },
    async (request) => {
      const row = await ctx.underwriting.decline(scopeOf(request), request.params.id, actorOf(request), { expectedVersion: request.body.expected_version, reasonCodes: request.body.reason_codes });
      request.log.info({ decisionId: row.id, userId: actorOf(request).userId, version: row.version }, 'portal: referral declined');
      return { decision: (await ctx.decisions.getDecision(scopeOf(request), row.product, row.id))!.body, version: row.version };
    },
  );

  api.post<{ Params: DecisionParams; Body: { expected_version: number; document_types: string[]; note?: string | null } }>(
    '/referrals/:environment/:id/document-requests',
    {
      schema: {
        hide: true,
        params: decisionParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['expected_version', 'document_types'],
          properties: { expected_version: expectedVersion, document_types: { type: 'array', maxItems: 10, items: { type: 'string', maxLength: 40 } }, note },
        },
      },
      config: act,
    },
    async (request, reply) => {
      const b = request.body;
      const done = await ctx.underwriting.requestDocuments(scopeOf(request), request.params.id, actorOf(request), { expectedVersion: b.expected_version, documentTypes: b.document_types, note: b.note ?? null });
      return reply.code(201).send({ document_request: presentDocumentRequest(done.request), version: done.decision.version });
    },
  );

  api.post<{ Params: DecisionParams; Body: { expected_version: number; code: string; note?: string | null } }>(
    '/referrals/:environment/:id/conditions',
    {
      schema: {
        hide: true,
        params: decisionParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['expected_version', 'code'],
          properties: { expected_version: expectedVersion, code: { type: 'string', maxLength: 40 }, note },
        },
      },
      config: act,
    },
    async (request, reply) => {
      const b = request.body;
      const done = await ctx.underwriting.addCondition(scopeOf(request), request.params.id, actorOf(request), { expectedVersion: b.expected_version, code: b.code, note: b.note ?? null });
      return reply.code(201).send({ condition: presentCondition(done.condition), version: done.decision.version });
    },
  );
}
