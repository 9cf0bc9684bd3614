/**
 * GET /v1/events and GET /v1/events/{event_id}: the event history (docs/events.md). Thin: the
 * query is checked (the schema for shapes, this file for the event types and the time window),
 * the events service reads, and each event is written as the webhook envelope without `attempt`.
 * Bodies are assembled around the stored `data` text, so an event read here is byte-for-byte the
 * `data` its webhooks carried.
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import { ApiError } from '../../http/errors/error-registry.js';
import { allowedValuesMessage } from '../../http/errors/messages.js';
import { errorResponses } from '../../http/openapi.js';
import { eventEnvelopeJson } from './envelope.js';
import { EVENT_PAGE_DEFAULT, EVENT_PAGE_MAX } from './events.service.js';
import { EVENT_TYPES } from './outbox.js';

const unixSeconds = {
  type: 'string',
  pattern: '^[0-9]{1,11}$',
  'x-error': 'must be a time in unix seconds (a whole number such as 1769428800)',
} as const;

const listQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: {
      type: 'string',
      pattern: '^(100|[1-9][0-9]?)$',
      'x-error': `must be a whole number from 1 to ${EVENT_PAGE_MAX}`,
      description: `Page size, 1 to ${EVENT_PAGE_MAX} (default ${EVENT_PAGE_DEFAULT}).`,
    },
    type: {
      type: ['string', 'array'],
      items: { type: 'string', maxLength: 100 },
      maxItems: EVENT_TYPES.length,
      maxLength: 2000,
      'x-error': 'must be event types, comma-separated or the parameter repeated',
      description: 'Only events of these types: `type=decision.finalized,decision.adjusted` or `type=a&type=b`.',
    },
    created_gte: { ...unixSeconds, description: 'Only events created at or after this time (unix seconds, inclusive).' },
    created_lt: { ...unixSeconds, description: 'Only events created before this time (unix seconds, exclusive).' },
    starting_after: {
      type: 'string',
      format: 'uuid',
      'x-error': 'must be an event id (a UUID): the next_cursor of the previous page',
      description: 'Cursor: the `next_cursor` of the previous page (the id of its last, oldest event).',
    },
  },
} as const;

const eventIdParamsSchema = {
  type: 'object',
  required: ['event_id'],
  additionalProperties: false,
  properties: { event_id: { type: 'string', format: 'uuid', 'x-error': 'must be an event id (a UUID)' } },
} as const;

const envelopeSchema = {
  type: 'object',
  description: 'The webhook envelope without `attempt` (which belongs to a delivery, not to the event). `data` is exactly what the webhooks carry.',
  required: ['id', 'type', 'created', 'data'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', format: 'uuid', description: 'The event id; the same as `Svc-Webhook-Id` on its deliveries.' },
    type: { type: 'string', enum: [...EVENT_TYPES] },
    created: { type: 'integer', description: 'Unix seconds when the event was committed.' },
    data: { type: 'object', additionalProperties: true, description: 'The event-specific payload (docs/webhooks.md, Event types).' },
  },
} as const;

const listSchema = {
  type: 'object',
  required: ['object', 'data', 'has_more', 'next_cursor'],
  additionalProperties: false,
  properties: {
    object: { type: 'string', enum: ['list'] },
    data: { type: 'array', items: envelopeSchema, description: 'Newest first.' },
    has_more: { type: 'boolean', description: 'True when older events match the query.' },
    next_cursor: { type: ['string', 'null'], description: 'Send as `starting_after` for the next (older) page; null on the last page.' },
  },
} as const;

interface ListQuery {
  limit?: string;
  type?: string | string[];
  created_gte?: string;
  created_lt?: string;
  starting_after?: string;
}

/** `type` as given (comma-separated, repeated, or both) -> the distinct types; unknown ones are a 400 naming them. */
export function parseEventTypesParam(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  const parts = (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(',')).map((t) => t.trim());
  if (parts.some((p) => p === '')) throw new ApiError('invalid_request', 'type has an empty entry; send event types separated by commas, such as type=decision.finalized,decision.adjusted.');
  const unknown = parts.filter((p) => !(EVENT_TYPES as readonly string[]).includes(p));
  if (unknown.length > 0) {
    const shown = unknown.slice(0, 3).map((u) => JSON.stringify(u.slice(0, 60))).join(', ');
    throw new ApiError('invalid_request', allowedValuesMessage(`type ${shown}`, unknown.length === 1 ? 'is not an event type' : 'are not event types', EVENT_TYPES));
  }
  return [...new Set(parts)];
}

export function registerEventRoutes(v1: FastifyInstance, ctx: AppContext): void {
  v1.get<{ Querystring: ListQuery }>(
    '/events',
    {
      schema: {
        operationId: 'listEvents',
        tags: ['Events'],
        summary: 'List events (the last 30 days)',
        description:
          'The events of this API key\'s tenant and environment, newest first, each in the webhook envelope (without `attempt`). ' +
          'Page with `starting_after` = the previous page\'s `next_cursor`. Only the last 30 days are kept here; ' +
          'an older `created_gte` is treated as 30 days ago. Use it to recover what a webhook receiver missed.',
        querystring: listQuerySchema,
        response: { 200: listSchema, ...errorResponses(400, 401, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      const q = request.query;
      const types = parseEventTypesParam(q.type);
      const createdGteMs = q.created_gte === undefined ? undefined : Number(q.created_gte) * 1000;
      const createdLtMs = q.created_lt === undefined ? undefined : Number(q.created_lt) * 1000;
      if (createdGteMs !== undefined && createdLtMs !== undefined && createdLtMs <= createdGteMs) {
        throw new ApiError('invalid_request', `created_lt (${q.created_lt}) must be later than created_gte (${q.created_gte}); the window [created_gte, created_lt) is empty.`);
      }
      const limit = q.limit === undefined ? EVENT_PAGE_DEFAULT : Number(q.limit);
      const page = await ctx.events.listEvents(request.auth, {
        types,
        limit,
        ...(createdGteMs !== undefined ? { createdGteMs } : {}),
        ...(createdLtMs !== undefined ? { createdLtMs } : {}),
        ...(q.starting_after !== undefined ? { startingAfter: q.starting_after.toLowerCase() } : {}),
      });
      const last = page.events[page.events.length - 1];
      const nextCursor = page.hasMore && last ? JSON.stringify(last.id) : 'null';
      const body = `{"object":"list","data":[${page.events.map((e) => eventEnvelopeJson(e)).join(',')}],"has_more":${page.hasMore},"next_cursor":${nextCursor}}`;
      return reply.type('application/json; charset=utf-8').send(body);
    },
  );

  v1.get<{ Params: { event_id: string } }>(
    '/events/:event_id',
    {
      schema: {
        operationId: 'getEvent',
        tags: ['Events'],
        summary: 'Retrieve an event',
        description: 'One event of this API key\'s tenant and environment from the last 30 days, in the webhook envelope (without `attempt`).',
        params: eventIdParamsSchema,
        response: { 200: envelopeSchema, ...errorResponses(400, 401, 404, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      const event = await ctx.events.getEvent(request.auth, request.params.event_id.toLowerCase());
      if (!event) throw new ApiError('not_found', 'No event with this event_id exists for this API key in the last 30 days.');
      return reply.type('application/json; charset=utf-8').send(eventEnvelopeJson(event));
    },
  );
}
