/**
 * The answer to a create (BNPL or auto loan): the new decision's JSON through the idempotent
 * state-change helper (http/state-change.ts), and, once its transaction has committed, the same
 * answer to the poll cache as the decision's first poll answer (ADR 0050). Never for a replay or a
 * refusal: `committed` runs only for this request's own 2xx work. The cache's generation is noted
 * before the create starts, so a change notified while it runs refuses the fill.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app/context.js';
import { mapUnit, type PlannableUnit } from '../../db/group-commit.js';
import { respondWithStateChange } from '../../http/state-change.js';
import type { CreatedDecision } from './decisions.service.js';

export async function respondWithNewDecision(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  prepare: () => Promise<PlannableUnit<CreatedDecision>>,
): Promise<FastifyReply> {
  const generation = ctx.decisions.pollCacheGeneration();
  let created: CreatedDecision | null = null;
  return respondWithStateChange(
    ctx,
    request,
    reply,
    async () =>
      mapUnit(await prepare(), (c) => {
        created = c;
        return { statusCode: 200, body: c.json };
      }),
    () => {
      if (created) ctx.decisions.rememberCreated(created, generation);
    },
  );
}
