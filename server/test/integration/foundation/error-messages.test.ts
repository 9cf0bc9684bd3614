/**
 * Error messages that teach (issue #12, item 4). Three walks:
 * 1. the registry: every code's default message is specific, and no code in the source raises
 *    invalid_request or unprocessable_entity without its own message (the default describes the
 *    category, it teaches nothing about the request);
 * 2. the schemas: every patterned field of the /v1 request schemas says its rule in words (`x-error`);
 * 3. a corpus of real bad requests against the routes: each answer has the expected code, names the
 *    offending field (JSON path, parameter or header) and its rule, is not generic, and echoes no
 *    personal value that was sent.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_REGISTRY, type ErrorCode } from '../../../src/http/errors/error-registry.js';
import { isGenericMessage } from '../../../src/http/errors/messages.js';
import { autoLoanCreateBodySchema } from '../../../src/modules/decisions/auto-loan.schemas.js';
import { bnplCreateBodySchema } from '../../../src/modules/decisions/bnpl.schemas.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { PortalClient } from '../../support/portal-client.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? sourceFiles(full) : full.endsWith('.ts') ? [full] : [];
  });
}

describe('the error registry', () => {
  it('gives every code a specific default message', () => {
    for (const [code, { message }] of Object.entries(ERROR_REGISTRY)) {
      expect(isGenericMessage(message), code).toBe(false);
      expect(message.length, code).toBeGreaterThan(25);
    }
  });

  it('is never raised as invalid_request or unprocessable_entity without a message of its own', () => {
    const offenders: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const text = readFileSync(file, 'utf8');
      const rel = path.relative(SRC, file);
      for (const m of text.matchAll(/new ApiError\(\s*'(invalid_request|unprocessable_entity)'\s*\)/g)) offenders.push(`${rel}: ${m[0]}`);
      for (const m of text.matchAll(/ERROR_REGISTRY\.(invalid_request|unprocessable_entity)\.message/g)) offenders.push(`${rel}: ${m[0]}`);
      for (const m of text.matchAll(/sendError\([^,]+,\s*'(invalid_request|unprocessable_entity)'\s*\)/g)) offenders.push(`${rel}: ${m[0]}`);
    }
    expect(offenders).toEqual([]);
  });

  it('the isGenericMessage check itself catches the generic forms', () => {
    for (const generic of ['Invalid request', 'Bad Request.', 'Validation failed', 'The request is invalid.', 'amount is invalid.', 'zip has an invalid format.', 'Unprocessable Entity']) {
      expect(isGenericMessage(generic), generic).toBe(true);
    }
    expect(isGenericMessage('transaction.amount 10.00 is below the allowed range 25.00-30,000.00 USD for BNPL plans.')).toBe(false);
  });
});

describe('the /v1 request schemas', () => {
  /** Every schema node with a `pattern`, with its JSON path. */
  function patterned(schema: unknown, at: string, out: string[] = []): string[] {
    if (!schema || typeof schema !== 'object') return out;
    const node = schema as Record<string, unknown>;
    if (typeof node.pattern === 'string' && typeof node['x-error'] !== 'string') out.push(at);
    for (const [name, child] of Object.entries((node.properties as Record<string, unknown> | undefined) ?? {})) patterned(child, at ? `${at}.${name}` : name, out);
    if (node.items) patterned(node.items, `${at}[]`, out);
    return out;
  }

  it('say every pattern\'s rule in words (x-error), never "must match the pattern"', () => {
    expect(patterned(bnplCreateBodySchema, '')).toEqual([]);
    expect(patterned(autoLoanCreateBodySchema, '')).toEqual([]);
  });
});

interface Case {
  name: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  body?: unknown;
  /** Sent as is (for malformed bodies). */
  raw?: string;
  headers?: Record<string, string>;
  /** Default: the sandbox key. null: no key. */
  apiKey?: string | null;
  status: number;
  code: ErrorCode;
  /** The field, parameter or header the message must name. */
  names: string;
  /** The rule (and allowed values or range) the message must state. */
  rule: RegExp;
  /** Personal values sent that must not come back. */
  secretValues?: string[];
}

describe('a corpus of real bad requests', () => {
  let db: TestDatabase;
  let t: TestApp;
  let soft: string;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await createTestApp(db, { env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '1' } });
    soft = t.tenant.sandbox.consumers.find((c) => c.tier === 'soft')!.consumerId;
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const person = (overrides: Record<string, unknown> = {}) => ({
    first_name: 'Grace',
    last_name: 'Hopper',
    email: 'grace@example.com',
    dob: '1986-12-09',
    phone: '+14155550123',
    ssn_last4: '6789',
    address: { line1: '7 Harbor Rd', city: 'Arlington', state: 'VA', zip: '22201' },
    ...overrides,
  });
  const txn = (amount: unknown, extra: Record<string, unknown> = {}) => ({ amount, currency: 'USD', merchant_name: 'Acme', merchant_category: 'furniture', ...extra });
  const bnpl = (body: unknown) => ({ method: 'POST' as const, url: '/v1/decisions/bnpl', body });
  /** A valid direct auto loan for the soft consumer, with parts replaced. */
  const autoLoan = (change: { vin?: string; loan?: Record<string, unknown>; dealer?: unknown }) => ({
    method: 'POST' as const,
    url: '/v1/decisions/auto-loan',
    body: {
      consumer: { consumer_id: soft },
      vehicle: { vin: change.vin ?? '1HGCM8262RA004352', year: 2024, make: 'Honda', model: 'Accord', mileage: 18000, condition: 'used', value: '15000.00' },
      loan: { amount: '16000.00', down_payment: '2000.00', term_months: 60, currency: 'USD', ...change.loan },
      channel: 'direct',
      ...(change.dealer ? { dealer: change.dealer } : {}),
    },
  });

  async function send(c: Case) {
    const headers: Record<string, string> = { ...(c.apiKey === null ? {} : bearer(c.apiKey ?? t.tenant.sandbox.apiKey)), ...c.headers };
    const payload = c.raw ?? (c.body === undefined ? undefined : JSON.stringify(c.body));
    if (payload !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
    return t.app.inject({ method: c.method ?? 'GET', url: c.url, headers, ...(payload !== undefined ? { payload } : {}) });
  }

  function check(c: Case, response: Awaited<ReturnType<typeof send>>) {
    expect(response.statusCode, `${c.name}: ${response.body}`).toBe(c.status);
    const { error, message } = errorOf(response);
    expect(error, c.name).toBe(c.code);
    expect(isGenericMessage(message), `${c.name}: "${message}" is generic`).toBe(false);
    expect(message, `${c.name} names ${c.names}`).toContain(c.names);
    expect(message, c.name).toMatch(c.rule);
    // The category's description is not an answer: a 400 or 422 says what was wrong with this request.
    if (c.status === 400 || c.status === 422) expect(message, c.name).not.toBe(ERROR_REGISTRY[c.code].message);
    for (const secret of c.secretValues ?? []) expect(message, `${c.name} echoes a personal value`).not.toContain(secret);
  }

  it('400 invalid_request: each names the field and its rule', async () => {
    const cases: Case[] = [
      { name: 'not JSON', ...bnpl(undefined), raw: '{"consumer":', status: 400, code: 'invalid_request', names: 'request body', rule: /not valid JSON/ },
      { name: 'empty body', ...bnpl(undefined), raw: '', status: 400, code: 'invalid_request', names: 'request body', rule: /empty; send a JSON object/ },
      { name: 'array body', ...bnpl([]), status: 400, code: 'invalid_request', names: 'The request body', rule: /must be a JSON object, not an array/ },
      { name: 'prototype key', ...bnpl(undefined), raw: '{"__proto__":{"admin":true},"consumer":{}}', status: 400, code: 'invalid_request', names: '__proto__', rule: /refused/ },
      { name: 'missing consumer', ...bnpl({ transaction: txn('100.00') }), status: 400, code: 'invalid_request', names: 'consumer', rule: /is required/ },
      { name: 'unknown field', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('100.00'), coupon: 'X' }), status: 400, code: 'invalid_request', names: 'coupon', rule: /not a recognised field; allowed fields: consumer, transaction, order, plan_preference/ },
      { name: 'unknown nested field', ...bnpl({ consumer: person({ middle_name: 'M' }), transaction: txn('100.00') }), status: 400, code: 'invalid_request', names: 'consumer.middle_name', rule: /allowed fields: consumer_id, first_name/ },
      { name: 'amount as boolean', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn(true) }), status: 400, code: 'invalid_request', names: 'transaction.amount', rule: /must be a string or a number, not a boolean/ },
      { name: 'three decimals', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('10.005') }), status: 400, code: 'invalid_request', names: 'transaction.amount', rule: /at most two decimals.*, such as "149\.97"/ },
      // Each refusal's message is true of the value refused: a leading zero, or more digits than any amount has.
      { name: 'leading zero', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('0100.00') }), status: 400, code: 'invalid_request', names: 'transaction.amount', rule: /no leading zeros/ },
      { name: 'fourteen digits', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('10000000000000') }), status: 400, code: 'invalid_request', names: 'transaction.amount', rule: /at most 13 digits before the point/ },
      { name: 'blank address.line1', ...bnpl({ consumer: person({ address: { line1: '   ', city: 'Arlington', state: 'VA', zip: '22201' } }), transaction: txn('100.00') }), status: 400, code: 'invalid_request', names: 'consumer.address.line1', rule: /1 to 200 characters, not only spaces/ },
      { name: 'blank address.city', ...bnpl({ consumer: person({ address: { line1: '7 Harbor Rd', city: ' ', state: 'VA', zip: '22201' } }), transaction: txn('100.00') }), status: 400, code: 'invalid_request', names: 'consumer.address.city', rule: /1 to 100 characters, not only spaces/ },
      { name: 'blank merchant_name', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('100.00', { merchant_name: '  ' }) }), status: 400, code: 'invalid_request', names: 'transaction.merchant_name', rule: /not only spaces/ },
      { name: 'bad email', ...bnpl({ consumer: person({ email: 'grace-at-example' }), transaction: txn('100.00') }), status: 400, code: 'invalid_request', names: 'consumer.email', rule: /valid email address/, secretValues: ['grace-at-example'] },
      { name: 'bad phone', ...bnpl({ consumer: person({ phone: '703-555-0100' }), transaction: txn('100.00') }), status: 400, code: 'invalid_request', names: 'consumer.phone', rule: /E\.164 phone number such as/, secretValues: ['703-555-0100'] },
      { name: 'impossible dob', ...bnpl({ consumer: person({ dob: '1986-02-30' }), transaction: txn('100.00') }), status: 400, code: 'invalid_request', names: 'consumer.dob', rule: /real calendar date in the form YYYY-MM-DD/, secretValues: ['1986-02-30'] },
      { name: 'bad ssn_last4', ...bnpl({ consumer: person({ ssn_last4: '67a9' }), transaction: txn('600.00') }), status: 400, code: 'invalid_request', names: 'consumer.ssn_last4', rule: /exactly four digits/, secretValues: ['67a9'] },
      { name: 'bad state', ...bnpl({ consumer: person({ address: { line1: '7 Harbor Rd', city: 'Arlington', state: 'Va', zip: '22201' } }), transaction: txn('100.00') }), status: 400, code: 'invalid_request', names: 'consumer.address.state', rule: /USPS two-letter state code in capitals, such as CA/ },
      { name: 'bad zip', ...bnpl({ consumer: person({ address: { line1: '7 Harbor Rd', city: 'Arlington', state: 'VA', zip: '2220' } }), transaction: txn('100.00') }), status: 400, code: 'invalid_request', names: 'consumer.address.zip', rule: /5-digit ZIP code or ZIP\+4/, secretValues: ['2220'] },
      { name: 'missing address.city', ...bnpl({ consumer: person({ address: { line1: '7 Harbor Rd', state: 'VA', zip: '22201' } }), transaction: txn('100.00') }), status: 400, code: 'invalid_request', names: 'consumer.address.city', rule: /is required for a new consumer/ },
      { name: 'blank first_name', ...bnpl({ consumer: person({ first_name: '   ' }), transaction: txn('100.00') }), status: 400, code: 'invalid_request', names: 'consumer.first_name', rule: /1 to 100 characters, not only spaces/ },
      { name: 'empty merchant_name', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('100.00', { merchant_name: '' }) }), status: 400, code: 'invalid_request', names: 'transaction.merchant_name', rule: /1 to 200 characters, not only spaces/ },
      { name: 'long description', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('100.00', { product_description: 'x'.repeat(501) }) }), status: 400, code: 'invalid_request', names: 'transaction.product_description', rule: /at most 500 characters/ },
      { name: 'lowercase currency', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('100.00', { currency: 'usd' }) }), status: 400, code: 'invalid_request', names: 'transaction.currency', rule: /ISO 4217 code such as USD/ },
      { name: 'unknown category', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('100.00', { merchant_category: 'weapons' }) }), status: 400, code: 'invalid_request', names: 'transaction.merchant_category', rule: /must be one of: food_beverage, furniture, .*general/ },
      { name: 'unknown plan', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('100.00'), plan_preference: 'pay_in_5' }), status: 400, code: 'invalid_request', names: 'plan_preference', rule: /must be one of: pay_in_4, pay_in_6, monthly/ },
      { name: 'installment_count', ...bnpl({ consumer: { consumer_id: soft }, order: { amount: '100.00', currency: 'USD', installment_count: 5 } }), status: 400, code: 'invalid_request', names: 'order.installment_count', rule: /must be one of: 3, 4, 6, 12, 18, 24, 36/ },
      { name: 'both forms', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('100.00'), order: { amount: '100.00', currency: 'USD', installment_count: 4 } }), status: 400, code: 'invalid_request', names: 'transaction and order', rule: /send either transaction or order/ },
      { name: 'plan_preference with order', ...bnpl({ consumer: { consumer_id: soft }, order: { amount: '100.00', currency: 'USD', installment_count: 4 }, plan_preference: 'pay_in_4' }), status: 400, code: 'invalid_request', names: 'plan_preference', rule: /order\.installment_count chooses the plan/ },
      { name: 'bad decision id', url: '/v1/decisions/bnpl/12345', status: 400, code: 'invalid_request', names: 'decision_id', rule: /must be a UUID/ },
      { name: 'long Idempotency-Key', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('100.00') }), headers: { 'idempotency-key': 'k'.repeat(256) }, status: 400, code: 'invalid_request', names: 'Idempotency-Key', rule: /1 to 255 printable ASCII characters/ },
      { name: 'events limit', url: '/v1/events?limit=500', status: 400, code: 'invalid_request', names: 'limit', rule: /whole number from 1 to 100/ },
      { name: 'events type', url: '/v1/events?type=decision.approved', status: 400, code: 'invalid_request', names: 'type', rule: /not an event type; allowed: decision\.finalized/ },
      { name: 'events created_gte', url: '/v1/events?created_gte=2026-01-01', status: 400, code: 'invalid_request', names: 'created_gte', rule: /unix seconds/ },
      { name: 'events cursor', url: '/v1/events?starting_after=nope', status: 400, code: 'invalid_request', names: 'starting_after', rule: /event id \(a UUID\)/ },
      { name: 'events unknown parameter', url: '/v1/events?page=2', status: 400, code: 'invalid_request', names: 'page', rule: /not a recognised query parameter; allowed query parameters: limit, type, created_gte, created_lt, starting_after/ },
      { name: 'auto-loan VIN check digit', ...autoLoan({ vin: '1HGCM82633A004353' }), status: 400, code: 'invalid_request', names: 'vehicle.vin', rule: /check digit/ },
      { name: 'auto-loan term', ...autoLoan({ loan: { term_months: 61 } }), status: 400, code: 'invalid_request', names: 'loan.term_months', rule: /one of: 24, 36, 48, 60, 72, 84/ },
      { name: 'auto-loan nothing to finance', ...autoLoan({ loan: { down_payment: '16000.00' } }), status: 422, code: 'unprocessable_entity', names: 'loan.down_payment', rule: /amount/ },
      { name: 'auto-loan dealer on a direct loan', ...autoLoan({ dealer: { dealer_id: soft, markup_rate_pct: '1.00' } }), status: 400, code: 'invalid_request', names: 'dealer', rule: /direct/ },
      { name: 'announced product', method: 'POST', url: '/v1/decisions/mortgage', body: {}, status: 404, code: 'product_not_available', names: 'Mortgage', rule: /coming soon/ },
      { name: 'sandbox helper result', method: 'POST', url: `/v1/sandbox/decisions/${soft}/verification`, body: { result: 'maybe' }, status: 400, code: 'invalid_request', names: 'result', rule: /must be one of: pass, fail/ },
    ];
    for (const c of cases) check(c, await send(c));
  });

  it('422 unprocessable_entity: each names the field, the rule and the allowed values or range', async () => {
    const cases: Case[] = [
      { name: 'EUR', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('100.00', { currency: 'EUR' }) }), status: 422, code: 'unprocessable_entity', names: 'transaction.currency', rule: /EUR is not supported; allowed: USD/ },
      { name: 'above every plan', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('30000.01') }), status: 422, code: 'unprocessable_entity', names: 'transaction.amount', rule: /30000\.01 is above the allowed range 25\.00-30,000\.00 USD for BNPL plans \(pay_in_4 25\.00-2,000\.00 USD, pay_in_6 100\.00-5,000\.00 USD, monthly 250\.00-30,000\.00 USD\)/ },
      { name: 'order below every plan', ...bnpl({ consumer: { consumer_id: soft }, order: { amount: 10, currency: 'USD', installment_count: 4 } }), status: 422, code: 'unprocessable_entity', names: 'order.amount', rule: /10\.00 is below the allowed range 25\.00-30,000\.00 USD/ },
      { name: 'plan not offered', ...bnpl({ consumer: { consumer_id: soft }, transaction: txn('2500.00'), plan_preference: 'pay_in_4' }), status: 422, code: 'unprocessable_entity', names: 'plan_preference', rule: /pay_in_4 allows 25\.00-2,000\.00 USD\. Plans offered for this amount: pay_in_6, monthly/ },
      { name: 'order plan not offered', ...bnpl({ consumer: { consumer_id: soft }, order: { amount: '2500.00', currency: 'USD', installment_count: 4 } }), status: 422, code: 'unprocessable_entity', names: 'order.installment_count', rule: /4 \(plan pay_in_4\) is not offered for 2500\.00 USD; pay_in_4 allows 25\.00-2,000\.00 USD/ },
      { name: 'installment count for a small amount', ...bnpl({ consumer: { consumer_id: soft }, order: { amount: '300.00', currency: 'USD', installment_count: 12 } }), status: 422, code: 'unprocessable_entity', names: 'order.installment_count', rule: /offered only above 5,000\.00 USD/ },
      // The order form is told the counts it can send for the amount, never plan_preference (a 400 with order).
      { name: 'installment count for a tiny amount', ...bnpl({ consumer: { consumer_id: soft }, order: { amount: '50.00', currency: 'USD', installment_count: 12 } }), status: 422, code: 'unprocessable_entity', names: 'order.installment_count', rule: /for 50\.00 USD send 4\.$/ },
      { name: 'order count not offered', ...bnpl({ consumer: { consumer_id: soft }, order: { amount: '3000.00', currency: 'USD', installment_count: 4 } }), status: 422, code: 'unprocessable_entity', names: 'order.installment_count', rule: /installment_count offered for this amount: 6\.$/ },
      { name: 'under 18', ...bnpl({ consumer: person({ dob: '2012-04-03' }), transaction: txn('100.00') }), status: 422, code: 'unprocessable_entity', names: 'consumer.dob', rule: /under 18; the applicant must be at least 18/, secretValues: ['2012-04-03', '2012', '04-03'] },
      { name: 'ssn missing (hard)', ...bnpl({ consumer: person({ ssn_last4: undefined }), transaction: txn('6000.00') }), status: 422, code: 'unprocessable_entity', names: 'consumer.ssn_last4', rule: /required for amounts from 5,000\.00 USD \(hard identity verification\); below 500\.00 USD it is optional/ },
      { name: 'unknown consumer_id', ...bnpl({ consumer: { consumer_id: '3f1c0a52-5f4e-4a8e-9a3c-1b2d3e4f5a6b' }, transaction: txn('100.00') }), status: 422, code: 'unprocessable_entity', names: 'consumer.consumer_id', rule: /does not match a consumer of this tenant and environment/ },
    ];
    for (const c of cases) check(c, await send(c));
  });

  it('the other 4xx name the header, method, key or limit they are about', async () => {
    const body = { consumer: { consumer_id: soft }, transaction: txn('100.00') };
    const cases: Case[] = [
      { name: 'no key', url: '/v1/events', apiKey: null, status: 401, code: 'invalid_api_key', names: 'Authorization: Bearer', rule: /No API key provided/ },
      { name: 'unknown key', url: '/v1/events', apiKey: 'svc_test_notarealkey0000000000000000', status: 401, code: 'invalid_api_key', names: 'Authorization header', rule: /svc_test_ \(sandbox\) or svc_live_ \(live\)/ },
      { name: 'unknown decision', url: '/v1/decisions/bnpl/6f0b7f5e-2b1c-4d3e-8f9a-0b1c2d3e4f5a', status: 404, code: 'not_found', names: 'decision_id', rule: /exists for this API key/ },
      { name: 'unknown event', url: '/v1/events/6f0b7f5e-2b1c-4d3e-8f9a-0b1c2d3e4f5a', status: 404, code: 'not_found', names: 'event_id', rule: /last 30 days/ },
      { name: 'unknown route', url: '/v1/loans', status: 404, code: 'not_found', names: '/v1/loans', rule: /No route GET/ },
      { name: 'wrong method', method: 'PUT', url: '/v1/decisions/bnpl', body, status: 405, code: 'method_not_allowed', names: 'POST', rule: /allowed: / },
      { name: 'too large', ...bnpl(undefined), raw: JSON.stringify({ ...body, pad: 'x'.repeat(70_000) }), status: 413, code: 'payload_too_large', names: '64 KiB', rule: /larger than/ },
      { name: 'text body', ...bnpl(undefined), raw: 'amount=100', headers: { 'content-type': 'text/plain' }, status: 415, code: 'unsupported_media_type', names: 'Content-Type: application/json', rule: /must be JSON/ },
    ];
    for (const c of cases) check(c, await send(c));

    // 409: the same key with another body.
    const first = await send({ name: 'first', ...bnpl(body), headers: { 'idempotency-key': 'teach-409' }, status: 200, code: 'idempotency_conflict', names: '', rule: /./ });
    expect(first.statusCode).toBe(200);
    check(
      { name: 'key reused', ...bnpl({ ...body, transaction: txn('101.00') }), headers: { 'idempotency-key': 'teach-409' }, status: 409, code: 'idempotency_conflict', names: 'Idempotency-Key', rule: /different request; use a new key/ },
      await send({ name: '', ...bnpl({ ...body, transaction: txn('101.00') }), headers: { 'idempotency-key': 'teach-409' }, status: 409, code: 'idempotency_conflict', names: '', rule: /./ }),
    );

    // 429: the live key's bucket (1 request/s, burst 2) runs out.
    let limited;
    for (let i = 0; i < 5 && !limited; i++) {
      const r = await send({ name: '', url: '/v1/events', apiKey: t.tenant.live.apiKey, status: 0, code: 'rate_limited', names: '', rule: /./ });
      if (r.statusCode === 429) limited = r;
    }
    expect(limited, 'the live key is rate limited').toBeDefined();
    check({ name: 'rate limited', url: '/v1/events', status: 429, code: 'rate_limited', names: 'Retry-After', rule: /1 requests per second \(burst 2\) exceeded for this API key/ }, limited!);
  });

  it('the portal\'s 4xx teach the same way', async () => {
    const portal = new PortalClient(t.app);
    const unauth = await portal.get('/portal/api/webhooks/sandbox/endpoints');
    expect(unauth.status).toBe(401);
    expect(unauth.body).toMatchObject({ error: 'not_authenticated', message: expect.stringMatching(/Sign in to the lender portal first/) });

    await portal.get('/portal/api/session');
    const short = await portal.post('/portal/api/signup', { company_name: 'Teach Co', name: 'Tess', email: 'tess@teach.example', password: 'short' });
    expect(short.status).toBe(400);
    expect(short.body.message).toMatch(/^password must be \d+ to \d+ characters/);

    expect((await portal.signUp({ company: 'Teach Co', email: 'tess@teach.example' })).status).toBe(201);
    const noCsrf = await portal.post('/portal/api/webhooks/sandbox/endpoints', { url: 'https://hooks.example.com/x' }, { csrf: null });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body).toMatchObject({ error: 'invalid_csrf_token', message: expect.stringContaining('CSRF token') });

    const httpUrl = await portal.post('/portal/api/webhooks/sandbox/endpoints', { url: 'http://hooks.example.com/x' });
    expect(httpUrl.body).toMatchObject({ error: 'invalid_request', message: 'url must use https (plain HTTP is refused).' });
    const badType = await portal.post('/portal/api/webhooks/sandbox/endpoints', { url: 'https://hooks.example.com/x', events: ['decision.approved'] });
    expect(badType.body.message).toMatch(/^events: unknown event type "decision\.approved"; known types: decision\.finalized/);
    const created = await portal.post('/portal/api/webhooks/sandbox/endpoints', { url: 'https://hooks.example.com/x' });
    expect(created.status).toBe(201);
    const id = (created.body.endpoint as { id: string }).id;
    const badFilter = await portal.get(`/portal/api/webhooks/sandbox/endpoints/${id}/deliveries?event_type=decision.approved`);
    expect(badFilter.status).toBe(400);
    expect(badFilter.body.message).toMatch(/^event_type is not a known event type; allowed: decision\.finalized, .*webhook\.test\.$/);
    const overlap = await portal.post(`/portal/api/webhooks/sandbox/endpoints/${id}/rotate-secret`, { overlap_hours: 500 });
    expect(overlap.status).toBe(400);
    expect(overlap.body.message).toBe('overlap_hours must be from 0 to 168.');
  });
});
