/**
 * An endpoint on a test receiver and `count` `decision.created` events for it (and for any other
 * active endpoint of the scope), appended in one transaction as the API would: for the delivery
 * worker's suites that drive the worker themselves.
 */
import type { NewEvent } from '../../src/modules/events/outbox.js';
import type { WebhookScope } from '../../src/modules/webhooks/webhooks.service.js';
import type { TestApp } from './test-app.js';

export async function endpointWithEvents(t: TestApp, scope: WebhookScope, url: string, count: number, description: string): Promise<{ endpointId: string; eventIds: string[] }> {
  const { endpoint } = await t.ctx.webhooks.createEndpoint(scope, { url, events: '*', description });
  const events: NewEvent[] = Array.from({ length: count }, (_, i) => ({
    type: 'decision.created',
    subjectId: null,
    data: { decision_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, status: 'complete' },
  }));
  const stored = await t.ctx.storage.db.transaction().execute((trx) => t.ctx.outbox.append(trx, scope, events));
  return { endpointId: endpoint.id, eventIds: stored.map((e) => e.id) };
}
