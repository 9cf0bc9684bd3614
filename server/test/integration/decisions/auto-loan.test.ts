/**
 * Auto-loan decisions through the real app on SQLite and PostgreSQL: direct and indirect approvals
 * (rates, reserve, LTV, APR recomputed independently), declines, referrals, the pending flow through
 * the sandbox helper and the hosted page's actions, expiry, idempotency, dealers (unknown, disabled,
 * other environment), markup caps at both term bands, request rules, isolation, events and the
 * audit record; and the announced products' answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { documentedEventFields } from '../../support/webhook-docs.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { independentApr } from '../../support/independent-apr.js';
import { vinFor } from '../../support/vin.js';
import { standaloneDigits } from '../../support/security-checks.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';

const APPROVED_KEYS = [
  'decision_id', 'application_id', 'status', 'kyc_tier', 'kyc_status', 'outcome', 'approved_amount', 'currency', 'apr', 'term_months', 'payment_schedule',
  'tila_disclosure', 'decline_reasons', 'consumer_complete_url', 'polling_url', 'expires_at', 'buy_rate', 'contract_rate', 'dealer_reserve', 'ltv',
];
const DECLINED_KEYS = ['decision_id', 'application_id', 'status', 'outcome', 'decline_reasons'];
const REFERRED_KEYS = ['decision_id', 'application_id', 'status', 'kyc_tier', 'kyc_status', 'outcome', 'decline_reasons', 'polling_url'];
const PENDING_KEYS = ['decision_id', 'application_id', 'status', 'kyc_tier', 'kyc_status', 'outcome', 'consumer_complete_url', 'polling_url', 'estimated_completion_seconds', 'expires_at'];
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]), Buffer.alloc(2048, 0x42)]);
const cents = (s: string) => Math.round(Number(s) * 100);

/** Used 2024 Honda Accord (a check-digit-valid VIN of that model year), 18,000 miles, value 15,000.00; another year gets its own VIN. */
const vehicle = (extra: Record<string, unknown> = {}) => {
  const year = typeof extra.year === 'number' ? extra.year : 2024;
  return { vin: vinFor(year), year, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00', ...extra };
};
/** 16,000.00 - 2,000.00 down - 1,000.00 trade-in = 13,000.00 financed: soft tier, LTV 86.67. */
const loan = (extra: Record<string, unknown> = {}) => ({ amount: '16000.00', down_payment: '2000.00', trade_in_value: '1000.00', term_months: 60, currency: 'USD', ...extra });

function newConsumer(ssn: string, first = 'Avery') {
  return {
    first_name: first, last_name: 'Motorist', email: 'avery.motorist@example.com', phone: '+14155550177', dob: '1984-07-09', ssn_last4: ssn,
    address: { line1: '9 Garage Lane', city: 'Dayton', state: 'OH', zip: '45402' },
  };
}

/** Level monthly payment and finance charge, written apart from server/src/modules/offers (floating point, cents rounded half up). */
function independentFinanceCharge(amountCents: number, rateBps: number, n: number): number {
  const r = rateBps / 120_000;
  const level = Math.round((amountCents * r) / (1 - Math.pow(1 + r, -n)));
  let balance = amountCents;
  let total = 0;
  for (let k = 1; k < n; k++) {
    balance = balance + Math.round(balance * r) - level;
    total += level;
  }
  total += balance + Math.round(balance * r);
  return total - amountCents;
}

describe.each(await dialectMatrix())('auto-loan decisions [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  const clock = new ManualClock('2026-03-15T15:00:00.000Z');
  let soft: string;
  let dealerId: string, disabledDealerId: string, liveDealerId: string;
  const sandboxScope = () => ({ tenantId: t.tenant.tenantId, environment: 'sandbox' as const });

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock, env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' } });
    soft = t.tenant.sandbox.consumers[0]!.consumerId;
    dealerId = (await t.ctx.dealers.addDealer(sandboxScope(), { name: 'Riverside Honda', licenseNumber: 'D-1001', state: 'OH' })).id;
    disabledDealerId = (await t.ctx.dealers.addDealer(sandboxScope(), { name: 'Closed Motors' })).id;
    await t.ctx.dealers.disableDealer(sandboxScope(), disabledDealerId);
    liveDealerId = (await t.ctx.dealers.addDealer({ tenantId: t.tenant.tenantId, environment: 'live' }, { name: 'Live Only Autos' })).id;
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const create = (body: unknown, opts: { apiKey?: string; idem?: string } = {}) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/decisions/auto-loan',
      headers: { ...bearer(opts.apiKey ?? t.tenant.sandbox.apiKey), 'content-type': 'application/json', ...(opts.idem ? { 'idempotency-key': opts.idem } : {}) },
      payload: JSON.stringify(body),
    });
  const poll = (id: string, apiKey = t.tenant.sandbox.apiKey, product = 'auto-loan') => t.app.inject({ method: 'GET', url: `/v1/decisions/${product}/${id}`, headers: bearer(apiKey) });
  const eventsOf = (decisionId: string) => t.ctx.storage.db.selectFrom('events').selectAll().where('subject_id', '=', decisionId).orderBy('created_at').orderBy('type').execute();
  const indirect = (markup: string | number, extra: Record<string, unknown> = {}) => ({
    consumer: { consumer_id: soft }, vehicle: vehicle(), loan: loan(extra), channel: 'indirect', dealer: { dealer_id: dealerId, markup_rate_pct: markup },
  });

  /** `cashPrice`: the request's `loan.amount` for an indirect loan (a credit sale, disclosed with its total sale price); null for a direct one. */
  function checkApproved(body: Record<string, unknown>, cashPrice: string | null) {
    expect(Object.keys(body).sort()).toEqual([...APPROVED_KEYS].sort());
    expect(body.status).toBe('complete');
    expect(body.outcome).toBe('approved');
    expect(body.polling_url).toBe(`/v1/decisions/auto-loan/${body.decision_id}`);
    const tila = body.tila_disclosure as { amount_financed: string; finance_charge: string; total_of_payments: string; apr: string; payment_frequency: string; total_down_payment?: string; total_sale_price?: string };
    const saleLines = cashPrice === null ? [] : ['total_down_payment', 'total_sale_price'];
    expect(Object.keys(tila)).toEqual(['amount_financed', 'finance_charge', 'total_of_payments', 'apr', 'payment_frequency', ...saleLines]);
    if (cashPrice !== null) {
      // 12 CFR 1026.18(j): cash price + finance charge, the downpayment (cash + trade-in) being what is not financed.
      expect(cents(tila.total_down_payment!)).toBe(cents(cashPrice) - cents(tila.amount_financed));
      expect(cents(tila.total_sale_price!)).toBe(cents(cashPrice) + cents(tila.finance_charge));
    }
    const schedule = body.payment_schedule as Array<{ num: number; due_date: string; amount: string }>;
    expect(tila.payment_frequency).toBe('monthly');
    expect(schedule).toHaveLength(body.term_months as number);
    expect(schedule.reduce((s, p) => s + cents(p.amount), 0)).toBe(cents(tila.total_of_payments));
    expect(cents(tila.total_of_payments) - cents(tila.amount_financed)).toBe(cents(tila.finance_charge));
    expect(tila.amount_financed).toBe(body.approved_amount);
    expect(tila.apr).toBe(body.apr);
    // Level payments; the rounding remainder rides on the last one only.
    expect(new Set(schedule.slice(0, -1).map((p) => p.amount)).size).toBe(1);
    // First payment one month after the decision date, the same day of month after that.
    expect(schedule[0]!.due_date).toBe('2026-04-15');
    expect(schedule.at(-1)!.due_date).toBe(`${2026 + Math.floor((2 + (body.term_months as number)) / 12)}-${String(((2 + (body.term_months as number)) % 12) + 1).padStart(2, '0')}-15`);
    // APR recomputed from the schedule with code that shares nothing with the service.
    const recomputed = independentApr(tila.amount_financed, '2026-03-15', schedule);
    expect(Math.abs(recomputed - Number(body.apr))).toBeLessThanOrEqual(0.005 + 1e-9);
    // A level monthly schedule's APR is its note rate (here the contract rate), to the cent's rounding.
    expect(Math.abs(Number(body.apr) - Number(body.contract_rate))).toBeLessThanOrEqual(0.01);
    return { tila, schedule };
  }

  it('approves a direct loan: buy rate = contract rate, no reserve, LTV of the amount financed, Appendix J APR', async () => {
    const r = await create({ consumer: { consumer_id: soft }, vehicle: vehicle(), loan: loan(), channel: 'direct' });
    expect(r.statusCode, r.body).toBe(200);
    const body = r.json();
    checkApproved(body, null);
    expect(body).toMatchObject({ kyc_tier: 'soft', kyc_status: 'skipped', approved_amount: '13000.00', term_months: 60, ltv: '86.67', dealer_reserve: '0.00' });
    expect(body.contract_rate).toBe(body.buy_rate);
    // Grade A, 60 months, used: 5.99 + 1.00 used-vehicle adder.
    expect(body.buy_rate).toBe('6.99');
    expect((await poll(body.decision_id)).body).toBe(r.body);
  });

  it('approves an indirect loan at the 60-month cap: contract = buy + 1.25; the reserve is 75% of the extra finance charge', async () => {
    const r = await create(indirect('1.25'));
    expect(r.statusCode, r.body).toBe(200);
    const body = r.json();
    const { tila } = checkApproved(body, '16000.00');
    expect(tila).toMatchObject({ total_down_payment: '3000.00' });
    expect(cents(body.contract_rate) - cents(body.buy_rate)).toBe(125);
    const fcContract = independentFinanceCharge(1_300_000, cents(body.contract_rate), 60);
    const fcBuy = independentFinanceCharge(1_300_000, cents(body.buy_rate), 60);
    expect(cents(tila.finance_charge)).toBe(fcContract);
    expect(cents(body.dealer_reserve)).toBe(Math.round(((fcContract - fcBuy) * 75) / 100));
    expect(cents(body.dealer_reserve)).toBeGreaterThan(0);
  });

  it('caps the markup by term: 1.26 at 60 months and 1.01 at 72 months are 422; 1.00 at 72 and 84 months approve', async () => {
    for (const [markup, term, cap] of [['1.26', 60, '1.25'], [1.01, 72, '1.00'], ['1.5', 84, '1.00']] as const) {
      const r = await create(indirect(markup, { term_months: term }));
      expect(r.statusCode, `${markup} at ${term}`).toBe(422);
      const e = errorOf(r);
      expect(e.error).toBe('unprocessable_entity');
      expect(e.message).toContain('dealer.markup_rate_pct');
      expect(e.message).toContain(cap);
    }
    for (const term of [72, 84]) {
      const r = await create(indirect(1, { term_months: term }));
      expect(r.statusCode, r.body).toBe(200);
      const body = checkApproved(r.json(), '16000.00') && r.json();
      expect(cents(body.contract_rate) - cents(body.buy_rate)).toBe(100);
    }
  });

  it('refuses an unknown dealer, a disabled dealer and a dealer of the other environment with 422; accepts it again once re-enabled', async () => {
    for (const id of ['7d444840-9dc0-41ff-9a6e-3f5a8c9d6e10', disabledDealerId, liveDealerId]) {
      const r = await create({ ...indirect('0.50'), dealer: { dealer_id: id, markup_rate_pct: '0.50' } });
      expect(r.statusCode, id).toBe(422);
      expect(errorOf(r).message).toContain('dealer.dealer_id');
    }
    await t.ctx.dealers.enableDealer(sandboxScope(), disabledDealerId);
    const ok = await create({ ...indirect('0.50'), dealer: { dealer_id: disabledDealerId, markup_rate_pct: '0.50' } });
    expect(ok.statusCode, ok.body).toBe(200);
    await t.ctx.dealers.disableDealer(sandboxScope(), disabledDealerId);
  });

  it('answers 400 for shape problems and 422 for business rules, naming the field', async () => {
    const base = { consumer: { consumer_id: soft }, vehicle: vehicle(), loan: loan(), channel: 'direct' };
    const bad400: Array<[unknown, string]> = [
      [{ ...base, vehicle: vehicle({ vin: '1HGCM82634A004352' }) }, 'check digit'],
      [{ ...base, vehicle: vehicle({ vin: '1HGCM8263IA004352' }) }, 'I, O and Q'],
      [{ ...base, vehicle: vehicle({ vin: '1HGCM82633A00435' }) }, '17 characters'],
      [{ ...base, loan: loan({ term_months: 30 }) }, 'term_months'],
      [{ ...base, loan: loan({ amount: '16000.001' }) }, 'loan.amount'],
      [{ ...base, vehicle: vehicle({ mileage: -1 }) }, 'mileage'],
      [{ ...base, channel: 'indirect' }, 'dealer is required'],
      [{ ...base, dealer: { dealer_id: dealerId, markup_rate_pct: '0.50' } }, 'only sent with channel indirect'],
      [{ ...base, vehicle: vehicle({ condition: 'certified' }) }, 'condition'],
    ];
    for (const [body, text] of bad400) {
      const r = await create(body);
      expect(r.statusCode, text).toBe(400);
      expect(errorOf(r).message, text).toContain(text);
    }
    const bad422: Array<[unknown, string]> = [
      [{ ...base, loan: loan({ currency: 'EUR' }) }, 'loan.currency'],
      [{ ...base, vehicle: vehicle({ year: 1975 }) }, 'vehicle.year'],
      [{ ...base, vehicle: vehicle({ year: 2028 }) }, 'vehicle.year'],
      // A year the VIN does not carry (position 10): "R" is 2024, so a 2019 model is refused with both named.
      [{ ...base, vehicle: vehicle({ year: 2019, vin: vinFor(2024) }) }, 'vehicle.year 2019 does not match vehicle.vin, whose model-year code "R" (position 10) means model year 1994 or 2024'],
      [{ ...base, vehicle: vehicle({ value: '0' }) }, 'vehicle.value'],
      [{ ...base, loan: loan({ down_payment: '10000.00', trade_in_value: '6000.00' }) }, 'nothing would be financed'],
      [{ ...base, loan: loan({ amount: '7500.00', down_payment: '2000.00', trade_in_value: '1000.00' }) }, '5000.00 to 100000.00'],
      [{ ...base, loan: loan({ amount: '103000.01', down_payment: '0', trade_in_value: '3000.00' }) }, '5000.00 to 100000.00'],
      [{ consumer: { consumer_id: '0b7c0f2e-4a43-4f55-9d8a-0c7d0b1c2d3e' }, vehicle: vehicle(), loan: loan(), channel: 'direct' }, 'consumer.consumer_id'],
    ];
    for (const [body, text] of bad422) {
      const r = await create(body);
      expect(r.statusCode, text).toBe(422);
      expect(errorOf(r).message, text).toContain(text);
    }
  });

  it('declines with the declined shape and Regulation B reasons (sandbox 0000), and declines on collateral with AA-23 first', async () => {
    const r = await create({ consumer: newConsumer('0000'), vehicle: vehicle(), loan: loan(), channel: 'direct' });
    expect(r.statusCode).toBe(200);
    const body = r.json();
    expect(Object.keys(body).sort()).toEqual([...DECLINED_KEYS].sort());
    expect(body.decline_reasons[0]).toEqual({ code: 'AA-21', reason: 'Bankruptcy' });
    // 13,000.00 financed against a 9,000.00 vehicle: LTV 144.44 is above grade A's 130.
    const c = await create({ consumer: { consumer_id: soft }, vehicle: vehicle({ value: '9000.00' }), loan: loan(), channel: 'direct' });
    expect(c.json().outcome).toBe('declined');
    expect(c.json().decline_reasons[0]).toEqual({ code: 'AA-23', reason: 'Value or type of collateral not sufficient' });
    const audit = (await t.ctx.decisions.getAuditRecord(sandboxScope(), c.json().decision_id)) as { engine: { policyResult: { collateralRules: string[] } } };
    expect(audit.engine.policyResult.collateralRules).toEqual(['ltv_above_maximum']);
    // The maximum is compared with the LTV rounded up: 13,000.49 on 10,000.00 is 130.0049%, over
    // grade A's 130 though it would show as 130.00; 13,000.00 is exactly 130 and passes.
    const over = await create({ consumer: { consumer_id: soft }, vehicle: vehicle({ value: '10000.00' }), loan: loan({ amount: '16000.49' }), channel: 'direct' });
    expect(over.json()).toMatchObject({ outcome: 'declined', decline_reasons: [{ code: 'AA-23' }] });
    const at = await create({ consumer: { consumer_id: soft }, vehicle: vehicle({ value: '10000.00' }), loan: loan(), channel: 'direct' });
    expect(at.json()).toMatchObject({ outcome: 'approved', ltv: '130.00' });
  });

  it('refers 1111 (income not verifiable) and 3333 (score.errored, AA-25), and 2222 (identity, AA-24)', async () => {
    const ref = (await create({ consumer: newConsumer('1111'), vehicle: vehicle(), loan: loan(), channel: 'direct' })).json();
    expect(Object.keys(ref).sort()).toEqual([...REFERRED_KEYS].sort());
    expect(ref.outcome).toBe('referred');
    expect(ref.decline_reasons.map((x: { code: string }) => x.code)).toContain('AA-10');
    expect(ref.polling_url).toBe(`/v1/decisions/auto-loan/${ref.decision_id}`);
    const unavailable = (await create({ consumer: newConsumer('3333'), vehicle: vehicle(), loan: loan(), channel: 'direct' })).json();
    expect(unavailable.decline_reasons).toEqual([{ code: 'AA-25', reason: 'Credit information temporarily unavailable' }]);
    expect((await eventsOf(unavailable.decision_id)).map((e) => e.type)).toContain('score.errored');
    const idFails = (await create({ consumer: newConsumer('2222'), vehicle: vehicle(), loan: loan(), channel: 'direct' })).json();
    expect(idFails.decline_reasons).toEqual([{ code: 'AA-24', reason: 'Unable to verify identity' }]);
    expect(idFails.kyc_status).toBe('pending');
  });

  it('opens a pending state above 15,000.00 financed and completes it through the sandbox helper; events as BNPL with product and channel', async () => {
    const r = await create({ consumer: newConsumer('4821', 'Blake'), vehicle: vehicle({ value: '30000.00' }), loan: loan({ amount: '27000.00', trade_in_value: '0' }), channel: 'indirect', dealer: { dealer_id: dealerId, markup_rate_pct: '1.00' } });
    expect(r.statusCode, r.body).toBe(200);
    const pending = r.json();
    expect(Object.keys(pending).sort()).toEqual([...PENDING_KEYS].sort());
    expect(pending).toMatchObject({ status: 'needs_consumer_action', kyc_tier: 'enhanced', kyc_status: 'pending', outcome: null, estimated_completion_seconds: 120 });
    expect(pending.polling_url).toBe(`/v1/decisions/auto-loan/${pending.decision_id}`);
    expect(pending.consumer_complete_url).toMatch(/^http:\/\/127\.0\.0\.1:3000\/verify\/[A-Za-z0-9_-]{43}$/);
    expect((await poll(pending.decision_id)).body).toBe(r.body);
    const helper = await t.app.inject({
      method: 'POST', url: `/v1/sandbox/decisions/${pending.decision_id}/verification`, headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json' }, payload: '{"result":"pass"}',
    });
    expect(helper.statusCode, helper.body).toBe(200);
    const done = (await poll(pending.decision_id)).json();
    checkApproved(done, '27000.00');
    expect(done).toMatchObject({ approved_amount: '25000.00', kyc_tier: 'enhanced', kyc_status: 'matched', ltv: '83.33' });
    expect(cents(done.contract_rate) - cents(done.buy_rate)).toBe(100);
    expect(helper.json()).toEqual(done);
    const events = await eventsOf(pending.decision_id);
    expect(events.map((e) => e.type).sort()).toEqual(['application.created', 'application.kyc_completed', 'decision.created', 'decision.finalized', 'score.completed']);
    const documented = documentedEventFields();
    for (const e of events) expect(Object.keys(JSON.parse(e.data_json)).sort(), e.type).toEqual([...documented.get(e.type)!].sort());
    const created = JSON.parse(events.find((e) => e.type === 'application.created')!.data_json);
    expect(created).toMatchObject({ product: 'auto_loan', channel: 'indirect', dealer_id: dealerId, amount: '25000.00', merchant_name: 'Riverside Honda', merchant_category: 'automotive', kyc_tier: 'enhanced' });
    const finalized = JSON.parse(events.find((e) => e.type === 'decision.finalized')!.data_json);
    expect(finalized).toMatchObject({ outcome: 'approved', recommended_amount: 25000, recommended_rate_pct: Number(done.buy_rate) });
    expect(finalized.engine_version).toMatch(/^engine-.+\+auto-sc-2026\.11\.1\+auto-policy-2026\.11\.1$/);
  });

  it('completes a hard-tier decision through the hosted page (code, details, ID document), and the sandbox helper fail refers with AA-24', async () => {
    const identity = newConsumer('5932', 'Casey');
    const r = await create({ consumer: identity, vehicle: vehicle({ value: '52000.00', condition: 'new', year: 2026, mileage: 12 }), loan: loan({ amount: '52000.00', down_payment: '5000.00', trade_in_value: '0' }), channel: 'direct' });
    const pending = r.json();
    expect(pending).toMatchObject({ kyc_tier: 'hard', estimated_completion_seconds: 600 });
    const token = (pending.consumer_complete_url as string).split('/').at(-1)!;
    const v = t.ctx.verification;
    await v.sendCode(token);
    await v.submitCode(token, '000000');
    await v.submitIdentity(token, { ssnLast4: '5932', dob: identity.dob });
    const page = await v.submitDocument(token, { contentType: 'image/jpeg', bytes: JPEG });
    expect(page.kind === 'ok' && page.page.status).toBe('verified');
    const done = (await poll(pending.decision_id)).json();
    checkApproved(done, null);
    // New vehicle, grade A, 60 months: 5.99, no used-vehicle adder.
    expect(done).toMatchObject({ approved_amount: '47000.00', buy_rate: '5.99', contract_rate: '5.99', dealer_reserve: '0.00', ltv: '90.38', kyc_tier: 'hard' });

    const second = (await create({ consumer: newConsumer('6043', 'Devon'), vehicle: vehicle({ value: '30000.00' }), loan: loan({ amount: '27000.00' }), channel: 'direct' })).json();
    const fail = await t.app.inject({
      method: 'POST', url: `/v1/sandbox/decisions/${second.decision_id}/verification`, headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json' }, payload: '{"result":"fail"}',
    });
    expect(fail.json()).toMatchObject({ outcome: 'referred', decline_reasons: [{ code: 'AA-24', reason: 'Unable to verify identity' }] });
  });

  it('completes an enhanced auto loan on the hosted page over HTTP (send code, 000000) as a phone browser would', async () => {
    const pending = (await create({ consumer: newConsumer('3952', 'Harley'), vehicle: vehicle({ value: '30000.00' }), loan: loan({ amount: '24000.00' }), channel: 'indirect', dealer: { dealer_id: dealerId, markup_rate_pct: '0.90' } })).json();
    expect(pending.status).toBe('needs_consumer_action');
    const path = new URL(pending.consumer_complete_url as string).pathname;
    let cookie = '';
    let html = '';
    const take = (r: { body: string; headers: Record<string, unknown> }) => {
      const set = r.headers['set-cookie'];
      const found = (Array.isArray(set) ? set : set ? [set] : []).map(String).find((c) => c.startsWith('cds_verify='));
      if (found) cookie = found.split(';')[0]!;
      html = r.body;
    };
    const submit = async (step: string, fields: Record<string, string>) => {
      const csrf = new RegExp(`action="${path}/${step}"[\\s\\S]*?name="csrf" value="([^"]*)"`).exec(html)?.[1];
      expect(csrf, `form ${step} on: ${/<h1>(.*?)<\/h1>/.exec(html)?.[1]}`).toBeTruthy();
      const r = await t.app.inject({ method: 'POST', url: `${path}/${step}`, headers: { 'content-type': 'application/x-www-form-urlencoded', cookie }, payload: new URLSearchParams({ csrf: csrf!, ...fields }).toString() });
      expect(r.statusCode).toBe(200);
      take(r);
    };
    take(await t.app.inject({ method: 'GET', url: path }));
    // The page names the dealer the consumer is buying from.
    expect(html).toContain('Riverside Honda');
    await submit('send-code', {});
    await submit('code', { code: '000000' });
    expect(html).toContain("You're verified");
    const done = (await poll(pending.decision_id)).json();
    checkApproved(done, '24000.00');
    expect(done).toMatchObject({ approved_amount: '21000.00', kyc_status: 'matched', ltv: '70.00' });
    expect(cents(done.contract_rate) - cents(done.buy_rate)).toBe(90);
  });

  it('expires a pending auto loan after 24 h: declined AA-01 with decision.finalized', async () => {
    const pending = (await create({ consumer: newConsumer('7154', 'Emery'), vehicle: vehicle({ value: '30000.00' }), loan: loan({ amount: '27000.00' }), channel: 'direct' })).json();
    clock.advance(24 * 3600_000 + 1);
    try {
      const expired = (await poll(pending.decision_id)).json();
      expect(expired).toEqual({ decision_id: pending.decision_id, application_id: pending.decision_id, status: 'complete', outcome: 'declined', decline_reasons: [{ code: 'AA-01', reason: 'Credit application incomplete' }] });
      const finalized = (await eventsOf(pending.decision_id)).filter((e) => e.type === 'decision.finalized');
      expect(finalized).toHaveLength(1);
      expect(JSON.parse(finalized[0]!.data_json).engine_version).toContain('auto-policy');
    } finally {
      clock.set(new Date('2026-03-15T15:00:00.000Z'));
    }
  });

  it('replays a keyed create byte for byte, refuses the key with another body (409), and writes one decision', async () => {
    const body = indirect('0.75');
    const a = await create(body, { idem: 'auto-loan-replay-1' });
    const b = await create(body, { idem: 'auto-loan-replay-1' });
    expect(b.statusCode).toBe(200);
    expect(b.body).toBe(a.body);
    expect(b.headers['idempotent-replayed']).toBe('true');
    const c = await create(indirect('0.80'), { idem: 'auto-loan-replay-1' });
    expect(c.statusCode).toBe(409);
    expect(await eventsOf(a.json().decision_id)).toHaveLength(4);
    // A 422 is stored and replayed too.
    const x = await create(indirect('2.00'), { idem: 'auto-loan-replay-2' });
    const y = await create(indirect('2.00'), { idem: 'auto-loan-replay-2' });
    expect([x.statusCode, y.statusCode, y.headers['idempotent-replayed']]).toEqual([422, 422, 'true']);
    expect(y.body).toBe(x.body);
  });

  it('keeps products, tenants and environments apart: 404 across them', async () => {
    const id = (await create({ consumer: { consumer_id: soft }, vehicle: vehicle(), loan: loan(), channel: 'direct' })).json().decision_id;
    expect((await poll(id, t.tenant.sandbox.apiKey, 'bnpl')).statusCode).toBe(404);
    expect((await poll(id, t.tenant.live.apiKey)).statusCode).toBe(404);
    const other = await t.ctx.tenants.createTenant({ name: 'Other Lender' });
    expect(errorOf(await poll(id, other.sandbox.apiKey)).error).toBe('not_found');
    const bnpl = await t.app.inject({
      method: 'POST', url: '/v1/decisions/bnpl', headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({ consumer: { consumer_id: soft }, transaction: { amount: '120.00', currency: 'USD', merchant_name: 'Shop', merchant_category: 'general' } }),
    });
    expect((await poll(bnpl.json().decision_id)).statusCode).toBe(404);
    // The other tenant cannot use this tenant's dealer either.
    const r = await create({ ...indirect('0.50'), consumer: { consumer_id: other.sandbox.consumers[0]!.consumerId } }, { apiKey: other.sandbox.apiKey });
    expect(r.statusCode).toBe(422);
  });

  it('keeps an audit record with the vehicle (VIN included) and loan figures, and no PII', async () => {
    const r = await create({ consumer: newConsumer('8265', 'Finley'), vehicle: vehicle(), loan: loan(), channel: 'indirect', dealer: { dealer_id: dealerId, markup_rate_pct: '1.10' } });
    const audit = await t.ctx.decisions.getAuditRecord(sandboxScope(), r.json().decision_id);
    const text = JSON.stringify(audit);
    expect(audit).toMatchObject({
      request: { product: 'auto_loan', vehicle: { vin: vinFor(2024), year: 2024, mileage: 18000, value: '15000.00', age_years: 2 }, loan: { amount_financed: '13000.00', term_months: 60 }, ltv: '86.67', channel: 'indirect', dealer: { dealer_id: dealerId, markup_rate_pct: '1.10' } },
      offer: { markup_bps: 110, reserve_share_pct: 75 },
    });
    for (const pii of ['Finley', 'Motorist', 'avery.motorist', '4155550177', '1984-07-09', 'Garage']) expect(text).not.toContain(pii);
    expect(text).not.toMatch(standaloneDigits('8265'));
  });
});

describe.each(await dialectMatrix())('announced products [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('answers 404 product_not_available on create and poll, naming the product as coming soon; authentication first', async () => {
    for (const [path, name] of [['mortgage', 'Mortgage'], ['personal-loan', 'Personal loan'], ['credit-card', 'Credit card']]) {
      for (const [method, url] of [['POST', `/v1/decisions/${path}`], ['GET', `/v1/decisions/${path}/5b0a3a52-8f3e-4c8e-9a1d-2f6b7c8d9e0f`]] as const) {
        const r = await t.app.inject({ method, url, headers: { ...bearer(t.tenant.live.apiKey), ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) }, ...(method === 'POST' ? { payload: '{"consumer":{}}' } : {}) });
        expect(r.statusCode, url).toBe(404);
        const e = errorOf(r);
        expect(e.error).toBe('product_not_available');
        expect(e.message).toContain(`${name} decisions are coming soon`);
        expect(r.headers['request-id']).toBe(e.request_id);
        const anonymous = await t.app.inject({ method, url });
        expect(anonymous.statusCode).toBe(401);
      }
    }
  });
});
