/**
 * The one way a `/v1` route changes state: through the idempotency mechanism, in one transaction.
 * The route gives `prepare()`, which does the slow part outside any transaction and returns a
 * `write(trx)` step; `write` changes state through `trx` and returns the status and the exact JSON
 * text to send. This sends it (or the stored answer of an earlier identical request).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../app/context.js';
import { markDurable } from './durable-responses.js';
import { parseIdempotencyKey, requestFingerprint, type WorkResponse, type WriteStep } from '../modules/idempotency/idempotency.service.js';

export async function respondWithStateChange(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  prepare: () => Promise<WriteStep>,
  /** Runs once this request's own work has committed with a 2xx answer (not for a replay, a refusal or a failure). */
  committed?: () => void,
): Promise<FastifyReply> {
  const key = parseIdempotencyKey(request.headers['idempotency-key'], request.raw.rawHeaders);
  const result = await ctx.idempotency.execute({
    scope: { tenantId: request.auth.tenantId, environment: request.auth.environment },
    key,
    fingerprint: () => requestFingerprint(request.method, request.url, request.body),
    requestId: request.id,
    prepare,
  });
  reply.code(result.statusCode).type('application/json; charset=utf-8');
  if (result.replayed) {
    // A replay is the earlier request's response: its body, and the request id that body belongs to.
    // It was read, so it waits for the disk like any other response (durable-responses.ts).
    reply.header('Idempotent-Replayed', 'true').header('Request-Id', result.requestId);
  } else {
    // A fresh result came out of a group-commit unit: it is on disk already.
    markDurable(request);
  }
  reply.send(result.body);
  if (committed && !result.replayed && result.statusCode < 300) committed();
  return reply;
}

/** Serialize a success body once, so the bytes stored for replay are the bytes sent. */
export function jsonResponse(statusCode: number, body: unknown): WorkResponse {
  return { statusCode, body: JSON.stringify(body) };
}
