/**
 * docs/auto-loan.md's worked examples are true: each example's request is sent to the real app (its
 * placeholder consumer and dealer replaced by real ones, on the documented decision date), the
 * response must match the documented one, and every line of the example's arithmetic is recomputed
 * here, the buy-rate finance charge with an amortiser that shares no code with the service.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { defaultAutoLoanDocuments } from '../../../src/modules/engine/index.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';

const DOC = readFileSync(new URL('../../../../docs/auto-loan.md', import.meta.url), 'utf8');
const cents = (s: string) => Math.round(Number(s) * 100);

interface DocRequest {
  consumer: { consumer_id: string };
  vehicle: { value: string };
  loan: { amount: string; down_payment: string; trade_in_value?: string; term_months: number };
  dealer?: { dealer_id: string; markup_rate_pct: string };
}

interface DocResponse {
  decision_id: string;
  polling_url: string;
  approved_amount: string;
  ltv: string;
  buy_rate: string;
  contract_rate: string;
  dealer_reserve: string;
  tila_disclosure: { finance_charge: string; total_of_payments: string; total_down_payment?: string; total_sale_price?: string };
  payment_schedule: Array<{ num: number; due_date: string; amount: string }>;
}

interface Example {
  title: string;
  arithmetic: string[];
  request: DocRequest;
  response: DocResponse;
}

function examples(): Example[] {
  const part = DOC.slice(DOC.indexOf('## Worked examples'));
  return part
    .split(/^### /m)
    .slice(1)
    .map((section) => {
      const blocks = [...section.matchAll(/```(json)?\n([\s\S]*?)```/g)];
      expect(blocks, section.split('\n')[0]).toHaveLength(3);
      return {
        title: section.split('\n')[0]!,
        arithmetic: blocks[0]![2]!.trim().split('\n'),
        request: JSON.parse(blocks[1]![2]!) as DocRequest,
        response: JSON.parse(blocks[2]![2]!) as DocResponse,
      };
    });
}

/** Finance charge of a level monthly loan, interest rounded to the cent each month, last payment clears (floating point, apart from src). */
function financeCharge(amountCents: number, rateBps: number, n: number): number {
  const r = rateBps / 120_000;
  const level = Math.round((amountCents * r) / (1 - Math.pow(1 + r, -n)));
  let balance = amountCents;
  let paid = 0;
  for (let k = 1; k < n; k++) {
    balance += Math.round(balance * r) - level;
    paid += level;
  }
  return paid + balance + Math.round(balance * r) - amountCents;
}

describe('docs/auto-loan.md worked examples', () => {
  it('has three examples, each with arithmetic, a request and a response', () => {
    expect(examples()).toHaveLength(3);
  });

  it('states arithmetic that adds up, and matches its own request and response', () => {
    const share = defaultAutoLoanDocuments().policy.constants.dealerReserveSharePct;
    for (const ex of examples()) {
      const { request: q, response: r } = ex;
      const line = (name: string) => ex.arithmetic.find((l) => l.startsWith(name))!;
      const [a, dp, ti, fin] = [...line('amount financed').matchAll(/[\d.]+/g)].map((m) => cents(m[0]));
      expect([a, dp, ti], ex.title).toEqual([cents(q.loan.amount), cents(q.loan.down_payment), cents(q.loan.trade_in_value ?? '0')]);
      expect(a! - dp! - ti!).toBe(fin);
      expect(fin).toBe(cents(r.approved_amount));
      const [f2, value, , ltv] = [...line('ltv').matchAll(/[\d.]+/g)].map((m) => m[0]);
      expect([cents(f2!), cents(value!)]).toEqual([fin, cents(q.vehicle.value)]);
      expect((Math.round((fin! * 10_000) / cents(value!)) / 100).toFixed(2)).toBe(ltv);
      expect(ltv).toBe(r.ltv);
      const rates = [...line('contract rate').matchAll(/(\d+\.\d+)/g)].map((m) => cents(m[1]!));
      const total = rates.pop()!;
      expect(rates.reduce((s, x) => s + x, 0), ex.title).toBe(total);
      expect(total).toBe(cents(r.contract_rate));
      const markup = q.dealer ? cents(q.dealer.markup_rate_pct) : 0;
      expect(cents(r.contract_rate) - markup).toBe(cents(r.buy_rate));
      const reserve = line('reserve');
      if (!q.dealer) {
        expect(reserve).toContain('0.00 (direct)');
        expect(r.dealer_reserve).toBe('0.00');
        // Not a credit sale: no total sale price.
        expect(ex.arithmetic.some((l) => l.startsWith('total sale price')), ex.title).toBe(false);
        expect(r.tila_disclosure.total_sale_price).toBeUndefined();
        expect(r.tila_disclosure.total_down_payment).toBeUndefined();
        continue;
      }
      // The credit sale's line: cash price + finance charge, of which the downpayment (cash + trade-in).
      const sale = /^total sale price = ([\d.]+) \+ ([\d.]+) = ([\d.]+), of which down ([\d.]+) \+ ([\d.]+) = ([\d.]+)$/.exec(line('total sale price'))!;
      expect(sale, ex.title).not.toBeNull();
      const [price, fc, salePrice, down, trade, totalDown] = sale.slice(1).map(cents);
      expect([price, fc, down, trade], ex.title).toEqual([cents(q.loan.amount), cents(r.tila_disclosure.finance_charge), cents(q.loan.down_payment), cents(q.loan.trade_in_value ?? '0')]);
      expect(salePrice).toBe(price! + fc!);
      expect(totalDown).toBe(down! + trade!);
      expect(cents(r.tila_disclosure.total_sale_price!)).toBe(salePrice);
      expect(cents(r.tila_disclosure.total_down_payment!)).toBe(totalDown);
      // 1026.18(j): the total sale price is what the consumer pays in all, downpayment included.
      expect(salePrice).toBe(cents(r.tila_disclosure.total_of_payments) + totalDown!);
      const m = /round\(0\.(\d+) x \(([\d.]+) - ([\d.]+)\)\) = round\(([\d.]+)\) = ([\d.]+)/.exec(reserve)!;
      expect(Number(m[1]), 'share').toBe(share);
      expect(cents(m[2]!)).toBe(cents(r.tila_disclosure.finance_charge));
      expect(cents(m[3]!)).toBe(financeCharge(fin!, cents(r.buy_rate), q.loan.term_months));
      expect(Math.abs((share / 100) * (cents(m[2]!) - cents(m[3]!)) - Number(m[4]) * 100)).toBeLessThan(1e-6);
      expect(Math.floor(Number(m[4]) * 100 + 0.5)).toBe(cents(m[5]!));
      expect(m[5]).toBe(r.dealer_reserve);
    }
  });
});

describe.each(await dialectMatrix())('docs/auto-loan.md examples against the API [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock: new ManualClock('2026-03-15T15:00:00.000Z') });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('answers each documented request with the documented response', async () => {
    const dealer = await t.ctx.dealers.addDealer({ tenantId: t.tenant.tenantId, environment: 'sandbox' }, { name: 'Riverside Honda' });
    for (const ex of examples()) {
      const request = structuredClone(ex.request);
      request.consumer.consumer_id = t.tenant.sandbox.consumers[0]!.consumerId;
      if (request.dealer) request.dealer.dealer_id = dealer.id;
      const res = await t.app.inject({ method: 'POST', url: '/v1/decisions/auto-loan', headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json' }, payload: JSON.stringify(request) });
      expect(res.statusCode, ex.title).toBe(200);
      const actual = res.json<DocResponse>();
      const id = actual.decision_id;
      const placeholder = ex.response.decision_id;
      const { payment_schedule: docSchedule, ...docRest } = ex.response;
      const { payment_schedule: schedule, ...rest } = actual;
      expect(rest, ex.title).toEqual({ ...docRest, decision_id: id, application_id: id, polling_url: docRest.polling_url.replace(placeholder, id) });
      for (const p of docSchedule) expect(schedule[p.num - 1], ex.title).toEqual(p);
      // "Payments 3 to N-1 equal payment 2."
      for (const p of schedule.slice(2, -1)) expect(p.amount).toBe(schedule[1]!.amount);
    }
  });
});
