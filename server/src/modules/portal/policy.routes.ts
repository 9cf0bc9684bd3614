/**
 * Credit policy versions per environment and product, on the credit-policy service (which owns
 * every rule: numbering, validation, the sandbox test, the atomic promote, caching). The
 * environment and product are in the path, the tenant comes from the session: a version of another
 * tenant, environment or product is "not found". Reading is for every role (`policy:read`);
 * creating, testing and promoting versions is for admins (`policy:write`).
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import type { Environment } from '../../config/config.js';
import type { PolicyVersionsTable } from '../../db/schema.js';
import type { CurrentPolicy, DraftInput, PolicyScope } from '../credit-policy/credit-policy.service.js';
import { POLICY_PRODUCT_KEYS, POLICY_PRODUCTS, type PolicyProduct } from '../credit-policy/policy-products.js';
import { ENGINE_CODE_VERSION } from '../engine/index.js';
import { PAGE_QUERY, paging, sessionOf } from './portal-http.js';

const environment = { type: 'string', enum: ['sandbox', 'live'] } as const;
const product = { type: 'string', enum: POLICY_PRODUCT_KEYS } as const;
const uuid = { type: 'string', format: 'uuid' } as const;
const envParams = { type: 'object', required: ['environment'], properties: { environment } } as const;
const productParams = { type: 'object', required: ['environment', 'product'], properties: { environment, product } } as const;
const versionParams = { type: 'object', required: ['environment', 'product', 'id'], properties: { environment, product, id: uuid } } as const;
const draftBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    document: { type: 'object' },
    document_json: { type: 'string', minLength: 1, maxLength: 60_000 },
    tables: { type: 'object' },
    base_version_id: { anyOf: [uuid, { type: 'null' }] },
    scorecard_version: { type: 'string', minLength: 1, maxLength: 100 },
    note: { type: ['string', 'null'], maxLength: 500 },
  },
} as const;

type EnvParams = { environment: Environment };
type ProductParams = EnvParams & { product: PolicyProduct };
type VersionParams = ProductParams & { id: string };
type DraftBody = { document?: unknown; document_json?: string; tables?: unknown; base_version_id?: string | null; scorecard_version?: string; note?: string | null };

export function registerPolicyRoutes(api: FastifyInstance, ctx: AppContext): void {
  const scopeOf = (request: { params: EnvParams } & Parameters<typeof sessionOf>[0]): PolicyScope => ({
    tenantId: sessionOf(request).tenantId,
    environment: request.params.environment,
  });
  const read = { permission: 'policy:read' } as const;
  const write = { permission: 'policy:write' } as const;

  /** Who created or promoted a version, by name (users of this tenant; a removed user shows by id). */
  async function peopleOf(tenantId: string): Promise<Map<string, string>> {
    const { users } = await ctx.accounts.listUsers(tenantId, { limit: 100 });
    return new Map(users.map((u) => [u.id, u.name]));
  }

  function presentVersion(row: PolicyVersionsTable, people: Map<string, string>) {
    const person = (id: string | null) => (id === null ? null : { id, name: people.get(id) ?? null });
    return {
      source: 'stored' as const,
      id: row.id,
      product: row.product,
      environment: row.environment,
      version: row.version,
      name: row.name,
      status: row.status,
      scorecard_version: row.scorecard_version,
      engine_version: `engine-${ENGINE_CODE_VERSION}+${row.scorecard_version}+${row.name}`,
      note: row.note,
      based_on: row.based_on,
      created_by: person(row.created_by),
      created_at: new Date(row.created_at).toISOString(),
      promoted_by: person(row.promoted_by),
      promoted_at: row.promoted_at === null ? null : new Date(row.promoted_at).toISOString(),
      retired_at: row.retired_at === null ? null : new Date(row.retired_at).toISOString(),
    };
  }

  function presentCurrent(current: CurrentPolicy, people: Map<string, string>) {
    if (current.source === 'stored') return presentVersion(current.version, people);
    return {
      source: 'bundled' as const,
      id: null,
      name: current.name,
      status: 'active' as const,
      scorecard_version: current.scorecardVersion,
      engine_version: `engine-${ENGINE_CODE_VERSION}+${current.scorecardVersion}+${current.name}`,
    };
  }

  function withDocument(productKey: PolicyProduct, document: unknown) {
    const view = POLICY_PRODUCTS[productKey].presentTables(document);
    return { document, tables: view.tables, tables_unavailable_reason: view.reason };
  }

  const draftInput = (body: DraftBody): DraftInput => ({
    ...(body.document !== undefined ? { document: body.document } : {}),
    ...(body.document_json !== undefined ? { documentJson: body.document_json } : {}),
    ...(body.tables !== undefined ? { tables: body.tables } : {}),
    ...(body.base_version_id !== undefined ? { baseVersionId: body.base_version_id } : {}),
    ...(body.scorecard_version !== undefined ? { scorecardVersion: body.scorecard_version } : {}),
    ...(body.note !== undefined ? { note: body.note } : {}),
  });

  api.get<{ Params: EnvParams }>('/policy/:environment', { schema: { hide: true, params: envParams }, config: read }, async (request) => {
    const scope = scopeOf(request);
    const people = await peopleOf(scope.tenantId);
    const products = [];
    for (const key of POLICY_PRODUCT_KEYS) {
      const def = POLICY_PRODUCTS[key];
      const [current, list] = await Promise.all([ctx.creditPolicy.current(scope, key), ctx.creditPolicy.listVersions(scope, key, { limit: 1, offset: 0 })]);
      products.push({
        product: key,
        label: def.label,
        current: presentCurrent(current, people),
        bundled_default: def.bundled.policyVersion,
        scorecard_versions: def.scorecardVersions(),
        version_count: list.total,
        latest: list.versions[0] ? presentVersion(list.versions[0], people) : null,
      });
    }
    return { products };
  });

  api.get<{ Params: ProductParams; Querystring: { page?: string; page_size?: string } }>(
    '/policy/:environment/:product/versions',
    { schema: { hide: true, params: productParams, querystring: { type: 'object', additionalProperties: false, properties: { ...PAGE_QUERY } } }, config: read },
    async (request) => {
      const scope = scopeOf(request);
      const { page, pageSize, offset } = paging(request.query, 20);
      const [people, list] = await Promise.all([peopleOf(scope.tenantId), ctx.creditPolicy.listVersions(scope, request.params.product, { limit: pageSize, offset })]);
      return { data: list.versions.map((v) => presentVersion(v, people)), page, page_size: pageSize, total: list.total };
    },
  );

  api.get<{ Params: ProductParams }>('/policy/:environment/:product/current', { schema: { hide: true, params: productParams }, config: read }, async (request) => {
    const scope = scopeOf(request);
    const current = await ctx.creditPolicy.current(scope, request.params.product);
    const document = current.source === 'stored' ? (JSON.parse(current.version.document_json) as unknown) : current.document;
    return { version: presentCurrent(current, await peopleOf(scope.tenantId)), ...withDocument(request.params.product, document) };
  });

  api.get<{ Params: VersionParams }>('/policy/:environment/:product/versions/:id', { schema: { hide: true, params: versionParams }, config: read }, async (request) => {
    const scope = scopeOf(request);
    const row = await ctx.creditPolicy.getVersion(scope, request.params.product, request.params.id);
    return { version: presentVersion(row, await peopleOf(scope.tenantId)), ...withDocument(request.params.product, JSON.parse(row.document_json) as unknown) };
  });

  api.post<{ Params: ProductParams; Body: DraftBody }>(
    '/policy/:environment/:product/validate',
    { schema: { hide: true, params: productParams, body: draftBody }, config: write },
    async (request) => {
      const prepared = await ctx.creditPolicy.prepare(scopeOf(request), request.params.product, draftInput(request.body));
      const view = prepared.document === null ? null : POLICY_PRODUCTS[request.params.product].presentTables(prepared.document);
      return { valid: prepared.problems.length === 0, problems: prepared.problems, scorecard_version: prepared.scorecardVersion, based_on: prepared.basedOn, tables: view?.tables ?? null };
    },
  );

  api.post<{ Params: ProductParams; Body: DraftBody }>(
    '/policy/:environment/:product/versions',
    { schema: { hide: true, params: productParams, body: draftBody }, config: write },
    async (request, reply) => {
      const scope = scopeOf(request);
      const row = await ctx.creditPolicy.createDraft(scope, request.params.product, draftInput(request.body), sessionOf(request).user.id);
      return reply.code(201).send({ version: presentVersion(row, await peopleOf(scope.tenantId)), ...withDocument(request.params.product, JSON.parse(row.document_json) as unknown) });
    },
  );

  api.post<{ Params: VersionParams }>('/policy/:environment/:product/versions/:id/test', { schema: { hide: true, params: versionParams }, config: write }, async (request) => {
    const scope = scopeOf(request);
    const result = await ctx.creditPolicy.testVersion(scope, request.params.product, request.params.id);
    return {
      against: result.against,
      version: presentVersion(result.version, await peopleOf(scope.tenantId)),
      changed_count: result.rows.filter((r) => r.changed.length > 0).length,
      rows: result.rows,
    };
  });

  api.post<{ Params: VersionParams }>('/policy/:environment/:product/versions/:id/promote', { schema: { hide: true, params: versionParams }, config: write }, async (request) => {
    const scope = scopeOf(request);
    const session = sessionOf(request);
    const row = await ctx.creditPolicy.promote(scope, request.params.product, request.params.id, session.user.id);
    request.log.info({ tenant_id: scope.tenantId, environment: scope.environment, product: row.product, policy_version: row.name, promoted_by: session.user.id }, 'credit policy version promoted');
    return { version: presentVersion(row, await peopleOf(scope.tenantId)) };
  });
}
