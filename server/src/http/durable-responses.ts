/**
 * No response shows what a power loss could undo (SQLite; db/wal-sync.ts, ADR 0017).
 *
 * How it works. With the WAL synced off the event loop, a commit is visible to every reader a few
 * milliseconds before it is on disk. A response sent in that window (a poll of a decision whose
 * create is still waiting for its sync, an idempotent replay, a portal list) could show a decision
 * that an OS crash then takes back. So every response waits, in its onSend hook, until everything
 * committed before it was sent is durable: usually that is already so and the hook adds nothing
 * (no promise); under write load it adds at most the rest of the sync in flight and the next one. A response built from a
 * group-commit unit's result is exempt (`markDurable`): the unit resolved only after the sync that
 * covered its batch, and everything it read was committed before that batch. Should the sync fail,
 * the response becomes a 503 instead: what it would show is not known to be on disk.
 *
 * PostgreSQL needs none of this: a commit is visible only once its WAL is flushed.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WalSync } from '../db/wal-sync.js';
import { ERROR_REGISTRY, errorBody } from './errors/error-registry.js';
import { STORAGE_RETRY_AFTER_S } from './plugins/errors.js';

const covered = new WeakSet<FastifyRequest>();

/** This request's response comes from a group-commit unit that is durable: send it at once. */
export function markDurable(request: FastifyRequest): void {
  covered.add(request);
}

export function registerDurableResponses(app: FastifyInstance, walSync: WalSync | null): void {
  if (walSync === null) return;
  // Callback style: nothing is allocated on the common path (everything already durable).
  app.addHook('onSend', (request, reply, payload, done) => {
    const durable = covered.has(request) ? null : walSync.whenDurable();
    if (durable === null) return done(null, payload);
    durable.then(
      () => done(null, payload),
      () => {
        reply.code(503).header('Retry-After', STORAGE_RETRY_AFTER_S).type('application/json; charset=utf-8');
        done(null, errorBody('service_unavailable', ERROR_REGISTRY.service_unavailable.message, request.id));
      },
    );
  });
}
