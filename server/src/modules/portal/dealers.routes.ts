/**
 * Dealers per environment (auto-loan tenants), on the dealers service, which owns the lifecycle and
 * its events. The environment is in the path, the tenant comes from the session: a dealer of
 * another tenant or environment is "not found". Every role reads; admins and developers change.
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import type { Environment } from '../../config/config.js';
import type { Dealer, DealerScope } from '../dealers/dealers.service.js';
import { USPS_STATE_CODES } from '../decisions/bnpl.schemas.js';
import { EXPECTED_VERSION, requireSomeChange, sessionOf } from './portal-http.js';

const environment = { type: 'string', enum: ['sandbox', 'live'] } as const;
const envParams = { type: 'object', required: ['environment'], properties: { environment } } as const;
const dealerParams = { type: 'object', required: ['environment', 'id'], properties: { environment, id: { type: 'string', format: 'uuid' } } } as const;
const fields = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  license_number: { type: ['string', 'null'], maxLength: 50 },
  state: { anyOf: [{ type: 'string', enum: [...USPS_STATE_CODES] }, { type: 'null' }] },
} as const;

type EnvParams = { environment: Environment };
type DealerParams = EnvParams & { id: string };
type DealerBody = { name: string; license_number?: string | null; state?: string | null };

/** Wire shape of a dealer in the portal API (snake_case, ISO timestamps). */
export function presentDealer(d: Dealer) {
  return {
    id: d.id,
    environment: d.environment,
    name: d.name,
    license_number: d.licenseNumber,
    state: d.state,
    status: d.status,
    created_at: d.createdAt.toISOString(),
    updated_at: d.updatedAt.toISOString(),
    disabled_at: d.disabledAt ? d.disabledAt.toISOString() : null,
    version: d.version,
  };
}

export function registerDealersRoutes(api: FastifyInstance, ctx: AppContext): void {
  const scopeOf = (request: { params: EnvParams } & Parameters<typeof sessionOf>[0]): DealerScope => ({
    tenantId: sessionOf(request).tenantId,
    environment: request.params.environment,
  });
  const read = { permission: 'dealers:read' } as const;
  const write = { permission: 'dealers:write' } as const;

  api.get<{ Params: EnvParams }>('/dealers/:environment/dealers', { schema: { hide: true, params: envParams }, config: read }, async (request) => ({
    data: (await ctx.dealers.listDealers(scopeOf(request))).map(presentDealer),
  }));

  api.post<{ Params: EnvParams; Body: DealerBody }>(
    '/dealers/:environment/dealers',
    { schema: { hide: true, params: envParams, body: { type: 'object', additionalProperties: false, required: ['name'], properties: fields } }, config: write },
    async (request, reply) => {
      const { name, license_number, state } = request.body;
      const dealer = await ctx.dealers.addDealer(scopeOf(request), { name, licenseNumber: license_number ?? null, state: state ?? null });
      return reply.code(201).send(presentDealer(dealer));
    },
  );

  api.get<{ Params: DealerParams }>('/dealers/:environment/dealers/:id', { schema: { hide: true, params: dealerParams }, config: read }, async (request) =>
    presentDealer(await ctx.dealers.getDealer(scopeOf(request), request.params.id)),
  );

  api.patch<{ Params: DealerParams; Body: Partial<DealerBody> & { expected_version: number } }>(
    '/dealers/:environment/dealers/:id',
    {
      schema: {
        hide: true,
        params: dealerParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['expected_version'],
          properties: { expected_version: EXPECTED_VERSION, ...fields },
        },
      },
      config: write,
    },
    async (request) => {
      const { expected_version: expectedVersion, name, license_number, state } = request.body;
      const patch = {
        ...(name !== undefined ? { name } : {}),
        ...(license_number !== undefined ? { licenseNumber: license_number } : {}),
        ...(state !== undefined ? { state } : {}),
      };
      requireSomeChange(patch, 'name, license_number and state');
      return presentDealer(await ctx.dealers.updateDealer(scopeOf(request), request.params.id, patch, expectedVersion, sessionOf(request).user.id));
    },
  );

  api.post<{ Params: DealerParams }>('/dealers/:environment/dealers/:id/disable', { schema: { hide: true, params: dealerParams }, config: write }, async (request) =>
    presentDealer(await ctx.dealers.disableDealer(scopeOf(request), request.params.id)),
  );

  api.post<{ Params: DealerParams }>('/dealers/:environment/dealers/:id/enable', { schema: { hide: true, params: dealerParams }, config: write }, async (request) =>
    presentDealer(await ctx.dealers.enableDealer(scopeOf(request), request.params.id)),
  );
}
