/**
 * Operations endpoints, outside `/v1` and without authentication:
 * `/healthz` says the process is alive (never touches the database, so an orchestrator does not
 * restart a healthy process because the database blinked); `/readyz` says it can serve traffic:
 * the database answers and the process is not draining for shutdown (a load balancer's check).
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app/context.js';
import { pingDatabase } from '../../db/database.js';
import { ApiError } from '../errors/error-registry.js';
import type { ServerLifecycle } from '../build-app.js';

const healthSchema = {
  type: 'object',
  properties: { status: { type: 'string' } },
  required: ['status'],
} as const;

export function registerSystemRoutes(app: FastifyInstance, ctx: AppContext, lifecycle: ServerLifecycle): void {
  app.get('/healthz', { schema: { hide: true, response: { 200: healthSchema } } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true, response: { 200: healthSchema } } }, async () => {
    if (lifecycle.draining) {
      throw new ApiError('service_unavailable', 'This process is shutting down; send new requests to another instance.', { 'Retry-After': '1' });
    }
    try {
      await pingDatabase(ctx.storage.db);
    } catch {
      throw new ApiError('service_unavailable', 'The database is not reachable.', { 'Retry-After': '2' });
    }
    return { status: 'ready' };
  });
}
