import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { sandboxProfileFor, syntheticCreditData } from '../../../src/modules/credit-data/sandbox-connector.js';
import { ADVERSE_ACTION_REASONS, decideBnpl, defaultBnplDocuments, replay, type BnplEngineDecision } from '../../../src/modules/engine/index.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { independentApr } from '../../support/independent-apr.js';
import { standaloneDigits } from '../../support/security-checks.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const MONEY = /^\d+\.\d{2}$/;
const REASONS = new Map<string, string>(ADVERSE_ACTION_REASONS.map((r) => [r.code, r.reason]));

const APPROVED_KEYS = ['decision_id', 'application_id', 'status', 'kyc_tier', 'kyc_status', 'outcome', 'approved_amount', 'currency', 'apr', 'term_months', 'payment_schedule', 'tila_disclosure', 'decline_reasons', 'consumer_complete_url', 'polling_url', 'expires_at'];
const DECLINED_KEYS = ['decision_id', 'application_id', 'status', 'outcome', 'decline_reasons'];
const REFERRED_KEYS = ['decision_id', 'application_id', 'status', 'kyc_tier', 'kyc_status', 'outcome', 'decline_reasons', 'polling_url'];
const PENDING_KEYS = ['decision_id', 'application_id', 'status', 'kyc_tier', 'kyc_status', 'outcome', 'consumer_complete_url', 'polling_url', 'estimated_completion_seconds', 'expires_at'];

/** A sandbox identity whose synthetic credit file has the given profile. */
function identityWithProfile(profile: string, salt = '') {
  for (let i = 0; i < 5000; i++) {
    const who = { firstName: `Test${salt}${i}`, lastName: 'Applicant', dob: '1985-05-20' };
    if (sandboxProfileFor(who) === profile) return who;
  }
  throw new Error(`no identity with profile ${profile}`);
}

function newConsumer(overrides: Record<string, unknown> = {}, who = identityWithProfile('prime')) {
  return {
    first_name: who.firstName,
    last_name: who.lastName,
    email: 'applicant@example.com',
    phone: '+14155550199',
    dob: who.dob,
    address: { line1: '1 Main Street', city: 'Austin', state: 'TX', zip: '73301' },
    ...overrides,
  };
}

const txn = (amount: string | number, extra: Record<string, unknown> = {}) => ({ amount, currency: 'USD', merchant_name: 'Acme Furniture', merchant_category: 'furniture', ...extra });

describe.each(await dialectMatrix())('BNPL decisions [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  const clock = new ManualClock('2026-01-31T15:00:00.000Z');
  let soft: string, enhanced: string, hard: string;

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    // The manual clock never refills buckets; limits have their own suite.
    t = await createTestApp(db, { clock, env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' } });
    [soft, enhanced, hard] = t.tenant.sandbox.consumers.map((c) => c.consumerId) as [string, string, string];
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const create = (body: unknown, opts: { key?: string; apiKey?: string; idem?: string } = {}) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { ...bearer(opts.apiKey ?? t.tenant.sandbox.apiKey), 'content-type': 'application/json', ...(opts.idem ? { 'idempotency-key': opts.idem } : {}) },
      payload: JSON.stringify(body),
    });
  const poll = (id: string, apiKey = t.tenant.sandbox.apiKey) => t.app.inject({ method: 'GET', url: `/v1/decisions/bnpl/${id}`, headers: bearer(apiKey) });
  const eventsOf = (decisionId: string) =>
    t.ctx.storage.db.selectFrom('events').selectAll().where('subject_id', '=', decisionId).orderBy('type').execute();

  function checkApproved(body: Record<string, unknown>) {
    expect(Object.keys(body).sort()).toEqual([...APPROVED_KEYS].sort());
    expect(body.decision_id).toMatch(UUID_V4);
    expect(body.application_id).toBe(body.decision_id);
    expect(body.status).toBe('complete');
    expect(body.outcome).toBe('approved');
    expect(body.currency).toBe('USD');
    expect(body.decline_reasons).toEqual([]);
    expect(body.consumer_complete_url).toBeNull();
    expect(body.polling_url).toBe(`/v1/decisions/bnpl/${body.decision_id}`);
    const tila = body.tila_disclosure as { amount_financed: string; finance_charge: string; total_of_payments: string; apr: string; payment_frequency: string };
    const schedule = body.payment_schedule as Array<{ num: number; due_date: string; amount: string }>;
    for (const v of [body.approved_amount, tila.amount_financed, tila.finance_charge, tila.total_of_payments, ...schedule.map((p) => p.amount)]) expect(v).toMatch(MONEY);
    const c = (s: string) => Math.round(Number(s) * 100);
    expect(schedule.reduce((sum, p) => sum + c(p.amount), 0)).toBe(c(tila.total_of_payments));
    expect(c(tila.total_of_payments) - c(tila.amount_financed)).toBe(c(tila.finance_charge));
    expect(tila.amount_financed).toBe(body.approved_amount);
    expect(tila.apr).toBe(body.apr);
    expect(schedule.map((p) => p.num)).toEqual(schedule.map((_, i) => i + 1));
    const decisionDate = clock.now().toISOString().slice(0, 10);
    const recomputed = independentApr(tila.amount_financed, decisionDate, schedule);
    expect(Math.abs(recomputed - Number(body.apr))).toBeLessThan(0.125);
    if (c(tila.finance_charge) === 0) expect(body.apr).toBe('0.00');
    expect(new Date(body.expires_at as string).getTime()).toBe(clock.now().getTime() + 30 * 86_400_000);
    return { tila, schedule };
  }

  it('approves the seeded soft consumer on pay_in_4 with the exact approved shape', async () => {
    const r = await create({ consumer: { consumer_id: soft }, transaction: txn('149.97') });
    expect(r.statusCode).toBe(200);
    const body = r.json();
    const { tila, schedule } = checkApproved(body);
    expect(body.kyc_tier).toBe('soft');
    expect(body.kyc_status).toBe('skipped');
    expect(body.term_months).toBe(2);
    expect(tila.payment_frequency).toBe('biweekly');
    expect(schedule).toEqual([
      { num: 1, due_date: '2026-02-14', amount: '37.49' },
      { num: 2, due_date: '2026-02-28', amount: '37.49' },
      { num: 3, due_date: '2026-03-14', amount: '37.49' },
      { num: 4, due_date: '2026-03-28', amount: '37.50' },
    ]);
    const polled = await poll(body.decision_id);
    expect(polled.body).toBe(r.body);
  });

  it('approves a new prime consumer and counts monthly due dates from the 31st, clamped', async () => {
    // 480.00 is soft tier; monthly 250.00+ gives 3 level payments at the grade's rate.
    const r = await create({ consumer: newConsumer(), transaction: txn('480.00'), plan_preference: 'monthly' });
    const body = r.json();
    const { tila, schedule } = checkApproved(body);
    expect(body.kyc_status).toBe('matched');
    expect(body.term_months).toBe(3);
    expect(tila.payment_frequency).toBe('monthly');
    expect(schedule.map((p) => p.due_date)).toEqual(['2026-02-28', '2026-03-31', '2026-04-30']);
    expect(Number(tila.finance_charge)).toBeGreaterThan(0);
    expect(Number(body.apr)).toBeGreaterThan(0);
  });

  it('accepts a JSON number amount exactly like the string', async () => {
    const a = (await create({ consumer: { consumer_id: soft }, transaction: txn(99.99) })).json();
    expect(a.approved_amount).toBe('99.99');
  });

  it('declines with exactly the declined shape and Regulation B reasons (sandbox 0000)', async () => {
    const r = await create({ consumer: newConsumer({ ssn_last4: '0000' }), transaction: txn('200.00') });
    expect(r.statusCode).toBe(200);
    const body = r.json();
    expect(Object.keys(body).sort()).toEqual([...DECLINED_KEYS].sort());
    expect(body.outcome).toBe('declined');
    expect(body.status).toBe('complete');
    const reasons = body.decline_reasons as Array<{ code: string; reason: string }>;
    expect(reasons.length).toBeGreaterThanOrEqual(1);
    expect(reasons.length).toBeLessThanOrEqual(4);
    expect(reasons[0]!.code).toBe('AA-21');
    for (const reason of reasons) expect(REASONS.get(reason.code)).toBe(reason.reason);
    const events = await eventsOf(body.decision_id);
    const finalized = JSON.parse(events.find((e) => e.type === 'decision.finalized')!.data_json);
    expect(finalized.outcome).toBe('declined');
    expect(finalized.reason_codes).toEqual(reasons.map((r) => r.code));
  });

  it('refers with reasons (sandbox 1111)', async () => {
    const body = (await create({ consumer: newConsumer({ ssn_last4: '1111' }), transaction: txn('200.00') })).json();
    expect(Object.keys(body).sort()).toEqual([...REFERRED_KEYS].sort());
    expect(body.outcome).toBe('referred');
    expect(body.decline_reasons.length).toBeGreaterThanOrEqual(1);
    for (const reason of body.decline_reasons) expect(REASONS.get(reason.code)).toBe(reason.reason);
  });

  it('refers with AA-25 and emits score.errored when credit data is unavailable (sandbox 3333)', async () => {
    const body = (await create({ consumer: newConsumer({ ssn_last4: '3333' }), transaction: txn('200.00') })).json();
    expect(body.outcome).toBe('referred');
    expect(body.decline_reasons).toEqual([{ code: 'AA-25', reason: 'Credit information temporarily unavailable' }]);
    const types = (await eventsOf(body.decision_id)).map((e) => e.type);
    expect(types).toContain('score.errored');
    expect(types).not.toContain('score.completed');
    // Without credit data nothing was matched: the identity is not checked, and not called so.
    expect(body.kyc_status).toBe('pending');
    expect(types).not.toContain('application.kyc_completed');
    const row = await t.ctx.storage.db.selectFrom('decisions').select('consumer_id').where('id', '=', body.decision_id).executeTakeFirstOrThrow();
    const consumer = await t.ctx.storage.db.selectFrom('consumers').select('identity_status').where('id', '=', row.consumer_id).executeTakeFirstOrThrow();
    expect(consumer.identity_status).toBe('unverified');
  });

  it('refers with AA-24, kyc_status pending and application.kyc_failed when identity fails (sandbox 2222)', async () => {
    const body = (await create({ consumer: newConsumer({ ssn_last4: '2222' }), transaction: txn('200.00') })).json();
    expect(body.outcome).toBe('referred');
    expect(body.kyc_status).toBe('pending');
    expect(body.decline_reasons).toEqual([{ code: 'AA-24', reason: 'Unable to verify identity' }]);
    expect((await eventsOf(body.decision_id)).map((e) => e.type)).toContain('application.kyc_failed');
  });

  it('opens a pending state for the seeded enhanced and hard consumers, and polls return it unchanged', async () => {
    for (const [consumerId, amount, tier, hours, eta] of [
      [enhanced, '1500.00', 'enhanced', 24, 120],
      [hard, '6000.00', 'hard', 72, 600],
    ] as const) {
      const r = await create({ consumer: { consumer_id: consumerId }, transaction: txn(amount) });
      const body = r.json();
      expect(Object.keys(body).sort()).toEqual([...PENDING_KEYS].sort());
      expect(body.status).toBe('needs_consumer_action');
      expect(body.outcome).toBeNull();
      expect(body.kyc_tier).toBe(tier);
      expect(body.kyc_status).toBe('pending');
      expect(body.estimated_completion_seconds).toBe(eta);
      expect(body.consumer_complete_url).toMatch(/^http:\/\/127\.0\.0\.1:3000\/verify\/[A-Za-z0-9_-]{43}$/);
      expect(body.consumer_complete_url).not.toContain(body.decision_id);
      expect(new Date(body.expires_at).getTime()).toBe(clock.now().getTime() + hours * 3_600_000);
      expect((await poll(body.decision_id)).body).toBe(r.body);
      // A cache-buster an HTTP library or proxy adds changes nothing (docs/decisions.md: the poll has no parameters).
      const busted = await t.app.inject({ method: 'GET', url: `/v1/decisions/bnpl/${body.decision_id}?_=1764700000000`, headers: bearer(t.tenant.sandbox.apiKey) });
      expect([busted.statusCode, busted.body]).toEqual([200, r.body]);
      expect((await eventsOf(body.decision_id)).map((e) => e.type)).toEqual(['application.created', 'decision.created']);
    }
  });

  it('a scored decline carries its credit score disclosure (FCRA 615(a)): score, range, date, source and key factors, inquiries as a fifth', async () => {
    // Key factors, computed here independently of engine/key-factors.ts: points below each
    // characteristic's maximum, largest first, ties in scorecard order, each code once, only
    // characteristics the file had data for, four at most, and inquiries (AA-22) as a fifth when
    // they lowered the score but are not in the four.
    const independent = (partials: Array<{ reasonCode: string; points: number; maxPoints: number; dataPresent: boolean }>) => {
      const codes: string[] = [];
      for (const p of partials.map((x, i) => ({ ...x, i, gap: x.maxPoints - x.points })).filter((x) => x.gap > 0 && x.dataPresent).sort((a, b) => b.gap - a.gap || a.i - b.i)) {
        if (!codes.includes(p.reasonCode)) codes.push(p.reasonCode);
      }
      const four = codes.slice(0, 4);
      return codes.includes('AA-22') && !four.includes('AA-22') ? [...four, 'AA-22'] : four;
    };
    // A sandbox identity declined at 300.00 (the soft tier) whose inquiries are a key factor below the top four, found in-process.
    // And one with no credit file at all (AA-14): scored from missing bins, but nothing from a report was used.
    let found: { who: { firstName: string; lastName: string; dob: string }; engine: BnplEngineDecision } | null = null;
    let noFile: { firstName: string; lastName: string; dob: string } | null = null;
    for (let i = 0; i < 5000 && (!found || !noFile); i++) {
      const who = { firstName: `Factor${i}`, lastName: 'Applicant', dob: '1979-02-11' };
      const creditData = syntheticCreditData({ consumerId: 'any', ...who, ssnLast4: '6789', zip: '73301', sandboxProfile: null });
      const engine = await decideBnpl({ requestedAmountCents: 30_000, planPreference: null, history: { returning: false, priorApprovals: 0, priorDeclines: 0 }, creditData, asOf: clock.now().toISOString() }, defaultBnplDocuments());
      if (creditData.status === 'ok' && !creditData.file.hasFile) noFile ??= who;
      else if (!found && engine.outcome === 'declined' && engine.score !== null && independent(engine.partialScores).length === 5) found = { who, engine };
    }
    expect(found, 'no sandbox identity is declined at 300.00 with inquiries as a fifth key factor').not.toBeNull();
    expect(noFile, 'no sandbox identity without a credit file').not.toBeNull();
    const { who, engine } = found!;
    const declined = (await create({ consumer: newConsumer({ ssn_last4: '6789' }, who), transaction: txn('300.00') })).json();
    expect(declined.outcome).toBe('declined');

    const detail = await t.ctx.reporting.getDecisionDetail({ tenantId: t.tenant.tenantId, environment: 'sandbox' }, declined.decision_id);
    const factors = independent(engine.partialScores);
    expect(factors.at(-1)).toBe('AA-22');
    expect(detail.explanation.creditScoreDisclosure).toEqual({
      score: engine.score,
      range: { min: 300, max: 850 },
      scoredAt: clock.now().toISOString(),
      scorecard: 'bnpl-sc-2026.11.1',
      creditFileSource: expect.stringMatching(/\S/),
      keyFactors: factors.map((code) => ({ code, reason: REASONS.get(code) })),
    });
    // Lenders' systems get it from score.completed: the same key factors, the range, the score.
    const scored = JSON.parse((await eventsOf(declined.decision_id)).find((e) => e.type === 'score.completed')!.data_json);
    expect(scored).toMatchObject({ score: engine.score, score_range: { min: 300, max: 850 }, key_factor_codes: factors, credit_file_source: detail.explanation.creditScoreDisclosure!.creditFileSource });
    // No credit file: declined (AA-14), scored from the missing bins, and nothing to disclose.
    const without = (await create({ consumer: newConsumer({ ssn_last4: '6789' }, noFile!), transaction: txn('300.00') })).json();
    expect(without.decline_reasons[0].code).toBe('AA-14');
    expect((await t.ctx.reporting.getDecisionDetail({ tenantId: t.tenant.tenantId, environment: 'sandbox' }, without.decision_id)).explanation.creditScoreDisclosure).toBeNull();
    const withoutEvent = JSON.parse((await eventsOf(without.decision_id)).find((e) => e.type === 'score.completed')!.data_json);
    expect(withoutEvent).toMatchObject({ key_factor_codes: [], credit_file_source: null });
    // Nothing scored (the policy's referral without credit data): no disclosure.
    const unscored = (await create({ consumer: newConsumer({ ssn_last4: '3333' }, { firstName: 'Una', lastName: 'Scored', dob: '1980-01-02' }), transaction: txn('300.00') })).json();
    expect(unscored.decline_reasons.map((r: { code: string }) => r.code)).toEqual(['AA-25']);
    expect((await t.ctx.reporting.getDecisionDetail({ tenantId: t.tenant.tenantId, environment: 'sandbox' }, unscored.decision_id)).explanation.creditScoreDisclosure).toBeNull();
  });

  it('a counteroffer (approved for less than asked) gives decision.finalized the reasons the full amount was not offered; the body keeps decline_reasons empty', async () => {
    // A sandbox identity the engine offers less than 3,000.00 (grade C: limit 2,500.00), found in-process.
    let found: { who: { firstName: string; lastName: string; dob: string }; engine: BnplEngineDecision } | null = null;
    for (let i = 0; i < 3000 && !found; i++) {
      const who = { firstName: `Counter${i}`, lastName: 'Applicant', dob: '1985-05-20' };
      const creditData = syntheticCreditData({ consumerId: 'any', ...who, ssnLast4: '6789', zip: '73301', sandboxProfile: null });
      const engine = await decideBnpl({ requestedAmountCents: 300_000, planPreference: null, history: { returning: false, priorApprovals: 0, priorDeclines: 0 }, creditData, asOf: clock.now().toISOString() }, defaultBnplDocuments());
      if (engine.counteroffer) found = { who, engine };
    }
    expect(found, 'no sandbox identity gets a counteroffer at 3,000.00').not.toBeNull();
    const { who, engine } = found!;
    expect(engine.counterofferReasons.length).toBeGreaterThan(0);

    // 3,000.00 is the enhanced tier: pending until verified (the sandbox helper plays the consumer).
    const pending = (await create({ consumer: newConsumer({ ssn_last4: '6789' }, who), transaction: txn('3000.00') })).json();
    expect(pending.status).toBe('needs_consumer_action');
    const helper = await t.app.inject({
      method: 'POST', url: `/v1/sandbox/decisions/${pending.decision_id}/verification`, headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json' }, payload: '{"result":"pass"}',
    });
    expect(helper.statusCode, helper.body).toBe(200);
    const done = (await poll(pending.decision_id)).json();
    checkApproved(done);
    expect(done.approved_amount).toBe((engine.approvedAmountCents! / 100).toFixed(2));
    expect(Number(done.approved_amount)).toBeLessThan(3000);
    expect(done.decline_reasons).toEqual([]);
    const finalized = JSON.parse((await eventsOf(pending.decision_id)).find((e) => e.type === 'decision.finalized')!.data_json);
    expect(finalized).toMatchObject({ outcome: 'approved', recommended_amount: Number(done.approved_amount), risk_grade: engine.riskGrade });
    expect(finalized.reason_codes).toEqual(engine.counterofferReasons.map((r) => r.code));
    // The portal's explanation names them too, with their wording.
    const detail = await t.ctx.reporting.getDecisionDetail({ tenantId: t.tenant.tenantId, environment: 'sandbox' }, pending.decision_id);
    expect(detail.explanation.counterofferReasons).toEqual(engine.counterofferReasons.map((r) => ({ code: r.code, reason: REASONS.get(r.code) })));
    expect(detail.explanation.reasons).toEqual([]);
    // An approval in full still carries none.
    const full = (await create({ consumer: { consumer_id: soft }, transaction: txn('120.00') })).json();
    expect(JSON.parse((await eventsOf(full.decision_id)).find((e) => e.type === 'decision.finalized')!.data_json).reason_codes).toEqual([]);
  });

  it('maps the order form: 4 -> pay_in_4, 6 -> pay_in_6, merchant from the tenant', async () => {
    const four = (await create({ consumer: { consumer_id: soft }, order: { amount: '120.00', currency: 'USD', installment_count: 4 } })).json();
    expect(four.tila_disclosure.payment_frequency).toBe('biweekly');
    expect(four.payment_schedule).toHaveLength(4);
    const six = (await create({ consumer: { consumer_id: soft }, order: { amount: '120.00', currency: 'USD', installment_count: 6 } })).json();
    expect(six.payment_schedule).toHaveLength(6);
    expect(six.term_months).toBe(6);
    const row = await t.ctx.storage.db.selectFrom('decisions').select(['merchant_name', 'merchant_category']).where('id', '=', six.decision_id).executeTakeFirstOrThrow();
    expect(row).toEqual({ merchant_name: 'Test Lender', merchant_category: 'general' });
  });

  it('answers 400 invalid_request for shape problems, naming the field', async () => {
    const base = { consumer: newConsumer(), transaction: txn('100.00') };
    const cases: Array<[string, unknown, RegExp]> = [
      ['no consumer', { transaction: txn('100.00') }, /consumer is required/],
      ['no transaction', { consumer: newConsumer() }, /transaction is required/],
      ['both forms', { ...base, order: { amount: '100.00', currency: 'USD', installment_count: 4 } }, /^transaction and order cannot both be sent; send either transaction or order/],
      ['unknown top-level field', { ...base, coupon: 'X' }, /^coupon is not a recognised field; allowed fields: consumer, transaction, order, plan_preference\.$/],
      ['missing first_name', { ...base, consumer: newConsumer({ first_name: undefined }) }, /consumer\.first_name is required/],
      ['missing address.zip', { ...base, consumer: newConsumer({ address: { line1: '1 Main', city: 'Austin', state: 'TX' } }) }, /consumer\.address\.zip is required/],
      ['bad email', { ...base, consumer: newConsumer({ email: 'not-an-email' }) }, /consumer\.email must be a valid email address/],
      ['bad phone', { ...base, consumer: newConsumer({ phone: '415-555-0100' }) }, /consumer\.phone must be an E\.164/],
      ['impossible dob', { ...base, consumer: newConsumer({ dob: '1990-02-30' }) }, /consumer\.dob must be a real calendar date/],
      ['bad zip', { ...base, consumer: newConsumer({ address: { line1: '1', city: 'A', state: 'TX', zip: '7330' } }) }, /^consumer\.address\.zip must be a 5-digit ZIP code or ZIP\+4/],
      ['bad state', { ...base, consumer: newConsumer({ address: { line1: '1', city: 'A', state: 'XX', zip: '73301' } }) }, /^consumer\.address\.state must be a USPS two-letter state code in capitals, such as CA or NY\.$/],
      ['bad ssn_last4', { ...base, consumer: newConsumer({ ssn_last4: '12a4' }) }, /ssn_last4 must be exactly four digits/],
      ['bad consumer_id', { ...base, consumer: { consumer_id: 'abc' } }, /consumer_id must be a UUID/],
      ['three decimals', { ...base, transaction: txn('10.005') }, /at most two decimals/],
      ['number with three decimals', { ...base, transaction: txn(10.005) }, /at most two decimals/],
      ['negative amount', { ...base, transaction: txn('-5.00') }, /amount/],
      ['amount as boolean', { ...base, transaction: txn(true as unknown as string) }, /^transaction\.amount must be a string or a number, not a boolean\.$/],
      ['lowercase currency', { ...base, transaction: txn('100.00', { currency: 'usd' }) }, /currency must be an ISO 4217/],
      ['unknown category', { ...base, transaction: txn('100.00', { merchant_category: 'weapons' }) }, /merchant_category must be one of/],
      ['unknown plan', { ...base, plan_preference: 'pay_in_5' }, /plan_preference must be one of/],
      ['unknown installment count', { consumer: newConsumer(), order: { amount: '100.00', currency: 'USD', installment_count: 5 } }, /installment_count must be one of/],
    ];
    for (const [name, body, message] of cases) {
      const r = await create(body);
      expect(r.statusCode, name).toBe(400);
      const e = errorOf(r);
      expect(e.error, name).toBe('invalid_request');
      expect(e.message, name).toMatch(message);
    }
    const badId = await poll('not-a-uuid');
    expect(badId.statusCode).toBe(400);
  });

  it('answers 422 unprocessable_entity for business rules', async () => {
    const other = await t.ctx.tenants.createTenant({ name: 'Another Lender' });
    const cases: Array<[string, unknown, RegExp]> = [
      ['EUR', { consumer: newConsumer(), transaction: txn('100.00', { currency: 'EUR' }) }, /^transaction\.currency EUR is not supported; allowed: USD\.$/],
      ['below every plan', { consumer: newConsumer(), transaction: txn('10.00') }, /^transaction\.amount 10\.00 is below the allowed range 25\.00-30,000\.00 USD for BNPL plans \(pay_in_4 25\.00-2,000\.00 USD, pay_in_6 100\.00-5,000\.00 USD, monthly 250\.00-30,000\.00 USD\)\.$/],
      ['above every plan', { consumer: newConsumer(), transaction: txn('30000.01') }, /^transaction\.amount 30000\.01 is above the allowed range 25\.00-30,000\.00 USD/],
      ['zero', { consumer: newConsumer(), transaction: txn('0.00') }, /^transaction\.amount 0\.00 is below the allowed range 25\.00-30,000\.00 USD/],
      ['under 18', { consumer: newConsumer({ dob: '2010-06-01' }), transaction: txn('100.00') }, /^consumer\.dob gives an age under 18; the applicant must be at least 18 years old\.$/],
      ['ssn missing for enhanced', { consumer: newConsumer(), transaction: txn('600.00') }, /^consumer\.ssn_last4 is required for amounts from 500\.00 to below 5,000\.00 USD \(enhanced identity verification\)/],
      ['unknown consumer_id', { consumer: { consumer_id: '3f1c0a52-5f4e-4a8e-9a3c-1b2d3e4f5a6b' }, transaction: txn('100.00') }, /consumer_id does not match/],
      ['another tenant\'s consumer', { consumer: { consumer_id: other.sandbox.consumers[0]!.consumerId }, transaction: txn('100.00') }, /consumer_id does not match/],
      ['plan not offered for amount', { consumer: { consumer_id: soft }, transaction: txn('2500.00'), plan_preference: 'pay_in_4' }, /^plan_preference pay_in_4 is not offered for 2500\.00 USD; pay_in_4 allows 25\.00-2,000\.00 USD\. Plans offered for this amount: pay_in_6, monthly/],
      ['monthly below its range', { consumer: { consumer_id: soft }, transaction: txn('100.00'), plan_preference: 'monthly' }, /^plan_preference monthly is not offered for 100\.00 USD; monthly allows 250\.00-30,000\.00 USD\. Plans offered for this amount: pay_in_4, pay_in_6/],
      ['installment_count 12 for a small amount', { consumer: { consumer_id: soft }, order: { amount: '300.00', currency: 'USD', installment_count: 12 } }, /^order\.installment_count 12 is offered only above 5,000\.00 USD \(monthly plan, up to 30,000\.00 USD\); for 300\.00 USD send 4 or 6\.$/],
    ];
    for (const [name, body, message] of cases) {
      const r = await create(body);
      expect(r.statusCode, name).toBe(422);
      const e = errorOf(r);
      expect(e.error, name).toBe('unprocessable_entity');
      expect(e.message, name).toMatch(message);
    }
    // A sandbox consumer is invisible to the live key of the same tenant.
    const live = await create({ consumer: { consumer_id: soft }, transaction: txn('100.00') }, { apiKey: t.tenant.live.apiKey });
    expect(live.statusCode).toBe(422);
  });

  it('hides decisions of other tenants and environments as 404 not_found', async () => {
    const mine = (await create({ consumer: { consumer_id: soft }, transaction: txn('50.00') })).json();
    const other = await t.ctx.tenants.createTenant({ name: 'Snoop' });
    for (const key of [other.sandbox.apiKey, other.live.apiKey, t.tenant.live.apiKey]) {
      const r = await poll(mine.decision_id, key);
      expect(r.statusCode).toBe(404);
      expect(errorOf(r).error).toBe('not_found');
    }
    const unknown = await poll('6f0b7f5e-2b1c-4d3e-8f9a-0b1c2d3e4f5a');
    expect(unknown.statusCode).toBe(404);
  });

  it('replays a keyed create byte for byte and writes one decision with one set of events', async () => {
    const body = { consumer: newConsumer(), transaction: txn('75.00') };
    const first = await create(body, { idem: 'order-42' });
    const again = await create(body, { idem: 'order-42' });
    expect(again.body).toBe(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    // application.created, application.kyc_completed (a new consumer matched inline), decision.created, score.completed, decision.finalized.
    expect((await eventsOf(first.json().decision_id)).length).toBe(5);
    const conflict = await create({ ...body, transaction: txn('76.00') }, { idem: 'order-42' });
    expect(conflict.statusCode).toBe(409);
    const count = await t.ctx.storage.db.selectFrom('decisions').select((eb) => eb.fn.countAll<number>().as('n')).where('requested_amount_cents', '=', 7500).executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(1);
  });

  it('writes the events of a soft decision (a new consumer matched inline: application.kyc_completed too), with decision.finalized data exactly as specified and no PII', async () => {
    const consumer = newConsumer({ ssn_last4: '4321' });
    const body = (await create({ consumer, transaction: txn('150.00') })).json();
    expect(body.kyc_status).toBe('matched');
    const events = await eventsOf(body.decision_id);
    expect(events.map((e) => e.type).sort()).toEqual(['application.created', 'application.kyc_completed', 'decision.created', 'decision.finalized', 'score.completed']);
    expect(JSON.parse(events.find((e) => e.type === 'application.kyc_completed')!.data_json)).toEqual({
      application_id: body.decision_id,
      decision_id: body.decision_id,
      consumer_id: expect.any(String),
      kyc_tier: 'soft',
      kyc_status: 'matched',
    });
    // The same consumer again: verified, the check skipped, and no second kyc_completed.
    const consumerId = JSON.parse(events.find((e) => e.type === 'application.kyc_completed')!.data_json).consumer_id as string;
    const again = (await create({ consumer: { consumer_id: consumerId }, transaction: txn('120.00') })).json();
    expect(again.kyc_status).toBe('skipped');
    expect((await eventsOf(again.decision_id)).map((e) => e.type)).not.toContain('application.kyc_completed');
    const finalized = JSON.parse(events.find((e) => e.type === 'decision.finalized')!.data_json);
    expect(Object.keys(finalized).sort()).toEqual(['application_id', 'confidence', 'decision_id', 'engine_version', 'outcome', 'reason_codes', 'recommended_amount', 'recommended_rate_pct', 'risk_grade', 'score'].sort());
    expect(finalized.score).toBeGreaterThanOrEqual(300);
    expect(finalized.score).toBeLessThanOrEqual(850);
    expect(finalized.confidence).toBeGreaterThanOrEqual(0);
    expect(finalized.confidence).toBeLessThanOrEqual(1);
    expect(finalized.risk_grade).toMatch(/^[A-E]$/);
    expect(typeof finalized.recommended_amount).toBe('number');
    expect(typeof finalized.recommended_rate_pct).toBe('number');
    expect(finalized.engine_version).toMatch(/^engine-.+\+bnpl-sc-.+\+bnpl-policy-.+$/);
    const all = events.map((e) => e.data_json).join('\n');
    for (const pii of [consumer.dob, consumer.first_name, consumer.last_name, consumer.email, '1 Main Street', '+14155550199']) {
      expect(all).not.toContain(pii);
    }
    for (const digits of ['4321', '73301']) expect(all).not.toMatch(standaloneDigits(digits));
  });

  it('keeps an audit record that explains the decision and replays to the same answer', async () => {
    const body = (await create({ consumer: newConsumer({}, identityWithProfile('fair', 'a')), transaction: txn('300.00') })).json();
    const audit = (await t.ctx.decisions.getAuditRecord({ tenantId: t.tenant.tenantId, environment: 'sandbox' }, body.decision_id)) as { engine: BnplEngineDecision; request: unknown };
    expect(audit.engine.partialScores.length).toBeGreaterThan(0);
    expect(audit.engine.versions.scorecard).toMatch(/bnpl-sc/);
    expect(JSON.stringify(audit)).not.toContain('Applicant');
    const result = await replay(audit.engine);
    expect(result.differences).toEqual([]);
    expect(result.replayed.outcome).toBe(body.outcome);
  });

  it("gives the engine a returning consumer's history: its earlier approvals and declines, only those after a reset", async () => {
    const scope = { tenantId: t.tenant.tenantId, environment: 'sandbox' as const };
    const historyOf = async (decisionId: string) => ((await t.ctx.decisions.getAuditRecord(scope, decisionId)) as { engine: BnplEngineDecision }).engine.input.history;
    const consumerOf = async (decisionId: string) => (await t.ctx.storage.db.selectFrom('decisions').select('consumer_id').where('id', '=', decisionId).executeTakeFirstOrThrow()).consumer_id;
    const decide = async (consumer: unknown, outcome: string) => {
      clock.advance(1_000);
      const body = (await create({ consumer, transaction: txn('60.00') })).json();
      expect(body.outcome).toBe(outcome);
      return body.decision_id as string;
    };
    const approvedFirst = await decide(newConsumer(), 'approved');
    expect(await historyOf(approvedFirst)).toEqual({ returning: false, priorApprovals: 0, priorDeclines: 0 });
    const approving = { consumer_id: await consumerOf(approvedFirst) };
    expect(await historyOf(await decide(approving, 'approved'))).toEqual({ returning: true, priorApprovals: 1, priorDeclines: 0 });
    expect(await historyOf(await decide(approving, 'approved'))).toEqual({ returning: true, priorApprovals: 2, priorDeclines: 0 });
    const declining = { consumer_id: await consumerOf(await decide(newConsumer({ ssn_last4: '0000' }), 'declined')) };
    expect(await historyOf(await decide(declining, 'declined'))).toEqual({ returning: true, priorApprovals: 0, priorDeclines: 1 });
    clock.advance(1_000);
    await t.ctx.consumers.resetSandboxConsumer(scope, approving.consumer_id);
    expect(await historyOf(await decide(approving, 'approved'))).toEqual({ returning: true, priorApprovals: 0, priorDeclines: 0 });
    expect(await historyOf(await decide(approving, 'approved'))).toEqual({ returning: true, priorApprovals: 1, priorDeclines: 0 });
  });

  it('stores ssn_last4 only encrypted and never returns or logs it', async () => {
    const standalone = standaloneDigits('9876');
    const r = await create({ consumer: newConsumer({ ssn_last4: '9876' }), transaction: txn('60.00') });
    expect(r.body).not.toMatch(standalone);
    const rows = await t.ctx.storage.db.selectFrom('consumers').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain('"9876"');
    if (dialect === 'sqlite') {
      // The raw database file (and its WAL) must not hold the digits next to their field.
      const dir = db.dataDir;
      const raw = ['cds.sqlite', 'cds.sqlite-wal'].map((f) => { try { return readFileSync(path.join(dir, f)).toString('latin1'); } catch { return ''; } }).join('');
      expect(raw).toContain('v1.');
      expect(raw).not.toMatch(standalone);
    }
    expect(t.logs.text).not.toMatch(standalone);
    expect(t.logs.text).not.toContain('applicant@example.com');
  });
});
