/**
 * Webhook endpoints per environment, on the webhooks service (which owns every rule: https only,
 * SSRF guard, 16 per environment, sealed secrets, rotation overlap, re-enable, resend). The
 * environment is part of the path, the tenant comes from the session: an endpoint or delivery of
 * another tenant or environment is "not found".
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import type { Environment } from '../../config/config.js';
import type { WebhookDeliveriesTable } from '../../db/schema.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { allowedValuesMessage } from '../../http/errors/messages.js';
import { EVENT_TYPES } from '../events/outbox.js';
import { MAX_ROTATION_OVERLAP_MS, type WebhookScope } from '../webhooks/webhooks.service.js';
import { EXPECTED_VERSION, PAGE_QUERY, paging, requireSomeChange, sessionOf } from './portal-http.js';
import { presentAttempt, presentDelivery, presentEndpoint } from './portal.presenter.js';

const environment = { type: 'string', enum: ['sandbox', 'live'] } as const;
const uuid = { type: 'string', format: 'uuid' } as const;
const envParams = { type: 'object', required: ['environment'], properties: { environment } } as const;
const endpointParams = { type: 'object', required: ['environment', 'id'], properties: { environment, id: uuid } } as const;
// The rule in one sentence on both branches: with anyOf the first branch's refusal is what is
// reported, and "must be a string, not an array" was false of an empty list.
const EVENTS_RULE = 'must be "*" (every event type) or a list of 1 to 50 event types';
const events = {
  anyOf: [
    { type: 'string', enum: ['*'], 'x-error': EVENTS_RULE },
    { type: 'array', minItems: 1, maxItems: 50, items: { type: 'string', maxLength: 100 }, 'x-error': EVENTS_RULE },
  ],
} as const;
const HOUR = 3600_000;

type EnvParams = { environment: Environment };
type EndpointParams = EnvParams & { id: string };
type EndpointBody = { url: string; description?: string | null; events?: '*' | string[] };

export function registerWebhooksRoutes(api: FastifyInstance, ctx: AppContext): void {
  const scopeOf = (request: { params: EnvParams } & Parameters<typeof sessionOf>[0]): WebhookScope => ({
    tenantId: sessionOf(request).tenantId,
    environment: request.params.environment,
  });
  const read = { permission: 'webhooks:read' } as const;
  const write = { permission: 'webhooks:write' } as const;

  api.get('/webhooks/event-types', { schema: { hide: true }, config: read }, async () => ({ data: EVENT_TYPES }));

  api.get<{ Params: EnvParams }>('/webhooks/:environment/endpoints', { schema: { hide: true, params: envParams }, config: read }, async (request) => ({
    data: (await ctx.webhooks.listEndpoints(scopeOf(request))).map(presentEndpoint),
  }));

  api.post<{ Params: EnvParams; Body: EndpointBody }>(
    '/webhooks/:environment/endpoints',
    {
      schema: {
        hide: true,
        params: envParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['url'],
          properties: { url: { type: 'string', minLength: 1, maxLength: 2048 }, description: { type: ['string', 'null'], maxLength: 500 }, events },
        },
      },
      config: write,
    },
    async (request, reply) => {
      const { endpoint, secret } = await ctx.webhooks.createEndpoint(scopeOf(request), {
        url: request.body.url,
        description: request.body.description ?? null,
        events: request.body.events ?? '*',
      });
      return reply.code(201).send({ endpoint: presentEndpoint(endpoint), secret });
    },
  );

  api.get<{ Params: EndpointParams }>('/webhooks/:environment/endpoints/:id', { schema: { hide: true, params: endpointParams }, config: read }, async (request) => ({
    endpoint: presentEndpoint(await ctx.webhooks.getEndpoint(scopeOf(request), request.params.id)),
  }));

  api.patch<{ Params: EndpointParams; Body: Partial<EndpointBody> & { expected_version: number } }>(
    '/webhooks/:environment/endpoints/:id',
    {
      schema: {
        hide: true,
        params: endpointParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['expected_version'],
          properties: { expected_version: EXPECTED_VERSION, url: { type: 'string', minLength: 1, maxLength: 2048 }, description: { type: ['string', 'null'], maxLength: 500 }, events },
        },
      },
      config: write,
    },
    async (request) => {
      const patch = {
        ...(request.body.url !== undefined ? { url: request.body.url } : {}),
        ...(request.body.description !== undefined ? { description: request.body.description } : {}),
        ...(request.body.events !== undefined ? { events: request.body.events } : {}),
      };
      requireSomeChange(patch, 'url, description and events');
      return { endpoint: presentEndpoint(await ctx.webhooks.updateEndpoint(scopeOf(request), request.params.id, patch, request.body.expected_version, sessionOf(request).user.id)) };
    },
  );

  api.delete<{ Params: EndpointParams }>('/webhooks/:environment/endpoints/:id', { schema: { hide: true, params: endpointParams }, config: write }, async (request, reply) => {
    await ctx.webhooks.deleteEndpoint(scopeOf(request), request.params.id);
    return reply.code(204).send();
  });

  api.post<{ Params: EndpointParams }>('/webhooks/:environment/endpoints/:id/test', { schema: { hide: true, params: endpointParams }, config: write }, async (request, reply) => {
    const sent = await ctx.webhooks.sendTestEvent(scopeOf(request), request.params.id);
    return reply.code(202).send({ event_id: sent.eventId, delivery_id: sent.deliveryId });
  });

  api.post<{ Params: EndpointParams; Body: { overlap_hours?: number } }>(
    '/webhooks/:environment/endpoints/:id/rotate-secret',
    {
      schema: {
        hide: true,
        params: endpointParams,
        body: { type: 'object', additionalProperties: false, properties: { overlap_hours: { type: 'integer', minimum: 0, maximum: MAX_ROTATION_OVERLAP_MS / HOUR } } },
      },
      config: write,
    },
    async (request) => {
      const overlapMs = (request.body.overlap_hours ?? 24) * HOUR;
      const rotated = await ctx.webhooks.rotateSecret(scopeOf(request), request.params.id, { overlapMs });
      return { secret: rotated.secret, previous_secret_expires_at: rotated.previousSecretExpiresAt?.toISOString() ?? null };
    },
  );

  api.post<{ Params: EndpointParams; Body: { resend_missed_since?: string } }>(
    '/webhooks/:environment/endpoints/:id/reenable',
    {
      schema: {
        hide: true,
        params: endpointParams,
        body: { type: 'object', additionalProperties: false, properties: { resend_missed_since: { type: 'string', format: 'date-time' } } },
      },
      config: write,
    },
    async (request) => {
      const scope = scopeOf(request);
      const endpoint = await ctx.webhooks.reenableEndpoint(scope, request.params.id);
      if (request.body.resend_missed_since === undefined) return { endpoint: presentEndpoint(endpoint), resent: null };
      const resent = await ctx.webhooks.resendFailedSince(scope, request.params.id, new Date(request.body.resend_missed_since));
      return { endpoint: presentEndpoint(endpoint), resent };
    },
  );

  api.post<{ Params: EndpointParams; Body: { since: string } }>(
    '/webhooks/:environment/endpoints/:id/resend-failed',
    {
      schema: {
        hide: true,
        params: endpointParams,
        body: { type: 'object', additionalProperties: false, required: ['since'], properties: { since: { type: 'string', format: 'date-time' } } },
      },
      config: write,
    },
    async (request) => ctx.webhooks.resendFailedSince(scopeOf(request), request.params.id, new Date(request.body.since)),
  );

  api.get<{ Params: EndpointParams; Querystring: { state?: WebhookDeliveriesTable['state']; event_id?: string; event_type?: string; page?: string; page_size?: string } }>(
    '/webhooks/:environment/endpoints/:id/deliveries',
    {
      schema: {
        hide: true,
        params: endpointParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            state: { type: 'string', enum: ['pending', 'delivered', 'failed', 'cancelled'] },
            event_id: uuid,
            event_type: { type: 'string', maxLength: 100 },
            ...PAGE_QUERY,
          },
        },
      },
      config: read,
    },
    async (request) => {
      const { page, pageSize, offset } = paging(request.query, 20);
      const q = request.query;
      if (q.event_type !== undefined && !(EVENT_TYPES as readonly string[]).includes(q.event_type)) throw new ApiError('invalid_request', allowedValuesMessage('event_type', 'is not a known event type', EVENT_TYPES));
      // One extra row tells whether there is a next page without counting the whole history.
      const rows = await ctx.webhooks.listDeliveries(scopeOf(request), request.params.id, {
        limit: pageSize + 1,
        offset,
        ...(q.state ? { state: q.state } : {}),
        ...(q.event_id ? { eventId: q.event_id } : {}),
        ...(q.event_type ? { eventType: q.event_type } : {}),
      });
      return { data: rows.slice(0, pageSize).map(presentDelivery), page, page_size: pageSize, has_more: rows.length > pageSize };
    },
  );

  const deliveryParams = { type: 'object', required: ['environment', 'deliveryId'], properties: { environment, deliveryId: uuid } } as const;

  api.get<{ Params: EnvParams & { deliveryId: string } }>(
    '/webhooks/:environment/deliveries/:deliveryId/attempts',
    { schema: { hide: true, params: deliveryParams }, config: read },
    async (request) => ({ data: (await ctx.webhooks.listAttempts(scopeOf(request), request.params.deliveryId)).map(presentAttempt) }),
  );

  api.post<{ Params: EnvParams & { deliveryId: string } }>(
    '/webhooks/:environment/deliveries/:deliveryId/resend',
    { schema: { hide: true, params: deliveryParams }, config: write },
    async (request) => ({ delivery: presentDelivery(await ctx.webhooks.resendDelivery(scopeOf(request), request.params.deliveryId)) }),
  );
}
