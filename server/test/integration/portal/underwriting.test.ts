/**
 * The underwriting workplace on SQLite and PostgreSQL, through the real app: the referral queue
 * (masked applicant, reasons, score, grade, audit record), each action with its event committed
 * with it (decision.adjusted, application.documents_requested, application.condition_added) and
 * delivered to a real HTTPS receiver, the /v1 poll showing the new state in exactly the shape of an
 * automatic approval or decline, the 422s, the race between two underwriters (exactly one wins),
 * roles (403), other tenants and environments (404), PII reveals and document viewings recorded,
 * document requests answered through the hosted page and reviewed in verification review.
 * Auto loans: a referred indirect loan approved with an amount financed and a term, priced from the
 * policy's grade x term table (here an independent copy of it), APR and dealer reserve recomputed.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { independentApr } from '../../support/independent-apr.js';
import { makePng } from '../../support/browser.js';
import { PortalClient } from '../../support/portal-client.js';
import { standaloneDigits } from '../../support/security-checks.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';
import { documentedEventFields } from '../../support/webhook-docs.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const DAY = 24 * 3600_000;
const cents = (s: unknown) => Math.round(Number(s) * 100);

/**
 * Written out here from docs/auto-loan.md, not read from the policy: buy rate (bps) by grade and
 * term before the used-vehicle adder of 1.00 (terms up to 48 months share the 48-month rate).
 */
const AUTO_BUY_RATES: Record<string, Record<number, number>> = {
  A: { 48: 549, 60: 599, 72: 649, 84: 699 },
  B: { 48: 799, 60: 849, 72: 899, 84: 949 },
  C: { 48: 1199, 60: 1249, 72: 1349, 84: 1449 },
  D: { 48: 1599, 60: 1649, 72: 1749, 84: 1849 },
};
const usedBuyRateBps = (grade: string, term: number) => AUTO_BUY_RATES[grade]![Math.max(term, 48)]! + 100;

/** Finance charge of a level monthly loan, each month's interest rounded to the cent, the last payment clearing the balance. */
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
let counter = 0;
const uniqueEmail = (who: string) => `${who}.uw${++counter}@lender.example.com`;

function multipart(fields: Record<string, string>, files: Array<{ field: string; name: string; type: string; bytes: Buffer }>) {
  const boundary = `----cdsUw${randomBytes(8).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  for (const f of files) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${f.field}"; filename="${f.name}"\r\nContent-Type: ${f.type}\r\n\r\n`), f.bytes, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

type Role = 'admin' | 'developer' | 'underwriter' | 'viewer';

describe.each(await dialectMatrix())('underwriting workplace [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  let receiver: WebhookReceiver;
  const clock = new ManualClock('2026-04-10T15:30:00.000Z');

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, {
      clock,
      env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' },
      overrides: { webhookDelivery: { ca: receiver.ca, timeoutMs: 2_000, leaseMs: 30_000 } },
    });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await receiver?.stop();
  });

  /** A tenant with one signed-in user per role, its sandbox key and a webhook endpoint on the receiver. */
  async function team(company = 'Referral Lending') {
    const admin = new PortalClient(t.app);
    // Each team signs up from its own address: sign-ups are limited per address.
    const ip = `10.7.${++counter % 250}.${counter % 200}`;
    await admin.get('/portal/api/session');
    const signed = await admin.post('/portal/api/signup', { company_name: company, name: 'Ada Admin', email: uniqueEmail('admin'), password: 'correct horse battery' }, { ip });
    expect(signed.status, JSON.stringify(signed.body)).toBe(201);
    const members: Record<string, PortalClient> = { admin };
    const ids: Record<string, string> = { admin: (signed.body.user as { id: string }).id };
    for (const role of ['developer', 'underwriter', 'viewer'] as const) {
      const invite = await admin.post('/portal/api/invitations', { email: uniqueEmail(role), role });
      const token = String(invite.body.invite_url).split('#')[1]!;
      const member = new PortalClient(t.app);
      await member.get('/portal/api/session');
      const accepted = await member.post('/portal/api/invitation-links/accept', { token, name: `Uma ${role}`, password: 'another long passphrase' }, { ip });
      expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
      members[role] = member;
      ids[role] = (accepted.body.user as { id: string }).id;
    }
    const hookPath = `/uw-${++counter}`;
    const endpoint = await admin.post('/portal/api/webhooks/sandbox/endpoints', { url: receiver.url(hookPath), events: '*' });
    expect(endpoint.status).toBe(201);
    return {
      tenantId: (signed.body.tenant as { id: string }).id,
      apiKey: String(signed.body.sandbox_api_key),
      members: members as Record<Role, PortalClient>,
      ids: ids as Record<Role, string>,
      hookPath,
    };
  }

  const postBnpl = (apiKey: string, body: unknown) =>
    t.app.inject({ method: 'POST', url: '/v1/decisions/bnpl', headers: { ...bearer(apiKey), 'content-type': 'application/json' }, payload: JSON.stringify(body) });

  /** A sandbox decision referred by the magic SSN 1111 (soft tier, so it completes at once). */
  async function referred(apiKey: string, amount = '300.00', who = { first_name: 'Rosa', last_name: 'Referral', email: 'rosa.referral@example.com' }) {
    const r = await postBnpl(apiKey, {
      consumer: { ...who, phone: '+14155550123', dob: '1988-07-14', ssn_last4: '1111', address: { line1: '1 Market St', city: 'San Francisco', state: 'CA', zip: '94105' } },
      transaction: { amount, currency: 'USD', merchant_name: 'Acme Outdoor', merchant_category: 'sporting_goods' },
    });
    expect(r.statusCode, r.body).toBe(200);
    const body = r.json() as { decision_id: string; outcome: string };
    expect(body.outcome).toBe('referred');
    return body.decision_id;
  }

  const poll = async (apiKey: string, id: string) => {
    const r = await t.app.inject({ method: 'GET', url: `/v1/decisions/bnpl/${id}`, headers: bearer(apiKey) });
    return r.json() as Record<string, unknown>;
  };
  const events = async (type: string, decisionId: string) =>
    (await t.ctx.storage.db.selectFrom('events').selectAll().where('type', '=', type).where('subject_id', '=', decisionId).execute()).map((e) => JSON.parse(e.data_json) as Record<string, unknown>);
  const received = async (hookPath: string, type: string) => {
    await t.ctx.webhookDelivery.deliverDue();
    const events = receiver.requestsTo(hookPath).filter((r) => r.headers['svc-webhook-type'] === type).map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> });
    // What arrives is exactly what docs/webhooks.md documents for the type, and never PII.
    for (const e of events) {
      expect(Object.keys(e.data).sort(), type).toEqual([...documentedEventFields().get(type)!].sort());
      expect(JSON.stringify(e.data)).not.toMatch(/Rosa|Referral|rosa\.referral|4155550123|1988-07-14|Market St/);
    }
    return events;
  };
  const detail = async (client: PortalClient, id: string) => {
    const r = await client.get(`/portal/api/referrals/sandbox/${id}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.referral as Record<string, unknown> & { version: number };
  };

  it('lists referred decisions oldest first with the applicant masked, reasons, score, grade and the audit record', async () => {
    const { apiKey, members } = await team();
    const first = await referred(apiKey);
    clock.advance(60_000);
    const second = await referred(apiKey, '120.00', { first_name: 'Sam', last_name: 'Second', email: 'sam.second@example.com' });
    const list = await members.viewer.get('/portal/api/referrals/sandbox');
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ page: 1, total: 2 });
    const rows = list.body.data as Array<Record<string, unknown>>;
    expect(rows.map((r) => r.decision_id)).toEqual([first, second]);
    expect(rows[0]).toMatchObject({
      outcome: 'referred',
      version: 1,
      requested_amount: '300.00',
      risk_grade: 'D',
      score: expect.any(Number),
      applicant: { initials: 'R. R.', email: 'r•••@example.com', phone: '•••• 0123', state: 'CA' },
      reasons: expect.arrayContaining([{ code: expect.stringMatching(/^AA-\d\d$/), reason: expect.any(String) }]),
    });
    // Masked means masked: no name, email, phone, birth date or SSN digits anywhere in the queue.
    const text = JSON.stringify(list.body);
    for (const secret of ['Rosa', 'Referral', 'rosa.referral', '4155550123', '1988-07-14']) expect(text).not.toContain(secret);
    // The SSN digits as a value of their own: a random id may hold "1111" (one run's consumer id did).
    expect(text).not.toMatch(standaloneDigits('1111'));

    const d = await detail(members.viewer, first);
    expect(d.audit_record).toMatchObject({ engine: { riskGrade: 'D', versions: expect.any(Object) }, outcome: 'referred' });
    expect(d.pricing).toEqual({ risk_grade: 'D', source: 'decision', policy_version: 'bnpl-policy-2026.11.1', rates_bps: { pay_in_4: 0, pay_in_6: 1499, monthly: 3299 } });
    expect(d.actions).toEqual([]);
    expect(JSON.stringify(d)).not.toContain('Rosa');
  });

  it('approve: validation 422s, then the poll returns an approval shaped exactly like an automatic one and decision.adjusted arrives', async () => {
    const { apiKey, members, ids, hookPath } = await team();
    const id = await referred(apiKey, '300.00');
    const uw = members.underwriter;
    const v = (await detail(uw, id)).version;
    const refuse = async (body: Record<string, unknown>) => {
      const r = await uw.post(`/portal/api/referrals/sandbox/${id}/approve`, { expected_version: v, ...body });
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      return errorOf(r.raw).message;
    };
    expect(await refuse({ amount: '300.01', plan: 'pay_in_4' })).toMatch(/must not exceed the requested amount of 300\.00 USD/);
    expect(await refuse({ amount: '0.00', plan: 'pay_in_4' })).toMatch(/at least 0\.01/);
    expect(await refuse({ amount: '12.345', plan: 'pay_in_4' })).toMatch(/at most two decimals/);
    expect(await refuse({ amount: '50.00', plan: 'pay_in_6' })).toMatch(/plan pay_in_6 is offered for amounts from 100\.00 to 5000\.00 USD/);
    expect(await refuse({ amount: '20.00', plan: 'pay_in_4' })).toMatch(/25\.00 to 2000\.00/);
    expect(await refuse({ amount: '100.00', plan: 'weekly' })).toMatch(/plan must be one of/);
    expect(await refuse({ amount: '100.00' })).toMatch(/plan is required to approve a BNPL decision/);
    expect(await refuse({ amount: '280.00', plan: 'monthly', term_months: 5 })).toMatch(/term_months must be one of 3, 6, 12/);
    // Less than asked is a counteroffer: the reasons the notice will give are required and checked
    // as a decline's are (ADR 0046); with the amount asked (and no plan asked for) there are none.
    expect(await refuse({ amount: '280.00', plan: 'monthly' })).toMatch(/reason_codes is required to approve less than the requested 300\.00 USD: 1 to 4 adverse-action codes/);
    expect(await refuse({ amount: '280.00', plan: 'monthly', reason_codes: [] })).toMatch(/reason_codes is required/);
    expect(await refuse({ amount: '280.00', plan: 'monthly', reason_codes: ['AA-25'] })).toMatch(/AA-25 \(Credit information temporarily unavailable\) explains a referral only and cannot be a reason for a counteroffer/);
    expect(await refuse({ amount: '280.00', plan: 'monthly', reason_codes: ['AA-99'] })).toMatch(/AA-99 is not an adverse-action code/);
    expect(await refuse({ amount: '280.00', plan: 'monthly', reason_codes: ['AA-08', 'AA-08'] })).toMatch(/must not repeat a code/);
    expect(await refuse({ amount: '280.00', plan: 'monthly', reason_codes: ['AA-01', 'AA-02', 'AA-03', 'AA-04', 'AA-05'] })).toMatch(/1 to 4 adverse-action codes/);
    expect(await refuse({ amount: '300.00', plan: 'pay_in_4', reason_codes: ['AA-08'] })).toMatch(/reason_codes are given only with a counteroffer .*this approval grants what was asked/);
    expect(await events('decision.adjusted', id)).toEqual([]);
    expect((await detail(uw, id)).actions).toEqual([]);

    clock.advance(10 * 60_000);
    const approvedAt = clock.now();
    const r = await uw.post(`/portal/api/referrals/sandbox/${id}/approve`, { expected_version: v, amount: '280.00', plan: 'monthly', reason_codes: ['AA-08', 'AA-22'] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.version).toBe(v + 1);

    const polled = await poll(apiKey, id);
    // The same keys as an automatic approval (decision.presenter), priced at grade D's monthly rate.
    const automatic = await t.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { ...bearer(apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({ consumer: { consumer_id: (await t.ctx.consumers.listConsumers({ tenantId: (await t.ctx.storage.db.selectFrom('decisions').select('tenant_id').where('id', '=', id).executeTakeFirstOrThrow()).tenant_id, environment: 'sandbox' }, { seededOnly: true })).consumers[0]!.id }, transaction: { amount: '80.00', currency: 'USD', merchant_name: 'Acme', merchant_category: 'general' } }),
    });
    expect((automatic.json() as { outcome: string }).outcome).toBe('approved');
    expect(Object.keys(polled).sort()).toEqual(Object.keys(automatic.json() as object).sort());
    // The counteroffer's reasons are not decline reasons: the decision keeps decline_reasons empty.
    expect(polled).toMatchObject({ status: 'complete', outcome: 'approved', approved_amount: '280.00', currency: 'USD', term_months: 3, decline_reasons: [], consumer_complete_url: null, kyc_status: 'matched' });
    expect(polled.expires_at).toBe(new Date(approvedAt.getTime() + 30 * DAY).toISOString());
    const schedule = polled.payment_schedule as Array<{ num: number; due_date: string; amount: string }>;
    expect(schedule.map((p) => p.due_date)).toEqual(['2026-05-10', '2026-06-10', '2026-07-10']);
    const tila = polled.tila_disclosure as Record<string, string>;
    const sumCents = schedule.reduce((s, p) => s + Math.round(Number(p.amount) * 100), 0);
    expect(Math.round(Number(tila.total_of_payments) * 100)).toBe(sumCents);
    expect(tila).toMatchObject({ amount_financed: '280.00', payment_frequency: 'monthly', apr: polled.apr });
    expect(Number(tila.finance_charge)).toBeGreaterThan(0);
    // 32.99% nominal, monthly: the Appendix J APR of this schedule is close to it.
    expect(Math.abs(Number(polled.apr) - 32.99)).toBeLessThan(0.5);

    const [event] = await events('decision.adjusted', id);
    expect(event).toEqual({
      decision_id: id,
      application_id: id,
      previous_outcome: 'referred',
      outcome: 'approved',
      approved_amount: '280.00',
      currency: 'USD',
      plan: 'monthly',
      term_months: 3,
      apr: polled.apr,
      reason_codes: ['AA-08', 'AA-22'],
      adjusted_at: approvedAt.toISOString(),
      adjusted_by: ids.underwriter,
    });
    const deliveries = await received(hookPath, 'decision.adjusted');
    expect(deliveries.map((d) => d.data)).toEqual([event]);

    const after = await detail(uw, id);
    expect(after).toMatchObject({ outcome: 'approved', version: v + 1 });
    expect(after.actions).toMatchObject([{ kind: 'approved', user_id: ids.underwriter, user_name: 'Uma underwriter', created_at: approvedAt.toISOString(), details: { amount: '280.00', plan: 'monthly', pricing: { grade: 'D', annual_rate_bps: 3299 }, reason_codes: ['AA-08', 'AA-22'] } }]);
    const counterofferReasons = [
      { code: 'AA-08', reason: 'Income insufficient for amount of credit requested' },
      { code: 'AA-22', reason: 'Number of recent inquiries on credit bureau report' },
    ];
    expect((after.audit_record as { overrides: unknown[] }).overrides).toMatchObject([{ action: 'approved', by: ids.underwriter, offer: { approved_amount_cents: 28_000, annual_rate_bps: 3299 }, counteroffer_reasons: counterofferReasons }]);
    // The decision page gives the underwriter's reasons as the counteroffer's, not the referral's.
    const page = await members.viewer.get(`/portal/api/decisions/sandbox/${id}`);
    expect(page.status).toBe(200);
    expect(page.body.explanation).toMatchObject({ counteroffer_reasons: counterofferReasons, reasons: [] });
    // No longer in the queue; acting again with the new version is a 422, with the old one a 409.
    expect(((await uw.get('/portal/api/referrals/sandbox')).body.data as unknown[]).length).toBe(0);
    const again = await uw.post(`/portal/api/referrals/sandbox/${id}/decline`, { expected_version: v + 1, reason_codes: ['AA-08'] });
    expect(again.status).toBe(422);
    expect(errorOf(again.raw).message).toMatch(/Only referred decisions can be worked in the queue; this decision is approved/);
    const stale = await members.admin.post(`/portal/api/referrals/sandbox/${id}/decline`, { expected_version: v, reason_codes: ['AA-08'] });
    expect(stale.status).toBe(409);
    expect(errorOf(stale.raw)).toMatchObject({ error: 'decision_version_conflict', message: `This decision was changed by Uma underwriter (approved) at ${approvedAt.toISOString()}; reload to see the new state.` });
  });

  /** A sandbox auto loan (used 2024 Accord worth 15,000.00; 13,000.00 financed over 60 months, LTV 86.67). */
  async function autoLoan(apiKey: string, ssnLast4: string, extra: Record<string, unknown>, consumer?: Record<string, unknown>) {
    const r = await t.app.inject({
      method: 'POST',
      url: '/v1/decisions/auto-loan',
      headers: { ...bearer(apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({
        consumer: consumer ?? { first_name: 'Rosa', last_name: 'Referral', email: 'rosa.referral@example.com', phone: '+14155550123', dob: '1988-07-14', ssn_last4: ssnLast4, address: { line1: '1 Market St', city: 'San Francisco', state: 'CA', zip: '94105' } },
        vehicle: { vin: '1HGCM8262RA004352', year: 2024, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00' },
        loan: { amount: '16000.00', down_payment: '2000.00', trade_in_value: '1000.00', term_months: 60, currency: 'USD' },
        ...extra,
      }),
    });
    expect(r.statusCode, r.body).toBe(200);
    return r.json() as Record<string, unknown> & { decision_id: string; outcome: string };
  }
  const pollAutoLoan = async (apiKey: string, id: string) => (await t.app.inject({ method: 'GET', url: `/v1/decisions/auto-loan/${id}`, headers: bearer(apiKey) })).json() as Record<string, unknown>;

  it('approve an auto loan: amount financed and term; buy rate of grade x term, the dealer markup within the term cap, reserve and APR recomputed; decision.adjusted', async () => {
    const { apiKey, members, ids, hookPath } = await team();
    const dealer = await members.admin.post('/portal/api/dealers/sandbox/dealers', { name: 'Riverside Honda', license_number: 'OH-D-1001', state: 'OH' });
    expect(dealer.status, JSON.stringify(dealer.body)).toBe(201);
    const dealerId = String(dealer.body.id);
    const created = await autoLoan(apiKey, '1111', { channel: 'indirect', dealer: { dealer_id: dealerId, markup_rate_pct: '1.25' } });
    expect(created.outcome).toBe('referred');
    const id = created.decision_id;
    const uw = members.underwriter;

    // The detail shows the vehicle, loan, LTV, channel, dealer and markup, and the pricing by term.
    const d = await detail(uw, id);
    const grade = String(d.risk_grade);
    expect(grade).toMatch(/^[A-D]$/);
    expect(d).toMatchObject({
      product: 'auto_loan',
      pricing: null,
      requested_amount: '13000.00',
      requested_term_months: 60,
      merchant_name: 'Riverside Honda',
      auto_loan: {
        vehicle: { vin: '1HGCM8262RA004352', year: 2024, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00' },
        loan: { amount: '16000.00', down_payment: '2000.00', trade_in_value: '1000.00', amount_financed: '13000.00', term_months: 60 },
        ltv: '86.67',
        channel: 'indirect',
        dealer: { dealer_id: dealerId, name: 'Riverside Honda', markup_rate_pct: '1.25' },
        pricing: { risk_grade: grade, source: 'decision', policy_version: 'auto-policy-2026.11.1', dealer_reserve_share_pct: 75 },
      },
    });
    const terms = (d.auto_loan as { pricing: { terms: Array<Record<string, unknown>> } }).pricing.terms;
    expect(terms.map((x) => x.term_months)).toEqual([24, 36, 48, 60, 72, 84]);
    for (const x of terms) {
      expect(x.buy_rate, `term ${String(x.term_months)}`).toBe((usedBuyRateBps(grade, x.term_months as number) / 100).toFixed(2));
      // 1.25 fits the cap of terms up to 60 months (1.25), not the 1.00 above.
      expect(x).toMatchObject({ markup_cap_pct: (x.term_months as number) <= 60 ? '1.25' : '1.00', markup_allowed: (x.term_months as number) <= 60 });
    }

    const v = d.version;
    const refuse = async (body: Record<string, unknown>) => {
      const r = await uw.post(`/portal/api/referrals/sandbox/${id}/approve`, { expected_version: v, ...body });
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      return errorOf(r.raw).message;
    };
    expect(await refuse({ amount: '13000.01' })).toMatch(/amount must not exceed the requested amount financed of 13000\.00 USD/);
    expect(await refuse({ amount: '0.00' })).toMatch(/at least 0\.01/);
    // Below the policy's smallest loan a schedule makes no sense (0.01 was a 500 before): 422 naming the floor.
    for (const amount of ['0.01', '1.00', '4999.99']) {
      expect(await refuse({ amount, term_months: 84 })).toMatch(/amount must be at least 5000\.00 USD, the credit policy's smallest amount financed/);
    }
    expect(await refuse({ amount: '12000.00', term_months: 30 })).toMatch(/term_months must be one of 24, 36, 48, 60, 72, 84 for an auto loan; 30 is not/);
    expect(await refuse({ amount: '12000.00', plan: 'monthly' })).toMatch(/plan is not chosen for an auto loan/);
    expect(await refuse({ amount: '12000.00', term_months: 72 })).toMatch(/dealer markup of 1\.25 percentage points is above the policy's cap of 1\.00 for terms above 60 months/);
    expect(await refuse({ amount: '12000.00', term_months: 48 })).toMatch(/reason_codes is required to approve less than the requested 13000\.00 USD/);
    expect(await refuse({ amount: '13000.00', term_months: 60, reason_codes: ['AA-23'] })).toMatch(/reason_codes are given only with a counteroffer/);
    expect(await refuse({ amount: '13000.00', term_months: 48 })).toMatch(/reason_codes is required to approve on another plan or term than requested/);
    expect(await events('decision.adjusted', id)).toEqual([]);
    expect((await detail(uw, id)).version).toBe(v);

    clock.advance(10 * 60_000);
    const approvedAt = clock.now();
    const today = approvedAt.toISOString().slice(0, 10);
    const r = await uw.post(`/portal/api/referrals/sandbox/${id}/approve`, { expected_version: v, amount: '12000.00', term_months: 48, reason_codes: ['AA-23'] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.version).toBe(v + 1);

    // Exactly the shape of an automatic auto-loan approval (a seeded consumer's grade A indirect loan).
    const tenantId = (await t.ctx.storage.db.selectFrom('decisions').select('tenant_id').where('id', '=', id).executeTakeFirstOrThrow()).tenant_id;
    const seeded = (await t.ctx.consumers.listConsumers({ tenantId, environment: 'sandbox' }, { seededOnly: true })).consumers.find((c) => c.firstName === 'Riley')!;
    const automatic = await autoLoan(apiKey, '', { channel: 'indirect', dealer: { dealer_id: dealerId, markup_rate_pct: '1.25' } }, { consumer_id: seeded.id });
    expect(automatic.outcome).toBe('approved');
    const polled = await pollAutoLoan(apiKey, id);
    expect(r.body.decision).toEqual(polled);
    expect(Object.keys(polled).sort()).toEqual(Object.keys(automatic).sort());
    expect(polled).toMatchObject({ status: 'complete', outcome: 'approved', approved_amount: '12000.00', currency: 'USD', term_months: 48, decline_reasons: [], ltv: '80.00' });
    expect(polled).not.toHaveProperty('plan');
    expect(polled.expires_at).toBe(new Date(approvedAt.getTime() + 30 * DAY).toISOString());
    const buyBps = usedBuyRateBps(grade, 48);
    expect(cents(polled.buy_rate)).toBe(buyBps);
    expect(cents(polled.contract_rate)).toBe(buyBps + 125);
    const schedule = polled.payment_schedule as Array<{ num: number; due_date: string; amount: string }>;
    const tila = polled.tila_disclosure as Record<string, string>;
    expect(schedule).toHaveLength(48);
    expect(schedule[0]!.due_date).toBe('2026-05-10');
    expect(schedule.reduce((s, p) => s + cents(p.amount), 0)).toBe(cents(tila.total_of_payments));
    expect(tila).toMatchObject({ amount_financed: '12000.00', payment_frequency: 'monthly', apr: polled.apr });
    const fcContract = independentFinanceCharge(1_200_000, buyBps + 125, 48);
    const fcBuy = independentFinanceCharge(1_200_000, buyBps, 48);
    expect(cents(tila.finance_charge)).toBe(fcContract);
    // Approved for less than asked: the dealer restructures the sale, so no credit-sale lines are made up.
    expect(Object.keys(tila)).toEqual(['amount_financed', 'finance_charge', 'total_of_payments', 'apr', 'payment_frequency']);
    expect(Object.keys(automatic.tila_disclosure as object)).toEqual([...Object.keys(tila), 'total_down_payment', 'total_sale_price']);
    expect(Math.abs(independentApr(tila.amount_financed!, today, schedule) - Number(polled.apr))).toBeLessThanOrEqual(0.005 + 1e-9);
    expect(cents(polled.dealer_reserve)).toBe(Math.round(((fcContract - fcBuy) * 75) / 100));
    expect(cents(polled.dealer_reserve)).toBeGreaterThan(0);

    const [event] = await events('decision.adjusted', id);
    expect(event).toEqual({
      decision_id: id,
      application_id: id,
      previous_outcome: 'referred',
      outcome: 'approved',
      approved_amount: '12000.00',
      currency: 'USD',
      plan: null,
      term_months: 48,
      apr: polled.apr,
      reason_codes: ['AA-23'],
      adjusted_at: approvedAt.toISOString(),
      adjusted_by: ids.underwriter,
    });
    expect((await received(hookPath, 'decision.adjusted')).map((x) => x.data)).toEqual([event]);

    const after = await detail(uw, id);
    expect(after).toMatchObject({ outcome: 'approved', version: v + 1 });
    expect(after.actions).toMatchObject([
      { kind: 'approved', user_id: ids.underwriter, details: { amount: '12000.00', plan: null, term_months: 48, apr: polled.apr, buy_rate: polled.buy_rate, contract_rate: polled.contract_rate, dealer_reserve: polled.dealer_reserve, pricing: { grade, source: 'decision', buy_rate_bps: buyBps, markup_bps: 125, markup_cap_bps: 125 }, reason_codes: ['AA-23'] } },
    ]);
    expect((after.audit_record as { overrides: unknown[] }).overrides).toMatchObject([
      { action: 'approved', by: ids.underwriter, outcome: 'approved', offer: { approved_amount_cents: 1_200_000, term_months: 48, buy_rate_bps: buyBps, contract_rate_bps: buyBps + 125, dealer_reserve_cents: cents(polled.dealer_reserve), reserve_share_pct: 75, decision_date: today }, counteroffer_reasons: [{ code: 'AA-23', reason: 'Value or type of collateral not sufficient' }] },
    ]);
    const stale = await members.admin.post(`/portal/api/referrals/sandbox/${id}/approve`, { expected_version: v, amount: '100.00' });
    expect(stale.status).toBe(409);
  });

  it('an auto loan referred without a grade (credit data unavailable) is priced at the lowest grade with a buy rate; direct loans carry no markup or reserve', async () => {
    const { apiKey, members } = await team();
    // A 2017 vehicle (9 years old in 2026): terms above 60 months break the policy's term-for-age rule.
    const created = await autoLoan(apiKey, '3333', { channel: 'direct', vehicle: { vin: '1HGCM8264HA004352', year: 2017, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00' } });
    expect(created.outcome).toBe('referred');
    const d = await detail(members.underwriter, created.decision_id);
    expect(d.risk_grade).toBeNull();
    expect(d.auto_loan).toMatchObject({ channel: 'direct', dealer: null, vehicle: { age_years: 9 }, pricing: { risk_grade: 'D', source: 'lowest_priced_grade' } });
    const terms = (d.auto_loan as { pricing: { terms: Array<{ term_months: number; collateral_rules: string[] }> } }).pricing.terms;
    expect(terms.map((x) => [x.term_months, x.collateral_rules])).toEqual([[24, []], [36, []], [48, []], [60, []], [72, ['term_too_long_for_vehicle_age']], [84, ['term_too_long_for_vehicle_age']]]);
    const tooLong = await members.underwriter.post(`/portal/api/referrals/sandbox/${created.decision_id}/approve`, { expected_version: d.version, amount: '13000.00', term_months: 72 });
    expect(tooLong.status).toBe(422);
    expect(errorOf(tooLong.raw).message).toMatch(/term_months 72: the auto-loan policy's collateral rules refuse it for this 9-year-old vehicle .*term_too_long_for_vehicle_age/);
    const r = await members.underwriter.post(`/portal/api/referrals/sandbox/${created.decision_id}/approve`, { expected_version: d.version, amount: '13000.00' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const polled = await pollAutoLoan(apiKey, created.decision_id);
    expect(polled).toMatchObject({ outcome: 'approved', approved_amount: '13000.00', term_months: 60, buy_rate: '17.49', contract_rate: '17.49', dealer_reserve: '0.00', ltv: '86.67' });
    // A direct loan is no credit sale: no total sale price after an override either.
    expect(polled.tila_disclosure).not.toHaveProperty('total_sale_price');
  });

  it('decline: one to four distinct catalogue reasons, never AA-25; the poll returns a declined decision', async () => {
    const { apiKey, members, ids, hookPath } = await team();
    const id = await referred(apiKey);
    const v = (await detail(members.admin, id)).version;
    const refuse = async (codes: string[]) => {
      const r = await members.admin.post(`/portal/api/referrals/sandbox/${id}/decline`, { expected_version: v, reason_codes: codes });
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      return errorOf(r.raw).message;
    };
    expect(await refuse([])).toMatch(/1 to 4/);
    expect(await refuse(['AA-01', 'AA-02', 'AA-03', 'AA-04', 'AA-05'])).toMatch(/1 to 4/);
    expect(await refuse(['AA-08', 'AA-08'])).toMatch(/must not repeat/);
    expect(await refuse(['AA-99'])).toMatch(/AA-99 is not an adverse-action code/);
    expect(await refuse(['AA-25'])).toMatch(/AA-25 \(Credit information temporarily unavailable\) explains a referral only/);

    const r = await members.admin.post(`/portal/api/referrals/sandbox/${id}/decline`, { expected_version: v, reason_codes: ['AA-08', 'AA-17'] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await poll(apiKey, id)).toEqual({
      decision_id: id,
      application_id: id,
      status: 'complete',
      outcome: 'declined',
      decline_reasons: [
        { code: 'AA-08', reason: 'Income insufficient for amount of credit requested' },
        { code: 'AA-17', reason: 'Delinquent past or present credit obligations with others' },
      ],
    });
    const deliveries = await received(hookPath, 'decision.adjusted');
    expect(deliveries.map((d) => d.data)).toEqual([
      { decision_id: id, application_id: id, previous_outcome: 'referred', outcome: 'declined', approved_amount: null, currency: 'USD', plan: null, term_months: null, apr: null, reason_codes: ['AA-08', 'AA-17'], adjusted_at: clock.now().toISOString(), adjusted_by: ids.admin },
    ]);
    // The decision page gives the decline's reasons, not the ranking that referred it.
    const page = await members.viewer.get(`/portal/api/decisions/sandbox/${id}`);
    expect(page.body.explanation).toMatchObject({ reasons: [{ code: 'AA-08' }, { code: 'AA-17' }], counteroffer_reasons: [] });
  });

  it('approve the requested amount on another plan than asked: a counteroffer too, so its reasons are required', async () => {
    const { apiKey, members, hookPath } = await team();
    const ask = async () => {
      const r = await postBnpl(apiKey, {
        consumer: { first_name: 'Rosa', last_name: 'Referral', email: 'rosa.referral@example.com', phone: '+14155550123', dob: '1988-07-14', ssn_last4: '1111', address: { line1: '1 Market St', city: 'San Francisco', state: 'CA', zip: '94105' } },
        transaction: { amount: '300.00', currency: 'USD', merchant_name: 'Acme Outdoor', merchant_category: 'sporting_goods' },
        plan_preference: 'pay_in_4',
      });
      const body = r.json() as { decision_id: string; outcome: string };
      expect(body.outcome).toBe('referred');
      return body.decision_id;
    };
    const approve = (id: string, body: Record<string, unknown>) => members.underwriter.post(`/portal/api/referrals/sandbox/${id}/approve`, { expected_version: 1, amount: '300.00', ...body });

    const asked = await ask();
    const refused = await approve(asked, { plan: 'pay_in_4', reason_codes: ['AA-08'] });
    expect(refused.status).toBe(422);
    expect(errorOf(refused.raw).message).toMatch(/reason_codes are given only with a counteroffer/);

    const without = await approve(asked, { plan: 'pay_in_6' });
    expect(without.status).toBe(422);
    expect(errorOf(without.raw).message).toMatch(/reason_codes is required to approve on another plan or term than requested: 1 to 4 adverse-action codes/);
    const withReasons = await approve(asked, { plan: 'pay_in_6', reason_codes: ['AA-09'] });
    expect(withReasons.status, JSON.stringify(withReasons.body)).toBe(200);
    // The plan asked for, at the amount asked: no counteroffer, no reasons.
    const asAsked = await ask();
    expect((await approve(asAsked, { plan: 'pay_in_4' })).status).toBe(200);
    const codes = new Map((await received(hookPath, 'decision.adjusted')).map((e) => [e.data.decision_id, e.data.reason_codes]));
    expect(codes).toEqual(new Map([[asked, ['AA-09']], [asAsked, []]]));
    const page = await members.viewer.get(`/portal/api/decisions/sandbox/${asked}`);
    expect(page.body.explanation).toMatchObject({ counteroffer_reasons: [{ code: 'AA-09', reason: 'Excessive obligations in relation to income' }] });
  });

  it('two underwriters acting on one decision at once: exactly one wins, the other gets 409 and nothing of its action is written', async () => {
    const { apiKey, members } = await team();
    const id = await referred(apiKey);
    const v = (await detail(members.admin, id)).version;
    const [a, b] = await Promise.all([
      members.underwriter.post(`/portal/api/referrals/sandbox/${id}/approve`, { expected_version: v, amount: '300.00', plan: 'pay_in_4' }),
      members.admin.post(`/portal/api/referrals/sandbox/${id}/decline`, { expected_version: v, reason_codes: ['AA-09'] }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const loser = a.status === 409 ? a : b;
    expect(errorOf(loser.raw).message).toMatch(/^This decision was changed by .+ at \d{4}-\d\d-\d\dT.+; reload to see the new state\.$/);
    expect(await events('decision.adjusted', id)).toHaveLength(1);
    const actions = await t.ctx.storage.db.selectFrom('underwriting_actions').select('kind').where('decision_id', '=', id).execute();
    expect(actions.map((x) => x.kind)).toEqual([a.status === 200 ? 'approved' : 'declined']);
    expect((await poll(apiKey, id)).outcome).toBe(a.status === 200 ? 'approved' : 'declined');

    // The same race between two document requests: one request, one event.
    const id2 = await referred(apiKey);
    const [c, d] = await Promise.all([
      members.underwriter.post(`/portal/api/referrals/sandbox/${id2}/document-requests`, { expected_version: 1, document_types: ['proof_of_income'] }),
      members.admin.post(`/portal/api/referrals/sandbox/${id2}/conditions`, { expected_version: 1, code: 'down_payment' }),
    ]);
    expect([c.status, d.status].sort()).toEqual([201, 409]);
    const written = (await events('application.documents_requested', id2)).length + (await events('application.condition_added', id2)).length;
    expect(written).toBe(1);
  });

  it('request documents: event with the upload link, the hosted page takes the files once, verification review shows and serves them', async () => {
    const { apiKey, members, ids, hookPath } = await team();
    const id = await referred(apiKey);
    const bad = await members.underwriter.post(`/portal/api/referrals/sandbox/${id}/document-requests`, { expected_version: 1, document_types: ['passport_scan'] });
    expect(errorOf(bad.raw).message).toMatch(/passport_scan is not one of government_id, proof_of_income/);
    const r = await members.underwriter.post(`/portal/api/referrals/sandbox/${id}/document-requests`, { expected_version: 1, document_types: ['proof_of_income', 'proof_of_address'], note: 'Payslip please' });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const request = r.body.document_request as { id: string; upload_url: string; expires_at: string };
    expect(request.upload_url).toMatch(/^http:\/\/127\.0\.0\.1:3000\/verify\/[A-Za-z0-9_-]{43}$/);
    expect(request.expires_at).toBe(new Date(clock.now().getTime() + 14 * DAY).toISOString());
    const [event] = (await received(hookPath, 'application.documents_requested')).map((e) => e.data);
    expect(event).toEqual({
      application_id: id,
      decision_id: id,
      request_id: request.id,
      document_types: ['proof_of_income', 'proof_of_address'],
      upload_url: request.upload_url,
      expires_at: request.expires_at,
      requested_at: clock.now().toISOString(),
      requested_by: ids.underwriter,
    });
    expect(JSON.stringify(event)).not.toContain('Payslip'); // the note stays in the portal
    // The decision stays referred; its version moved.
    expect((await detail(members.underwriter, id)).version).toBe(2);

    // The link is single use: a read-only role sees it masked; those who request documents see it whole.
    const asViewer = (await detail(members.viewer, id)) as unknown as { document_requests: Array<{ upload_url: string }> };
    expect(asViewer.document_requests[0]!.upload_url).toMatch(/\/verify\/••••$/);
    const asUnderwriter = (await detail(members.underwriter, id)) as unknown as { document_requests: Array<{ upload_url: string }> };
    expect(asUnderwriter.document_requests[0]!.upload_url).toBe(request.upload_url);
    // The applicant opens the link: the upload page with one file field per requested document.
    const path = new URL(request.upload_url).pathname;
    const page = await t.app.inject({ method: 'GET', url: path });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Proof of income');
    expect(page.body).toContain('name="document_proof_of_address"');
    const cookie = String(page.headers['set-cookie']).split(';')[0]!;
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)![1]!;
    const png = makePng(8, 8);
    const pdf = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');
    const notAnImage = multipart({ csrf }, [
      { field: 'document_proof_of_income', name: 'a.txt', type: 'image/png', bytes: Buffer.from('just text') },
      { field: 'document_proof_of_address', name: 'b.pdf', type: 'application/pdf', bytes: pdf },
    ]);
    const refused = await t.app.inject({ method: 'POST', url: `${path}/documents`, headers: { cookie, 'content-type': notAnImage.contentType }, payload: notAnImage.payload });
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain('Proof of income: That file is not a JPEG, PNG or PDF');
    const missing = multipart({ csrf }, [{ field: 'document_proof_of_income', name: 'payslip.png', type: 'image/png', bytes: makePng(4, 4) }]);
    const half = await t.app.inject({ method: 'POST', url: `${path}/documents`, headers: { cookie, 'content-type': missing.contentType }, payload: missing.payload });
    expect(half.statusCode).toBe(422);
    expect(half.body).toContain('Proof of address: Choose a photo or scan of the document to upload.');
    expect(await t.ctx.storage.db.selectFrom('verification_documents').select('id').where('decision_id', '=', id).execute()).toHaveLength(0);
    const good = multipart({ csrf }, [
      { field: 'document_proof_of_income', name: 'payslip.png', type: 'image/png', bytes: png },
      { field: 'document_proof_of_address', name: 'bill.pdf', type: 'application/pdf', bytes: pdf },
    ]);
    const uploaded = await t.app.inject({ method: 'POST', url: `${path}/documents`, headers: { cookie, 'content-type': good.contentType }, payload: good.payload });
    expect(uploaded.statusCode).toBe(200);
    expect(uploaded.body).toContain('Documents received');
    // Single use: the same form again stores nothing more.
    const twice = await t.app.inject({ method: 'POST', url: `${path}/documents`, headers: { cookie, 'content-type': good.contentType }, payload: good.payload });
    expect(twice.body).toContain('Documents received');
    expect(await t.ctx.storage.db.selectFrom('verification_documents').select('id').where('decision_id', '=', id).execute()).toHaveLength(2);

    // Verification review: the item, its documents, the viewer (for documents:read only), the review.
    const queue = await members.viewer.get('/portal/api/verification-review/sandbox');
    const items = queue.body.data as Array<{ decision_id: string; status: string; version: number; documents: Array<{ id: string; content_type: string; document_type: string }> }>;
    items[0]?.documents.sort((a, b) => b.document_type.localeCompare(a.document_type));
    expect(items).toMatchObject([{ decision_id: id, status: 'pending', verification_failed: false, documents: [{ content_type: 'image/png', document_type: 'proof_of_income' }, { content_type: 'application/pdf', document_type: 'proof_of_address' }] }]);
    const docId = items[0]!.documents[0]!.id;
    expect((await members.viewer.get(`/portal/api/verification-review/sandbox/documents/${docId}`)).status).toBe(403);
    expect((await members.developer.get(`/portal/api/verification-review/sandbox/documents/${docId}`)).status).toBe(403);
    clock.advance(60_000);
    const served = await members.underwriter.get(`/portal/api/verification-review/sandbox/documents/${docId}`);
    expect(served.status).toBe(200);
    expect(served.headers).toMatchObject({ 'content-type': 'image/png', 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' });
    expect(String(served.headers['content-disposition'])).toMatch(/^inline; filename="document-[0-9a-f-]+\.png"$/);
    expect(served.raw.rawPayload.equals(png)).toBe(true);
    expect((await members.underwriter.get(`/portal/api/verification-review/live/documents/${docId}`)).status).toBe(404);

    expect((await members.viewer.post(`/portal/api/verification-review/sandbox/${id}/review`, { result: 'accepted', expected_version: items[0]!.version })).status).toBe(403);
    clock.advance(60_000);
    const reviewed = await members.underwriter.post(`/portal/api/verification-review/sandbox/${id}/review`, { result: 'accepted', note: 'Payslip matches', expected_version: items[0]!.version });
    expect(reviewed.status, JSON.stringify(reviewed.body)).toBe(200);
    expect(reviewed.body.item).toMatchObject({ status: 'accepted', reviewed_by: ids.underwriter, review_note: 'Payslip matches' });
    expect((await members.underwriter.post(`/portal/api/verification-review/sandbox/${id}/review`, { result: 'rejected', expected_version: items[0]!.version })).status).toBe(409);
    expect((await members.viewer.get('/portal/api/verification-review/sandbox')).body.data).toEqual([]);
    expect(((await members.viewer.get('/portal/api/verification-review/sandbox?status=reviewed')).body.data as unknown[]).length).toBe(1);

    const history = (await detail(members.viewer, id)).actions as Array<{ kind: string; user_id: string; details: Record<string, unknown> }>;
    expect(history.map((h) => h.kind)).toEqual(['documents_requested', 'document_viewed', 'verification_reviewed']);
    expect(history[1]).toMatchObject({ user_id: ids.underwriter, details: { document_id: docId } });
  });

  it('add condition: recorded, application.condition_added emitted; unknown codes are 422', async () => {
    const { apiKey, members, ids, hookPath } = await team();
    const id = await referred(apiKey);
    const bad = await members.underwriter.post(`/portal/api/referrals/sandbox/${id}/conditions`, { expected_version: 1, code: 'cosigner' });
    expect(bad.status).toBe(422);
    expect(errorOf(bad.raw).message).toMatch(/code must be one of proof_of_income/);
    const r = await members.underwriter.post(`/portal/api/referrals/sandbox/${id}/conditions`, { expected_version: 1, code: 'down_payment', note: '20% down' });
    expect(r.status).toBe(201);
    const condition = r.body.condition as { id: string };
    const [event] = (await received(hookPath, 'application.condition_added')).map((e) => e.data);
    expect(event).toEqual({ application_id: id, decision_id: id, condition_id: condition.id, code: 'down_payment', added_at: clock.now().toISOString(), added_by: ids.underwriter });
    const d = await detail(members.underwriter, id);
    expect(d).toMatchObject({ outcome: 'referred', version: 2, conditions: [{ id: condition.id, code: 'down_payment', note: '20% down', added_by: ids.underwriter }] });
  });

  it('reveal: full identity (never SSN digits) for underwriters and admins only, each reveal recorded', async () => {
    const { apiKey, members, ids } = await team();
    const id = await referred(apiKey);
    for (const role of ['viewer', 'developer'] as const) expect((await members[role].post(`/portal/api/referrals/sandbox/${id}/reveal`)).status).toBe(403);
    const r = await members.underwriter.post(`/portal/api/referrals/sandbox/${id}/reveal`);
    expect(r.status).toBe(200);
    expect(r.body.applicant).toEqual({
      first_name: 'Rosa',
      last_name: 'Referral',
      email: 'rosa.referral@example.com',
      phone: '+14155550123',
      dob: '1988-07-14',
      address: { line1: '1 Market St', line2: null, city: 'San Francisco', state: 'CA', zip: '94105', country: 'US' },
    });
    expect(JSON.stringify(r.body)).not.toMatch(standaloneDigits('1111'));
    expect((await members.underwriter.post(`/portal/api/referrals/sandbox/${id}/reveal`, {}, { csrf: null })).status).toBe(403);
    const actions = await t.ctx.storage.db.selectFrom('underwriting_actions').selectAll().where('decision_id', '=', id).execute();
    expect(actions).toMatchObject([{ kind: 'pii_revealed', user_id: ids.underwriter, created_at: clock.now().getTime() }]);
    expect(actions[0]!.details_json).not.toContain('Rosa');
    // The reveal is not a change to the decision: its version stays.
    expect((await detail(members.underwriter, id)).version).toBe(1);

    // A decision nobody referred (the engine declined it) is no one's case: no referral detail and
    // no reveal, for any role; nothing is recorded.
    const declined = await postBnpl(apiKey, {
      consumer: { first_name: 'Dana', last_name: 'Declined', email: 'dana@example.com', dob: '1980-01-02', ssn_last4: '0000', address: { line1: '2 Market St', city: 'San Francisco', state: 'CA', zip: '94105' } },
      transaction: { amount: '120.00', currency: 'USD', merchant_name: 'Acme Outdoor', merchant_category: 'sporting_goods' },
    });
    const declinedId = declined.json<{ decision_id: string; outcome: string }>().decision_id;
    expect(declined.json<{ outcome: string }>().outcome).toBe('declined');
    for (const role of ['admin', 'underwriter'] as const) {
      expect((await members[role].get(`/portal/api/referrals/sandbox/${declinedId}`)).status).toBe(404);
      const refused = await members[role].post(`/portal/api/referrals/sandbox/${declinedId}/reveal`);
      expect(refused.status).toBe(404);
      expect(JSON.stringify(refused.body)).not.toContain('Dana');
    }
    expect(await t.ctx.storage.db.selectFrom('underwriting_actions').selectAll().where('decision_id', '=', declinedId).execute()).toEqual([]);
    // A worked referral stays readable and revealable after it left the queue.
    const worked = await members.underwriter.post(`/portal/api/referrals/sandbox/${id}/decline`, { expected_version: 1, reason_codes: ['AA-21'] });
    expect(worked.status, JSON.stringify(worked.body)).toBe(200);
    expect((await members.underwriter.post(`/portal/api/referrals/sandbox/${id}/reveal`)).status).toBe(200);
  });

  it('roles and isolation: only underwriters and admins act; developers do not see the queue; other tenants and environments get 404', async () => {
    const { apiKey, members } = await team();
    const id = await referred(apiKey);
    const actions: Array<[string, Record<string, unknown>]> = [
      ['approve', { expected_version: 1, amount: '100.00', plan: 'pay_in_4' }],
      ['decline', { expected_version: 1, reason_codes: ['AA-08'] }],
      ['document-requests', { expected_version: 1, document_types: ['other'] }],
      ['conditions', { expected_version: 1, code: 'other' }],
    ];
    for (const [path, body] of actions) {
      const r = await members.viewer.post(`/portal/api/referrals/sandbox/${id}/${path}`, body);
      expect(r.status, path).toBe(403);
      expect(errorOf(r.raw).error).toBe('forbidden');
      expect((await members.developer.post(`/portal/api/referrals/sandbox/${id}/${path}`, body)).status, path).toBe(403);
    }
    expect((await members.developer.get('/portal/api/referrals/sandbox')).status).toBe(403);
    expect((await detail(members.underwriter, id)).version).toBe(1);

    const other = await team('Other Lending');
    expect((await other.members.admin.get(`/portal/api/referrals/sandbox/${id}`)).status).toBe(404);
    expect((await other.members.admin.get('/portal/api/referrals/sandbox')).body.data).toEqual([]);
    for (const [path, body] of actions) expect((await other.members.admin.post(`/portal/api/referrals/sandbox/${id}/${path}`, body)).status, path).toBe(404);
    expect((await other.members.admin.post(`/portal/api/referrals/sandbox/${id}/reveal`)).status).toBe(404);
    expect((await members.admin.get(`/portal/api/referrals/live/${id}`)).status).toBe(404);
    expect((await members.admin.post(`/portal/api/referrals/live/${id}/approve`, actions[0]![1])).status).toBe(404);
    expect(await events('decision.adjusted', id)).toEqual([]);
  });

  it('a referral without a grade (credit data unavailable) is priced at the policy\'s lowest priced grade; a failed hard-tier verification enters review', async () => {
    const { apiKey, members } = await team();
    const r = await postBnpl(apiKey, {
      consumer: { first_name: 'Una', last_name: 'Graded', email: 'una@example.com', dob: '1980-01-02', ssn_last4: '3333', address: { line1: '2 Main St', city: 'Austin', state: 'TX', zip: '73301' } },
      transaction: { amount: '400.00', currency: 'USD', merchant_name: 'Acme', merchant_category: 'general' },
    });
    const id = (r.json() as { decision_id: string; outcome: string }).decision_id;
    expect((r.json() as { decline_reasons: Array<{ code: string }> }).decline_reasons.map((x) => x.code)).toEqual(['AA-25']);
    const d = await detail(members.underwriter, id);
    expect(d.pricing).toMatchObject({ risk_grade: 'D', source: 'lowest_priced_grade' });
    const approved = await members.underwriter.post(`/portal/api/referrals/sandbox/${id}/approve`, { expected_version: d.version, amount: '400.00', plan: 'pay_in_6' });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    expect((approved.body.decision as { apr: string }).apr).not.toBe('0.00'); // grade D's 14.99% on pay_in_6

    // Hard tier (5,000.00 and above), verification failed through the sandbox helper.
    const hard = await t.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { ...bearer(apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({
        consumer: { first_name: 'Hal', last_name: 'Hard', email: 'hal@example.com', phone: '+14155550199', dob: '1975-03-04', ssn_last4: '4321', address: { line1: '3 Elm St', city: 'Denver', state: 'CO', zip: '80202' } },
        transaction: { amount: '6000.00', currency: 'USD', merchant_name: 'Acme', merchant_category: 'general' },
      }),
    });
    const hardId = (hard.json() as { decision_id: string }).decision_id;
    const failed = await t.app.inject({ method: 'POST', url: `/v1/sandbox/decisions/${hardId}/verification`, headers: { ...bearer(apiKey), 'content-type': 'application/json' }, payload: JSON.stringify({ result: 'fail' }) });
    expect(failed.statusCode, failed.body).toBe(200);
    const queue = await members.viewer.get('/portal/api/verification-review/sandbox');
    expect(queue.body.data).toMatchObject([{ decision_id: hardId, kyc_tier: 'hard', verification_failed: true, verification_state: 'failed', status: 'pending', documents: [] }]);
    // ...and it is also a referral (AA-24) in the queue.
    expect(((await members.viewer.get('/portal/api/referrals/sandbox')).body.data as Array<{ decision_id: string }>).map((x) => x.decision_id)).toContain(hardId);
  });

  it('an upload link expires after 14 days: the page says so and takes nothing', async () => {
    const { apiKey, members } = await team();
    const id = await referred(apiKey);
    const r = await members.underwriter.post(`/portal/api/referrals/sandbox/${id}/document-requests`, { expected_version: 1, document_types: ['government_id'] });
    const path = new URL(String((r.body.document_request as { upload_url: string }).upload_url)).pathname;
    const open = await t.app.inject({ method: 'GET', url: path });
    expect(open.body).toContain('Government-issued photo ID');
    const cookie = String(open.headers['set-cookie']).split(';')[0]!;
    const csrf = /name="csrf" value="([^"]+)"/.exec(open.body)![1]!;
    clock.advance(14 * DAY);
    const late = await t.app.inject({ method: 'GET', url: path });
    expect(late.body).toContain('This link has expired');
    const body = multipart({ csrf }, [{ field: 'document_government_id', name: 'id.png', type: 'image/png', bytes: makePng(4, 4) }]);
    const refused = await t.app.inject({ method: 'POST', url: `${path}/documents`, headers: { cookie, 'content-type': body.contentType }, payload: body.payload });
    expect(refused.body).toContain('This link has expired');
    expect(await t.ctx.storage.db.selectFrom('verification_documents').select('id').where('decision_id', '=', id).execute()).toHaveLength(0);
    expect((await t.app.inject({ method: 'GET', url: '/verify/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' })).statusCode).toBe(404);
  });
});
