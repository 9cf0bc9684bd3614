/**
 * `client.decisions.autoLoan` against the real service (`cds serve` from server/dist), with a
 * tenant set up as a lender sets one up: signed up in the portal, two dealers added there and one of
 * them disabled. Direct and indirect approvals with every auto-loan field, a decline, the pending
 * journey through the sandbox helper and poll(), the 422s a lender's code must handle (disabled or
 * unknown dealer, markup above the cap), idempotent replays, a retry after a lost answer carrying
 * the same generated key, and the built ESM and CommonJS packages.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as Sdk from '../src/index.js';
import {
  AutoLoanDecision,
  CreditDecisions,
  Decision,
  InvalidRequestError,
  NotFoundError,
  UnprocessableEntityError,
  type AutoLoanCreateParams,
  type Fetch,
} from '../src/index.js';
import { autoLoanTenant, vin, type AutoLoanTenant } from './support/portal.js';
import { failure } from './support/failure.js';
import { newConsumer, SDK_ROOT, startService, type Service } from './support/service.js';

let service: Service;
let tenant: AutoLoanTenant;
let client: CreditDecisions;

beforeAll(async () => {
  service = await startService();
  tenant = await autoLoanTenant(service.baseUrl, 'Node SDK');
  client = new CreditDecisions({ apiKey: tenant.sandboxKey, baseUrl: service.baseUrl });
});
afterAll(async () => {
  await service?.stop();
});

const ACCORD_VIN = vin('1HGCM8260RA004352'); // position 10 "R": model year 2024
/** A used 2024 Accord worth 15,000.00; 16,000.00 - 2,000.00 down - 1,000.00 trade-in = 13,000.00 financed (soft tier). */
const vehicle = { vin: ACCORD_VIN, year: 2024, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00' } as const;
const loan = { amount: '16000.00', down_payment: '2000.00', trade_in_value: '1000.00', term_months: 60, currency: 'USD' } as const;
const hundredths = (rate: string) => Math.round(Number(rate) * 100);
const cents = (money: string) => Math.round(Number(money) * 100);

function direct(consumerId = tenant.consumers.soft): AutoLoanCreateParams {
  return { consumer: { consumer_id: consumerId }, vehicle, loan, channel: 'direct' };
}
function indirect(dealerId: string, markup: string): AutoLoanCreateParams {
  return { consumer: { consumer_id: tenant.consumers.soft }, vehicle, loan, channel: 'indirect', dealer: { dealer_id: dealerId, markup_rate_pct: markup } };
}

/** What an independent client (plain fetch) sees for the same decision. */
async function rawGet(id: string): Promise<unknown> {
  const r = await fetch(`${service.baseUrl}/v1/decisions/auto-loan/${id}`, { headers: { Authorization: `Bearer ${tenant.sandboxKey}` } });
  expect(r.status).toBe(200);
  return r.json();
}


describe('auto-loan decisions against the real service', () => {
  it('approves a direct loan: every auto-loan field typed, buy = contract rate, no reserve, LTV of the amount financed', async () => {
    const d = await client.decisions.autoLoan.create(direct());
    expect(d).toBeInstanceOf(AutoLoanDecision);
    expect(d).toBeInstanceOf(Decision);
    expect([d.isApproved, d.isDeclined, d.isReferred, d.isPending]).toEqual([true, false, false, false]);
    expect(d.status).toBe('complete');
    expect(d.kyc_tier).toBe('soft');
    expect(d.approved_amount).toBe('13000.00'); // the amount financed
    expect(d.currency).toBe('USD');
    expect(d.term_months).toBe(60);
    expect(d.ltv).toBe('86.67'); // 13,000.00 / 15,000.00
    expect(d.buy_rate).toMatch(/^\d+\.\d{2}$/);
    expect(d.contract_rate).toBe(d.buy_rate);
    expect(d.dealer_reserve).toBe('0.00');
    expect(d.payment_schedule).toHaveLength(60);
    expect(d.tila_disclosure?.payment_frequency).toBe('monthly');
    expect(d.tila_disclosure?.amount_financed).toBe('13000.00');
    // A direct loan is not a credit sale: no total sale price.
    expect(d.tila_disclosure?.total_sale_price).toBeUndefined();
    expect(Math.abs(Number(d.apr) - Number(d.contract_rate))).toBeLessThanOrEqual(0.01);
    expect(d.decline_reasons).toEqual([]);
    expect(d.polling_url).toBe(`/v1/decisions/auto-loan/${d.decision_id}`);
    expect(d.lastResponse?.idempotencyKey).toMatch(/^cds-node-retry-/);
    expect(d.lastResponse?.idempotentReplayed).toBe(false);
    // The offer carries the auto-loan fields too, every one present.
    expect(d.offer).toEqual({
      approved_amount: '13000.00',
      currency: 'USD',
      apr: d.apr,
      term_months: 60,
      payment_schedule: d.payment_schedule,
      tila_disclosure: d.tila_disclosure,
      expires_at: d.expires_at,
      buy_rate: d.buy_rate,
      contract_rate: d.buy_rate,
      dealer_reserve: '0.00',
      ltv: '86.67',
    });
    // Exactly what an independent client reads back, and what retrieve() returns.
    expect(JSON.parse(JSON.stringify(d))).toEqual(await rawGet(d.decision_id));
    const again = await client.decisions.autoLoan.retrieve(d.decision_id);
    expect(again).toBeInstanceOf(AutoLoanDecision);
    expect(again.toJSON()).toEqual(d.toJSON());
  });

  it('approves an indirect loan through an active dealer: contract rate = buy rate + markup, a positive dealer reserve', async () => {
    const plain = await client.decisions.autoLoan.create(direct());
    const d = await client.decisions.autoLoan.create(indirect(tenant.activeDealer.id, '1.00'));
    expect(d.isApproved).toBe(true);
    expect(d.buy_rate).toBe(plain.buy_rate);
    expect(hundredths(d.contract_rate!)).toBe(hundredths(d.buy_rate!) + 100);
    expect(cents(d.dealer_reserve!)).toBeGreaterThan(0);
    // The reserve is a share of the extra finance charge the markup earns, so less than that extra.
    const extra = cents(d.tila_disclosure!.finance_charge) - cents(plain.tila_disclosure!.finance_charge);
    expect(extra).toBeGreaterThan(0);
    expect(cents(d.dealer_reserve!)).toBeLessThan(extra);
    expect(d.ltv).toBe(plain.ltv);
    // The dealer's credit sale: 3,000.00 down (cash and trade-in), total sale price = cash price + finance charge.
    expect(d.tila_disclosure!.total_down_payment).toBe('3000.00');
    expect(cents(d.tila_disclosure!.total_sale_price!)).toBe(cents(loan.amount) + cents(d.tila_disclosure!.finance_charge));
    expect(JSON.parse(JSON.stringify(d))).toEqual(await rawGet(d.decision_id));
  });

  it('returns a decline as a decision (no rates on it), never an error', async () => {
    const d = await client.decisions.autoLoan.create({ consumer: newConsumer('0000', 'Dana'), vehicle, loan, channel: 'direct' });
    expect([d.isApproved, d.isDeclined, d.isReferred, d.isPending]).toEqual([false, true, false, false]);
    expect(d.decline_reasons![0]).toEqual({ code: 'AA-21', reason: 'Bankruptcy' });
    expect(d.buy_rate).toBeUndefined();
    expect(d.dealer_reserve).toBeUndefined();
    expect(d.payment_schedule).toBeUndefined();
    expect(d.offer).toBeNull();
  });

  it('pending on the enhanced tier -> sandbox helper -> poll to an approval with its rates', async () => {
    // 22,000.00 - 2,000.00 = 20,000.00 financed: the enhanced tier, so the consumer verifies first.
    const d = await client.decisions.autoLoan.create({
      consumer: { consumer_id: tenant.consumers.enhanced },
      vehicle: { ...vehicle, vin: vin('1HGCM8260TA004352'), value: '25000.00', condition: 'new', year: 2026, mileage: 12 },
      loan: { amount: '22000.00', down_payment: '2000.00', term_months: 48, currency: 'USD' },
      channel: 'indirect',
      dealer: { dealer_id: tenant.activeDealer.id, markup_rate_pct: '0.50' },
    });
    expect(d.isPending).toBe(true);
    expect(d.outcome).toBeNull();
    expect(d.kyc_tier).toBe('enhanced');
    expect(d.consumer_complete_url).toMatch(/^https?:\/\/.+\/verify\//);
    expect(d.polling_url).toBe(`/v1/decisions/auto-loan/${d.decision_id}`);
    expect(d.buy_rate).toBeUndefined();

    let completed: Promise<Decision> | undefined;
    const seen: AutoLoanDecision[] = [];
    const final = await client.decisions.autoLoan.poll(d, {
      intervalMs: 50,
      clampInterval: false,
      onPending: (p) => {
        seen.push(p as AutoLoanDecision);
        completed ??= client.sandbox.verification.complete(d.decision_id, 'pass');
      },
    });
    expect(seen.length).toBeGreaterThanOrEqual(1);
    expect(seen[0]).toBeInstanceOf(AutoLoanDecision);
    expect((await completed!).isApproved).toBe(true);
    expect(final).toBeInstanceOf(AutoLoanDecision);
    expect(final.isApproved).toBe(true);
    expect(final.approved_amount).toBe('20000.00');
    expect(final.ltv).toBe('80.00');
    expect(hundredths(final.contract_rate!)).toBe(hundredths(final.buy_rate!) + 50);
    expect(cents(final.dealer_reserve!)).toBeGreaterThan(0);
    expect(final.payment_schedule).toHaveLength(48);
  });

  it('replays the stored answer for the same key, and each call gets its own key', async () => {
    const key = `sdk-node-auto-${Date.now()}`;
    const first = await client.decisions.autoLoan.create(direct(), { idempotencyKey: key });
    const second = await client.decisions.autoLoan.create(direct(), { idempotencyKey: key });
    expect(second.decision_id).toBe(first.decision_id);
    expect(second.lastResponse?.idempotentReplayed).toBe(true);
    expect(second.toJSON()).toEqual(first.toJSON());
    const a = await client.decisions.autoLoan.create(direct());
    const b = await client.decisions.autoLoan.create(direct());
    expect(a.decision_id).not.toBe(b.decision_id);
    expect(a.lastResponse?.idempotencyKey).not.toBe(b.lastResponse?.idempotencyKey);
  });

  it('retries a lost answer with the same generated key and gets the stored decision, never a second one', async () => {
    const sent: Array<string | null> = [];
    const answers: string[] = [];
    // The service does the work and answers; the answer is "lost" once (a connection reset).
    const losing: Fetch = async (url, init) => {
      sent.push(new Headers(init.headers).get('idempotency-key'));
      const response = await fetch(url, init);
      if (sent.length === 1) {
        answers.push(await response.text());
        throw Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) });
      }
      return response;
    };
    const viaFlakyNetwork = new CreditDecisions({ apiKey: tenant.sandboxKey, baseUrl: service.baseUrl, fetch: losing, initialRetryDelayMs: 10 });
    const d = await viaFlakyNetwork.decisions.autoLoan.create(indirect(tenant.activeDealer.id, '1.25'));
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatch(/^cds-node-retry-[0-9a-f-]{36}$/);
    expect(sent[1]).toBe(sent[0]);
    expect(d.lastResponse?.retries).toBe(1);
    expect(d.lastResponse?.idempotentReplayed).toBe(true);
    expect(d.decision_id).toBe((JSON.parse(answers[0]!) as { decision_id: string }).decision_id);
  });
});

describe('the errors an integration handles', () => {
  it('422 for a disabled dealer, for an unknown one, and for a markup above the cap; replayed with the same key', async () => {
    const key = `sdk-node-disabled-dealer-${Date.now()}`;
    const disabled = await failure(client.decisions.autoLoan.create(indirect(tenant.disabledDealer.id, '1.00'), { idempotencyKey: key }));
    expect(disabled).toBeInstanceOf(UnprocessableEntityError);
    expect([disabled.status, disabled.code]).toEqual([422, 'unprocessable_entity']);
    expect(disabled.message).toMatch(/dealer/i);
    const replay = await failure(client.decisions.autoLoan.create(indirect(tenant.disabledDealer.id, '1.00'), { idempotencyKey: key }));
    expect(replay.requestId).toBe(disabled.requestId);
    expect(replay.headers['idempotent-replayed']).toBe('true');

    const unknown = await failure(client.decisions.autoLoan.create(indirect('6f1c2a8e-3b7d-4c1e-9a55-1f7b3c2d9e10', '1.00')));
    expect(unknown).toBeInstanceOf(UnprocessableEntityError);

    const tooMuch = await failure(client.decisions.autoLoan.create(indirect(tenant.activeDealer.id, '1.26')));
    expect(tooMuch).toBeInstanceOf(UnprocessableEntityError);
    expect(tooMuch.message).toMatch(/markup_rate_pct.*1\.25/);
  });

  it('400 for a VIN with a wrong check digit; 404 for an id that is not an auto loan here', async () => {
    const wrongCheck = ACCORD_VIN.slice(0, 8) + (ACCORD_VIN[8] === '1' ? '2' : '1') + ACCORD_VIN.slice(9);
    const e = await failure(client.decisions.autoLoan.create({ ...direct(), vehicle: { ...vehicle, vin: wrongCheck } }));
    expect(e).toBeInstanceOf(InvalidRequestError);
    expect(e.message).toMatch(/vehicle\.vin/);
    expect(await failure(client.decisions.autoLoan.retrieve('6f1c2a8e-3b7d-4c1e-9a55-1f7b3c2d9e10'))).toBeInstanceOf(NotFoundError);
    // A BNPL decision is not an auto loan.
    const bnpl = await client.decisions.bnpl.create({
      consumer: { consumer_id: tenant.consumers.soft },
      transaction: { amount: '120.00', currency: 'USD', merchant_name: 'Acme', merchant_category: 'general' },
    });
    expect(await failure(client.decisions.autoLoan.retrieve(bnpl.decision_id))).toBeInstanceOf(NotFoundError);
  });

  it('the types refuse a dealer on a direct loan and an indirect loan without one', () => {
    const dealer = { dealer_id: tenant.activeDealer.id, markup_rate_pct: '1.00' };
    // @ts-expect-error a direct loan has no dealer
    const withDealer: AutoLoanCreateParams = { ...direct(), dealer };
    // @ts-expect-error an indirect loan names its dealer
    const withoutDealer: AutoLoanCreateParams = { consumer: { consumer_id: 'x' }, vehicle, loan, channel: 'indirect' };
    // @ts-expect-error terms are 24, 36, 48, 60, 72 or 84 months
    const oddTerm: AutoLoanCreateParams = { ...direct(), loan: { ...loan, term_months: 30 } };
    expect([withDealer, withoutDealer, oddTerm]).toHaveLength(3);
  });
});

describe('the built packages', () => {
  it('ESM (import) and CommonJS (require) expose decisions.autoLoan and AutoLoanDecision', async () => {
    const esm = (await import(pathToFileURL(path.join(SDK_ROOT, 'dist/esm/index.js')).href)) as typeof Sdk;
    const cjs = createRequire(import.meta.url)(path.join(SDK_ROOT, 'dist/cjs/index.js')) as typeof Sdk;
    for (const lib of [esm, cjs]) {
      const c = new lib.CreditDecisions({ apiKey: tenant.sandboxKey, baseUrl: service.baseUrl });
      const d = await c.decisions.autoLoan.create(direct());
      expect(d).toBeInstanceOf(lib.AutoLoanDecision);
      expect(d.isApproved).toBe(true);
      expect(d.dealer_reserve).toBe('0.00');
    }
  });
});
