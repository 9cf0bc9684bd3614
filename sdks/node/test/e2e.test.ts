/**
 * The Node library against the real service (`cds serve` from server/dist): approvals, declines,
 * the pending journey through the sandbox helper and poll(), the `order` form, idempotent replays,
 * every error class from a real answer, a real signed webhook delivery, and the built ESM and
 * CommonJS packages.
 */
import http from 'node:http';
import type net from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as Sdk from '../src/index.js';
import {
  AuthenticationError,
  CreditDecisions,
  Decision,
  IdempotencyConflictError,
  InvalidRequestError,
  NoAdverseActionError,
  NotFoundError,
  UnprocessableEntityError,
  WebhookVerificationError,
  type AdverseActionNotice,
  type BnplCreateParams,
  type DecisionFinalizedData,
} from '../src/index.js';
import { failure } from './support/failure.js';
import { furniture, newConsumer, SDK_ROOT, startService, type Service } from './support/service.js';

let service: Service;
let client: CreditDecisions;

beforeAll(async () => {
  service = await startService({ webhooks: true });
  client = new CreditDecisions({ apiKey: service.sandboxKey, baseUrl: service.baseUrl });
});
afterAll(async () => {
  await service?.stop();
});

/** What an independent client (plain fetch) sees for the same decision. */
async function rawGet(id: string): Promise<unknown> {
  const r = await fetch(`${service.baseUrl}/v1/decisions/bnpl/${id}`, { headers: { Authorization: `Bearer ${service.sandboxKey}` } });
  expect(r.status).toBe(200);
  return r.json();
}


describe('decisions against the real service', () => {
  it('approves the seeded soft consumer in the create response, every field typed', async () => {
    const d = await client.decisions.bnpl.create({ consumer: { consumer_id: service.consumers.soft }, transaction: furniture('149.97') });
    expect(d).toBeInstanceOf(Decision);
    expect([d.isApproved, d.isDeclined, d.isReferred, d.isPending]).toEqual([true, false, false, false]);
    expect(d.status).toBe('complete');
    expect(d.outcome).toBe('approved');
    expect(d.kyc_tier).toBe('soft');
    expect(d.approved_amount).toBe('149.97');
    expect(d.currency).toBe('USD');
    expect(d.apr).toMatch(/^\d+\.\d{2}$/);
    expect(typeof d.term_months).toBe('number');
    expect(d.payment_schedule).toHaveLength(4);
    expect(d.payment_schedule![0]).toEqual({ num: 1, due_date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/), amount: expect.stringMatching(/^\d+\.\d{2}$/) });
    expect(d.tila_disclosure?.payment_frequency).toBe('biweekly');
    expect(d.tila_disclosure?.total_of_payments).toBe('149.97');
    expect(d.decline_reasons).toEqual([]);
    expect(d.consumer_complete_url).toBeNull();
    expect(d.polling_url).toBe(`/v1/decisions/bnpl/${d.decision_id}`);
    expect(d.lastResponse?.status).toBe(200);
    expect(d.lastResponse?.requestId).toMatch(/^req_/);
    expect(d.lastResponse?.idempotencyKey).toMatch(/^cds-node-retry-/);
    expect(d.lastResponse?.idempotentReplayed).toBe(false);
    // The offer: the same fields, all present (and not a wire field: the comparison below).
    expect(d.offer).toEqual({
      approved_amount: '149.97',
      currency: 'USD',
      apr: d.apr,
      term_months: d.term_months,
      payment_schedule: d.payment_schedule,
      tila_disclosure: d.tila_disclosure,
      expires_at: d.expires_at,
    });
    // Identical to what an independent client reads back.
    expect(JSON.parse(JSON.stringify(d))).toEqual(await rawGet(d.decision_id));
    const again = await client.decisions.bnpl.retrieve(d.decision_id);
    expect(again.toJSON()).toEqual(d.toJSON());
  });

  it('returns a decline as a decision, never an error', async () => {
    const d = await client.decisions.bnpl.create({ consumer: newConsumer('0000', 'Dana'), transaction: furniture('149.97') });
    expect([d.isApproved, d.isDeclined, d.isReferred, d.isPending]).toEqual([false, true, false, false]);
    expect(d.decline_reasons![0]).toEqual({ code: 'AA-21', reason: 'Bankruptcy' });
    expect(d.payment_schedule).toBeUndefined();
    expect(d.offer).toBeNull();
    expect(JSON.parse(JSON.stringify(d))).toEqual(await rawGet(d.decision_id));
  });

  it('fetches the adverse-action notice of a decline (no applicant in it); an approval in full has none (NoAdverseActionError, a NotFoundError)', async () => {
    const d = await client.decisions.bnpl.create({ consumer: newConsumer('0000', 'Dana'), transaction: furniture('149.97') });
    const notice: AdverseActionNotice = await client.decisions.bnpl.adverseActionNotice(d.decision_id);
    expect(notice).toMatchObject({ decision_id: d.decision_id, environment: 'sandbox', product: 'bnpl', action: 'declined', counteroffer: null });
    expect(notice.principal_reasons.reasons).toEqual(d.decline_reasons);
    expect(notice.due_by).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(notice.ecoa_notice.statement).toMatch(/^The Federal Equal Credit Opportunity Act prohibits/);
    expect(notice).not.toHaveProperty('applicant');
    expect(JSON.stringify(notice)).not.toContain('Dana');
    // What an independent client sees.
    const raw = await fetch(`${service.baseUrl}/v1/decisions/bnpl/${d.decision_id}/adverse-action-notice`, { headers: { Authorization: `Bearer ${service.sandboxKey}` } });
    expect(await raw.json()).toEqual(notice);

    const approved = await client.decisions.bnpl.create({ consumer: { consumer_id: service.consumers.soft }, transaction: furniture('149.97') });
    const none = await failure(client.decisions.bnpl.adverseActionNotice(approved.decision_id));
    expect(none).toBeInstanceOf(NoAdverseActionError);
    expect(none).toBeInstanceOf(NotFoundError);
    expect([none.status, none.code]).toEqual([404, 'no_adverse_action']);
    // Not an auto loan: the auto-loan path does not find it.
    const other = await failure(client.decisions.autoLoan.adverseActionNotice(d.decision_id));
    expect([other.status, other.code]).toEqual([404, 'not_found']);
  });

  it('returns a referral as a decision', async () => {
    const d = await client.decisions.bnpl.create({ consumer: newConsumer('1111', 'Remy'), transaction: furniture('120.00') });
    expect(d.isReferred).toBe(true);
    expect(d.decline_reasons!.length).toBeGreaterThan(0);
  });

  it('pending (enhanced) -> sandbox helper -> poll at the default interval to completion', async () => {
    const d = await client.decisions.bnpl.create({ consumer: { consumer_id: service.consumers.enhanced }, transaction: furniture('1500.00') });
    expect(d.isPending).toBe(true);
    expect(d.outcome).toBeNull();
    expect(d.kyc_tier).toBe('enhanced');
    expect(d.kyc_status).toBe('pending');
    expect(d.consumer_complete_url).toMatch(/^https?:\/\/.+\/verify\//);
    expect(d.estimated_completion_seconds).toBe(120);
    expect(Date.parse(d.expires_at!)).toBeGreaterThan(Date.now());

    const started = Date.now();
    let completed: Promise<Decision> | undefined;
    const final = await client.decisions.bnpl.poll(d, {
      onPending: () => {
        completed ??= client.sandbox.verification.complete(d.decision_id, 'pass');
      },
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_900); // one wait at the clamped 2-3 s interval
    expect(final.isApproved).toBe(true);
    expect(final.kyc_status).toBe('matched');
    expect(final.approved_amount).toBe('1500.00');
    expect((await completed!).isApproved).toBe(true);
  });

  it('sandbox helper fail -> referred AA-24; on a finished decision it changes nothing', async () => {
    const d = await client.decisions.bnpl.create({ consumer: { consumer_id: service.consumers.enhanced }, transaction: furniture('900.00') });
    const failed = await client.sandbox.verification.complete(d.decision_id, 'fail');
    expect(failed.isReferred).toBe(true);
    expect(failed.decline_reasons![0]!.code).toBe('AA-24');
    const again = await client.sandbox.verification.complete(d.decision_id, 'pass');
    expect(again.toJSON()).toEqual(failed.toJSON());
    const polled = await client.decisions.bnpl.poll(d.decision_id, { intervalMs: 50, clampInterval: false });
    expect(polled.isReferred).toBe(true);
  });

  it('accepts the order form (pay-in-4 and a pending pay-in-6)', async () => {
    const d = await client.decisions.bnpl.create({
      consumer: { consumer_id: service.consumers.soft },
      order: { amount: '149.97', currency: 'USD', installment_count: 4 },
    });
    expect(d.isApproved).toBe(true);
    expect(d.payment_schedule).toHaveLength(4);

    const p = await client.decisions.bnpl.create({
      consumer: { consumer_id: service.consumers.enhanced },
      order: { amount: '1500.00', currency: 'USD', installment_count: 6, merchant_name: 'Acme', merchant_category: 'electronics' },
    });
    expect(p.isPending).toBe(true);
    await client.sandbox.verification.complete(p.decision_id, 'pass');
    const final = await client.decisions.bnpl.poll(p.decision_id, { intervalMs: 50, clampInterval: false });
    expect(final.isApproved).toBe(true);
    expect(final.payment_schedule).toHaveLength(6);
    expect(final.term_months).toBe(6);
  });

  it('replays the stored answer for the same key and body, and each call gets its own key', async () => {
    const params: BnplCreateParams = { consumer: { consumer_id: service.consumers.soft }, transaction: furniture('60.00') };
    const key = `sdk-node-${Date.now()}`;
    const first = await client.decisions.bnpl.create(params, { idempotencyKey: key });
    const second = await client.decisions.bnpl.create(params, { idempotencyKey: key });
    expect(second.decision_id).toBe(first.decision_id);
    expect(second.lastResponse?.idempotentReplayed).toBe(true);
    expect(second.lastResponse?.requestId).toBe(first.lastResponse?.requestId);
    const a = await client.decisions.bnpl.create(params);
    const b = await client.decisions.bnpl.create(params);
    expect(a.decision_id).not.toBe(b.decision_id);
  });
});

describe('a connection dropped after the service did the work', () => {
  /**
   * A proxy in front of the real service: while `dropNext` > 0 it forwards the request, lets the
   * service answer (the decision is committed), records that answer, and then destroys the
   * client's connection instead of passing it on: the client must retry, and its retry must get
   * the stored answer, not a second decision.
   */
  async function startDroppingProxy(upstream: string) {
    const state = { dropNext: 0, dropped: [] as string[], forwarded: 0 };
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && k !== 'host' && k !== 'connection') headers[k] = v;
        const answer = await fetch(upstream + req.url, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
        const text = await answer.text();
        state.forwarded += 1;
        if (state.dropNext > 0) {
          state.dropNext -= 1;
          state.dropped.push(text);
          req.socket.destroy();
          return;
        }
        const out: Record<string, string> = {};
        answer.headers.forEach((v, k) => (out[k] = v));
        delete out['content-length'];
        delete out['transfer-encoding'];
        delete out['connection'];
        delete out['keep-alive'];
        res.writeHead(answer.status, out).end(text);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const { port } = server.address() as net.AddressInfo;
    return {
      url: `http://127.0.0.1:${port}`,
      state,
      close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
    };
  }

  it('retries with the same key and gets the stored decision, never a second one', async () => {
    const proxy = await startDroppingProxy(service.baseUrl);
    try {
      const viaProxy = new CreditDecisions({ apiKey: service.sandboxKey, baseUrl: proxy.url, initialRetryDelayMs: 10 });
      proxy.state.dropNext = 2;
      const d = await viaProxy.decisions.bnpl.create({ consumer: { consumer_id: service.consumers.soft }, transaction: furniture('77.70') });
      expect(proxy.state.forwarded).toBe(3);
      expect(d.lastResponse?.retries).toBe(2);
      expect(d.lastResponse?.idempotentReplayed).toBe(true);
      const firstAnswer = JSON.parse(proxy.state.dropped[0]!) as { decision_id: string };
      expect(d.decision_id).toBe(firstAnswer.decision_id); // the decision the first, lost, answer carried
      expect(JSON.parse(proxy.state.dropped[1]!)).toEqual(firstAnswer);

      // The same through the sandbox helper (a POST too) on a pending decision.
      const pending = await client.decisions.bnpl.create({ consumer: { consumer_id: service.consumers.enhanced }, transaction: furniture('650.00') });
      proxy.state.dropNext = 1;
      const done = await viaProxy.sandbox.verification.complete(pending.decision_id, 'pass');
      expect(done.lastResponse?.idempotentReplayed).toBe(true);
      expect(done.isPending).toBe(false);
    } finally {
      await proxy.close();
    }
  });
});

describe('errors from real answers', () => {
  it('400 invalid_request (bad body; both order and transaction; malformed id)', async () => {
    const e = await failure(client.decisions.bnpl.create({ consumer: { consumer_id: service.consumers.soft }, transaction: { amount: '10.00', currency: 'USD' } } as never));
    expect(e).toBeInstanceOf(InvalidRequestError);
    expect([e.status, e.code]).toEqual([400, 'invalid_request']);
    expect(e.message).toMatch(/merchant_name/);
    const both = await failure(
      client.decisions.bnpl.create({
        consumer: { consumer_id: service.consumers.soft },
        transaction: furniture('10.00'),
        order: { amount: '10.00', currency: 'USD', installment_count: 4 },
      } as never),
    );
    expect(both).toBeInstanceOf(InvalidRequestError);
    expect(await failure(client.decisions.bnpl.retrieve('not-a-uuid'))).toBeInstanceOf(InvalidRequestError);
  });

  it('401 invalid_api_key', async () => {
    const bad = new CreditDecisions({ apiKey: 'svc_test_wrong', baseUrl: service.baseUrl });
    const e = await failure(bad.decisions.bnpl.retrieve('6f1c2a8e-3b7d-4c1e-9a55-1f7b3c2d9e10'));
    expect(e).toBeInstanceOf(AuthenticationError);
    expect([e.status, e.code]).toEqual([401, 'invalid_api_key']);
  });

  it('404 not_found (unknown id; sandbox helper with a live key)', async () => {
    const e = await failure(client.decisions.bnpl.retrieve('6f1c2a8e-3b7d-4c1e-9a55-1f7b3c2d9e10'));
    expect(e).toBeInstanceOf(NotFoundError);
    expect([e.status, e.code]).toEqual([404, 'not_found']);
    const live = new CreditDecisions({ apiKey: service.liveKey, baseUrl: service.baseUrl });
    expect(await failure(live.sandbox.verification.complete('6f1c2a8e-3b7d-4c1e-9a55-1f7b3c2d9e10', 'pass'))).toBeInstanceOf(NotFoundError);
  });

  it('409 idempotency_conflict (same key, another body), not retried', async () => {
    const key = `sdk-node-conflict-${Date.now()}`;
    await client.decisions.bnpl.create({ consumer: { consumer_id: service.consumers.soft }, transaction: furniture('70.00') }, { idempotencyKey: key });
    const e = await failure(client.decisions.bnpl.create({ consumer: { consumer_id: service.consumers.soft }, transaction: furniture('71.00') }, { idempotencyKey: key }));
    expect(e).toBeInstanceOf(IdempotencyConflictError);
    expect([e.status, e.code]).toEqual([409, 'idempotency_conflict']);
  });

  it('422 unprocessable_entity (EUR), replayed with the same key', async () => {
    const params = { consumer: { consumer_id: service.consumers.soft }, transaction: { ...furniture('149.97'), currency: 'EUR' } };
    const key = `sdk-node-422-${Date.now()}`;
    const e = await failure(client.decisions.bnpl.create(params, { idempotencyKey: key }));
    expect(e).toBeInstanceOf(UnprocessableEntityError);
    expect([e.status, e.code]).toEqual([422, 'unprocessable_entity']);
    const replay = await failure(client.decisions.bnpl.create(params, { idempotencyKey: key }));
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.requestId).toBe(e.requestId);
  });
});

describe('a real webhook delivery', () => {
  it('verifies with the endpoint secret, alone or next to another, and refuses tampering', async () => {
    const d = await client.decisions.bnpl.create({ consumer: { consumer_id: service.consumers.soft }, transaction: furniture('42.00') });
    const { receiver, secret } = service.webhook!;
    const delivery = await receiver.waitFor((r) => r.headers['svc-webhook-type'] === 'decision.finalized' && r.body.includes(d.decision_id));
    const header = delivery.headers['svc-signature'];
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const event = client.webhooks.verify<DecisionFinalizedData>(delivery.body, header, secret);
    expect(event.type).toBe('decision.finalized');
    expect(event.id).toBe(delivery.headers['svc-webhook-id']);
    expect(event.data.decision_id).toBe(d.decision_id);
    expect(event.data.outcome).toBe('approved');
    expect(client.webhooks.verify(delivery.body, header, ['whsec_someOtherSecret', secret]).id).toBe(event.id);
    expect(() => client.webhooks.verify(delivery.body.toString('utf8').replace('approved', 'declined'), header, secret)).toThrow(WebhookVerificationError);
    expect(() => client.webhooks.verify(delivery.body, header, secret, { now: Math.floor(Date.now() / 1000) + 301 })).toThrow(WebhookVerificationError);
  });
});

describe('the built packages', () => {
  it('ESM (import) and CommonJS (require) builds work against the service', async () => {
    const esm = (await import(pathToFileURL(path.join(SDK_ROOT, 'dist/esm/index.js')).href)) as typeof Sdk;
    const cjs = createRequire(import.meta.url)(path.join(SDK_ROOT, 'dist/cjs/index.js')) as typeof Sdk;
    for (const lib of [esm, cjs]) {
      const c = new lib.CreditDecisions({ apiKey: service.sandboxKey, baseUrl: service.baseUrl });
      const d = await c.decisions.bnpl.create({ consumer: { consumer_id: service.consumers.soft }, transaction: furniture('30.00') });
      expect(d.isApproved).toBe(true);
      expect(d.offer?.approved_amount).toBe('30.00');
      const e = await c.decisions.bnpl.retrieve('6f1c2a8e-3b7d-4c1e-9a55-1f7b3c2d9e10').catch((err: unknown) => err);
      expect(e).toBeInstanceOf(lib.NotFoundError);
      expect(e).toBeInstanceOf(lib.CreditDecisionsError);
    }
    expect(Object.keys(cjs).sort()).toEqual(Object.keys(esm).sort());
  });
});

describe('the event history (events.list, events.retrieve)', () => {
  /** Every page a plain HTTP client gets, for comparison. */
  async function rawAll(query: string): Promise<Array<{ id: string }>> {
    const out: Array<{ id: string }> = [];
    let cursor: string | null = null;
    for (;;) {
      const r = await fetch(`${service.baseUrl}/v1/events?${query}${cursor ? `&starting_after=${cursor}` : ''}`, { headers: { Authorization: `Bearer ${service.sandboxKey}` } });
      const page = (await r.json()) as { data: Array<{ id: string }>; has_more: boolean; next_cursor: string | null };
      out.push(...page.data);
      if (!page.has_more) return out;
      cursor = page.next_cursor;
    }
  }

  it('awaits one page, iterates every page with for await, filters by type, and retrieves one event', async () => {
    const since = Math.floor(Date.now() / 1000) - 1;
    const ids: string[] = [];
    for (const amount of ['31.00', '32.00', '33.00']) ids.push((await client.decisions.bnpl.create({ consumer: { consumer_id: service.consumers.soft }, transaction: furniture(amount) })).decision_id);

    const page = await client.events.list({ created_gte: since, limit: 2 });
    expect(page.data).toHaveLength(2);
    expect(page.has_more).toBe(true);
    expect(page.next_cursor).toBe(page.data[1]!.id);
    expect(page.lastResponse.status).toBe(200);
    const second = await page.getNextPage();
    expect(second.data[0]!.id).not.toBe(page.data[1]!.id);

    const all = [];
    for await (const event of client.events.list({ created_gte: new Date(since * 1000), limit: 2 })) all.push(event);
    expect(all.map((e) => e.id)).toEqual((await rawAll(`created_gte=${since}&limit=2`)).map((e) => e.id));
    for (const id of ids) expect(all.filter((e) => e.data.decision_id === id).map((e) => e.type).sort()).toEqual(['application.created', 'decision.created', 'decision.finalized', 'score.completed']);
    expect(Object.keys(all[0]!)).toEqual(['id', 'type', 'created', 'data']);

    const finalized = await client.events.list({ created_gte: since, type: ['decision.finalized'] }).toArray();
    expect(finalized.map((e) => e.data.decision_id).filter((id) => ids.includes(id as string)).sort()).toEqual([...ids].sort());
    expect(finalized.every((e) => e.type === 'decision.finalized')).toBe(true);

    const one = await client.events.retrieve(finalized[0]!.id);
    expect(one).toEqual(finalized[0]);
    await expect(client.events.retrieve('6f1c2a8e-3b7d-4c1e-9a55-1f7b3c2d9e10')).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.events.list({ type: 'decision.approved' as never })).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/^type "decision\.approved" is not an event type; allowed:/) });
  });

  it('recovers what the receiver missed during an outage with auto-pagination', async () => {
    const { receiver } = service.webhook!;
    const outageStart = Math.floor(Date.now() / 1000);
    receiver.setStatus(503);
    try {
      const missed: string[] = [];
      for (const amount of ['41.00', '42.00', '43.00']) missed.push((await client.decisions.bnpl.create({ consumer: { consumer_id: service.consumers.soft }, transaction: furniture(amount) })).decision_id);
      // The service tried and the receiver refused: the first attempts of these events failed.
      for (const id of missed) await receiver.waitFor((r) => r.headers['svc-webhook-type'] === 'decision.finalized' && r.body.includes(id));
      receiver.setStatus(204);
      const recovered = new Map<string, string>();
      for await (const event of client.events.list({ created_gte: outageStart, type: 'decision.finalized', limit: 1 })) {
        recovered.set(event.data.decision_id as string, event.id);
      }
      for (const id of missed) {
        expect(recovered.has(id), id).toBe(true);
        // The recovered event is the one the failed delivery carried.
        const delivery = receiver.requests.find((r) => r.headers['svc-webhook-type'] === 'decision.finalized' && r.body.includes(id))!;
        expect(delivery.headers['svc-webhook-id']).toBe(recovered.get(id));
      }
    } finally {
      receiver.setStatus(204);
    }
  });
});
