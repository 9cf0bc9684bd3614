/**
 * A state-changing `/v1` route that exists only in tests, to exercise the shared mechanisms
 * (idempotency, transactions, errors) independently of any product route. It goes through exactly
 * the helper real routes use. It writes a consumer row so tests can count what was committed.
 */
import { EventEmitter } from 'node:events';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../src/app/context.js';
import { ApiError } from '../../src/http/errors/error-registry.js';
import { jsonResponse, respondWithStateChange } from '../../src/http/state-change.js';

export interface ProbeBody {
  name: string;
  reject?: boolean;
  fail?: boolean;
  delay_ms?: number;
}

/** Emits 'entered' (with the probe's name) once a probe is inside its transaction: a sync point for tests instead of a sleep. */
export const probeSignals = new EventEmitter();

export function registerProbeRoutes(v1: FastifyInstance, ctx: AppContext): void {
  v1.post<{ Body: ProbeBody }>(
    '/test-probes',
    {
      schema: {
        hide: true,
        body: {
          type: 'object',
          required: ['name'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 100 },
            reject: { type: 'boolean' },
            fail: { type: 'boolean' },
            delay_ms: { type: 'integer', minimum: 0, maximum: 10_000 },
          },
        },
      },
    },
    async (request, reply) =>
      respondWithStateChange(ctx, request, reply, async () => async (trx) => {
        const id = ctx.random.uuid();
        const now = ctx.clock.now().getTime();
        await trx
          .insertInto('consumers')
          .values({
            id, tenant_id: request.auth.tenantId, environment: request.auth.environment, first_name: request.body.name, last_name: 'Probe',
            email: 'probe@example.com', phone: null, dob: '1990-01-01', address_json: '{}', ssn_last4_sealed: null,
            identity_status: 'unverified', sandbox_profile: null, linked_accounts_json: '[]', created_at: now, updated_at: now,
          })
          .execute();
        probeSignals.emit('entered', request.body.name);
        if (request.body.delay_ms) await new Promise((r) => setTimeout(r, request.body.delay_ms));
        if (request.body.fail) throw new Error('probe failure with internal detail: secret-table-name');
        if (request.body.reject) throw new ApiError('unprocessable_entity', 'The probe was asked to refuse.');
        return jsonResponse(200, { id, name: request.body.name, created: now });
      }),
  );

  v1.get('/test-probes/boom', { schema: { hide: true } }, async () => {
    throw new Error('internal detail that must not leak: password=hunter2');
  });
}

/** Count probe rows committed for a tenant. */
export async function countProbes(ctx: AppContext, tenantId: string, name?: string): Promise<number> {
  let q = ctx.storage.db.selectFrom('consumers').select((eb) => eb.fn.countAll<number>().as('n')).where('tenant_id', '=', tenantId).where('last_name', '=', 'Probe');
  if (name !== undefined) q = q.where('first_name', '=', name);
  const row = await q.executeTakeFirstOrThrow();
  return Number(row.n);
}
