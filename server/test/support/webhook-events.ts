/**
 * Events for the delivery worker's suites, appended in one transaction as the API would (each goes
 * to every active endpoint of the scope that subscribes to its type).
 */
import type { EventType, NewEvent } from '../../src/modules/events/outbox.js';
import type { WebhookScope } from '../../src/modules/webhooks/webhooks.service.js';
import type { TestApp } from './test-app.js';

/** `count` events of `type`, each with its own decision id; their event ids. */
export async function appendEvents(t: TestApp, scope: WebhookScope, count: number, type: EventType = 'decision.created'): Promise<string[]> {
  const events: NewEvent[] = Array.from({ length: count }, (_, i) => ({
    type,
    subjectId: null,
    data: { decision_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, status: 'complete' },
  }));
  const stored = await t.ctx.storage.db.transaction().execute((trx) => t.ctx.outbox.append(trx, scope, events));
  return stored.map((e) => e.id);
}

/** An endpoint for every event type at `url`, then `count` `decision.created` events. */
export async function endpointWithEvents(t: TestApp, scope: WebhookScope, url: string, count: number, description: string): Promise<{ endpointId: string; eventIds: string[] }> {
  const { endpoint } = await t.ctx.webhooks.createEndpoint(scope, { url, events: '*', description });
  return { endpointId: endpoint.id, eventIds: await appendEvents(t, scope, count) };
}
