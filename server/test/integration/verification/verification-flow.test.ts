/**
 * Hosted identity verification end to end, through the HTML forms a consumer's browser submits
 * (csrf field + cds_verify cookie taken from each response, exactly as a browser would), on both
 * dialects with a manual clock: the enhanced and hard journeys in sandbox and live (codes read from
 * a real local SMTP server and a real local SMS gateway), failure by code and by identity, document
 * checks and encrypted storage, CSRF, expiry (lazy and by the sweeper), the sandbox helper, and no
 * PII on any page or in the logs.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import type { CreditDataConnector } from '../../../src/modules/credit-data/credit-data.types.js';
import { createSandboxConnector } from '../../../src/modules/credit-data/sandbox-connector.js';
import { ADVERSE_ACTION_REASONS } from '../../../src/modules/engine/index.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { startFakeSmsGateway, type FakeSmsGateway } from '../../support/fake-sms-gateway.js';
import { startFakeSmtpServer, type FakeSmtpServer } from '../../support/fake-smtp-server.js';
import { CODE_SEND_TIMEOUT_MS } from '../../../src/modules/kyc/code-senders.js';
import { PAGE_LIMITS } from '../../../src/modules/kyc/verify.routes.js';
import { bearer, createTestApp, errorOf, type TestApp } from '../../support/test-app.js';

const HOUR = 3_600_000;
const REASONS = new Map<string, string>(ADVERSE_ACTION_REASONS.map((r) => [r.code, r.reason]));
const APPROVED_KEYS = ['decision_id', 'application_id', 'status', 'kyc_tier', 'kyc_status', 'outcome', 'approved_amount', 'currency', 'apr', 'term_months', 'payment_schedule', 'tila_disclosure', 'decline_reasons', 'consumer_complete_url', 'polling_url', 'expires_at'].sort();
const DECLINED_KEYS = ['decision_id', 'application_id', 'status', 'outcome', 'decline_reasons'].sort();
const REFERRED_KEYS = ['decision_id', 'application_id', 'status', 'kyc_tier', 'kyc_status', 'outcome', 'decline_reasons', 'polling_url'].sort();

/** The seeded sandbox consumers (docs/sandbox.md) and their PII, which no page or log may show. */
const EMERY = { phone: '+12125550102', email: 'emery.enhanced@sandbox.example.com', ssn: '5932', dob: '1979-11-02' };
const HARPER = { phone: '+13125550103', email: 'harper.hardcase@sandbox.example.com', ssn: '7043', dob: '1970-06-30' };

/** Live applicants (new consumers): one with a phone (SMS), one without (email). */
const LIVE_SMS = { first_name: 'Sasha', last_name: 'Phoneowner', email: 'sasha.phone@example.net', phone: '+16175550147', dob: '1981-04-17', ssn_last4: '6184', address: { line1: '12 Beacon Street', city: 'Boston', state: 'MA', zip: '02108' } };
const LIVE_EMAIL = { first_name: 'Lior', last_name: 'Mailonly', email: 'lior.mailonly@example.org', dob: '1976-09-23', ssn_last4: '4826', address: { line1: '77 Pine Street', city: 'Seattle', state: 'WA', zip: '98101' } };

const PII = [EMERY, HARPER, { ...LIVE_SMS, ssn: LIVE_SMS.ssn_last4 }, { ...LIVE_EMAIL, phone: null, ssn: LIVE_EMAIL.ssn_last4 }];

/** A valid 1x1 PNG, followed by a marker that must never be stored or shown in the clear. */
const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
const JPEG_HEADER = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]);

const txn = (amount: string) => ({ amount, currency: 'USD', merchant_name: 'Acme Furniture', merchant_category: 'furniture' });

/** Live credit data for the tests: the sandbox's synthetic bureau, always answering its good (seeded prime) file. */
function goodFileConnector(): CreditDataConnector {
  const sandbox = createSandboxConnector();
  return { name: 'test-good-file', fetchCreditFile: (subject, context) => sandbox.fetchCreditFile({ ...subject, sandboxProfile: 'hard' }, context) };
}

/** ssn_last4 as a standalone number (not part of an id, token or hash). */
const standalone = (digits: string) => new RegExp(`(?<![\\w-])${digits}(?![\\w-])`);

function multipartBody(fields: Record<string, string>, file: { field?: string; name: string; type: string; bytes: Buffer } | null) {
  const boundary = `----cdsTestBoundary${randomBytes(8).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  if (file) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${file.field ?? 'document'}"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`));
    parts.push(file.bytes, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

type Step = 'send-code' | 'code' | 'identity' | 'document';

/**
 * One consumer's browser on the hosted page: keeps the cds_verify cookie the server sets, reads the
 * csrf value from the form it submits, and records every page it was shown (for the PII check).
 */
class ConsumerBrowser {
  cookie: string | null = null;
  status = 0;
  html = '';
  headers: LightMyRequestResponse['headers'] = {};
  setCookieHeader: string | undefined;

  constructor(
    private readonly t: TestApp,
    readonly path: string,
    private readonly seen: string[],
  ) {}

  static fromUrl(t: TestApp, completeUrl: string, seen: string[]): ConsumerBrowser {
    return new ConsumerBrowser(t, new URL(completeUrl).pathname, seen);
  }

  private take(r: LightMyRequestResponse): this {
    const set = r.cookies.find((c) => c.name === 'cds_verify');
    if (set) this.cookie = set.value;
    const raw = r.headers['set-cookie'];
    this.setCookieHeader = Array.isArray(raw) ? raw.join('\n') : raw;
    this.status = r.statusCode;
    this.html = r.body;
    this.headers = r.headers;
    this.seen.push(r.body);
    return this;
  }

  private cookieHeader(cookie: string | null | undefined): Record<string, string> {
    const value = cookie === undefined ? this.cookie : cookie;
    return value === null ? {} : { cookie: `cds_verify=${value}` };
  }

  async open(): Promise<this> {
    return this.take(await this.t.app.inject({ method: 'GET', url: this.path, headers: this.cookieHeader(undefined) }));
  }

  /** The `<h1>` of the current page. */
  get heading(): string {
    return /<h1>(.*?)<\/h1>/s.exec(this.html)?.[1] ?? '';
  }

  /** The notice (error or info) of the current page, if any. */
  get notice(): string | null {
    return /<p class="notice [a-z]+" role="(?:alert|status)" id="notice">(.*?)<\/p>/s.exec(this.html)?.[1] ?? null;
  }

  /** The csrf value of the form posting to `step`; throws when the page has no such form. */
  csrfOf(step: Step): string {
    const forms = [...this.html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)];
    const form = forms.find((f) => f[1] === `${this.path}/${step}`);
    if (!form) throw new Error(`the page "${this.heading}" has no form posting to ${step}; forms: ${forms.map((f) => f[1]).join(', ')}`);
    const csrf = /<input type="hidden" name="csrf" value="([^"]*)">/.exec(form[2]!)?.[1];
    if (!csrf) throw new Error(`the ${step} form has no csrf field`);
    return csrf;
  }

  hasForm(step: Step): boolean {
    return this.html.includes(`action="${this.path}/${step}"`);
  }

  /**
   * Submit the url-encoded form of `step`. `csrf`: undefined = the page's own value, null = leave
   * the field out; `cookie`: undefined = the jar's, null = send none.
   */
  async submit(step: Exclude<Step, 'document'>, fields: Record<string, string> = {}, opts: { csrf?: string | null; cookie?: string | null } = {}): Promise<this> {
    const csrf = opts.csrf === undefined ? this.csrfOf(step) : opts.csrf;
    const body = new URLSearchParams({ ...(csrf === null ? {} : { csrf }), ...fields }).toString();
    return this.take(
      await this.t.app.inject({
        method: 'POST',
        url: `${this.path}/${step}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...this.cookieHeader(opts.cookie) },
        payload: body,
      }),
    );
  }

  async sendCode(opts: { csrf?: string | null; cookie?: string | null } = {}) {
    return this.submit('send-code', {}, opts);
  }

  async enterCode(code: string, opts: { csrf?: string | null; cookie?: string | null } = {}) {
    return this.submit('code', { code }, opts);
  }

  async confirmIdentity(ssnLast4: string, dob: string, opts: { csrf?: string | null; cookie?: string | null } = {}) {
    return this.submit('identity', { ssn_last4: ssnLast4, dob }, opts);
  }

  async upload(file: { name: string; type: string; bytes: Buffer } | null, opts: { csrf?: string | null; cookie?: string | null } = {}): Promise<this> {
    const csrf = opts.csrf === undefined ? this.csrfOf('document') : opts.csrf;
    const { payload, contentType } = multipartBody(csrf === null ? {} : { csrf }, file);
    return this.take(
      await this.t.app.inject({ method: 'POST', url: `${this.path}/document`, headers: { 'content-type': contentType, ...this.cookieHeader(opts.cookie) }, payload }),
    );
  }
}

let sms: FakeSmsGateway;
let smtp: FakeSmtpServer;

beforeAll(async () => {
  sms = await startFakeSmsGateway();
  smtp = await startFakeSmtpServer();
});
afterAll(async () => {
  await sms?.stop();
  await smtp?.stop();
});

describe.each(await dialectMatrix())('hosted identity verification [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  const clock = new ManualClock('2026-03-02T09:00:00.000Z');
  let enhanced: string, hard: string;
  /** Every page HTML any consumer was shown in this suite. */
  const pages: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, {
      clock,
      env: {
        RATE_LIMIT_SANDBOX_PER_S: '100000',
        RATE_LIMIT_LIVE_PER_S: '100000',
        SMTP_URL: smtp.url,
        SMTP_FROM: 'Acme Identity <verify@acme.test>',
        SMS_GATEWAY_URL: sms.url,
        SMS_GATEWAY_TOKEN: sms.token!,
      },
      overrides: { creditData: { live: goodFileConnector() } },
    });
    [, enhanced, hard] = t.tenant.sandbox.consumers.map((c) => c.consumerId) as [string, string, string];
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const create = async (body: unknown, apiKey = t.tenant.sandbox.apiKey) => {
    const r = await t.app.inject({ method: 'POST', url: '/v1/decisions/bnpl', headers: { ...bearer(apiKey), 'content-type': 'application/json' }, payload: JSON.stringify(body) });
    expect(r.statusCode, r.body).toBe(200);
    return r;
  };
  const createPending = async (tier: 'enhanced' | 'hard', body?: unknown, apiKey?: string) => {
    const r = await create(body ?? { consumer: { consumer_id: tier === 'enhanced' ? enhanced : hard }, transaction: txn(tier === 'enhanced' ? '1500.00' : '6000.00') }, apiKey);
    const json = r.json<{ decision_id: string; status: string; kyc_tier: string; consumer_complete_url: string }>();
    expect(json.status).toBe('needs_consumer_action');
    expect(json.kyc_tier).toBe(tier);
    return { id: json.decision_id, body: r.body, browser: ConsumerBrowser.fromUrl(t, json.consumer_complete_url, pages) };
  };
  const poll = (id: string, apiKey = t.tenant.sandbox.apiKey) => t.app.inject({ method: 'GET', url: `/v1/decisions/bnpl/${id}`, headers: bearer(apiKey) });
  const helper = (id: string, result: 'pass' | 'fail', opts: { apiKey?: string; idem?: string } = {}) =>
    t.app.inject({
      method: 'POST',
      url: `/v1/sandbox/decisions/${id}/verification`,
      headers: { ...bearer(opts.apiKey ?? t.tenant.sandbox.apiKey), 'content-type': 'application/json', ...(opts.idem ? { 'idempotency-key': opts.idem } : {}) },
      payload: JSON.stringify({ result }),
    });
  const eventsOf = (id: string) => t.ctx.storage.db.selectFrom('events').selectAll().where('subject_id', '=', id).orderBy('created_at').execute();
  const eventTypes = async (id: string) => (await eventsOf(id)).map((e) => e.type).sort();
  const decisionRow = (id: string) => t.ctx.storage.db.selectFrom('decisions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const verificationRow = (id: string) => t.ctx.storage.db.selectFrom('verifications').selectAll().where('decision_id', '=', id).executeTakeFirst();
  const documentsOf = (id: string) => t.ctx.storage.db.selectFrom('verification_documents').selectAll().where('decision_id', '=', id).execute();
  const scope = (environment: 'sandbox' | 'live' = 'sandbox') => ({ tenantId: t.tenant.tenantId, environment });

  function expectApproved(body: Record<string, unknown>, tier: 'enhanced' | 'hard') {
    expect(Object.keys(body).sort()).toEqual(APPROVED_KEYS);
    expect(body).toMatchObject({ status: 'complete', outcome: 'approved', kyc_tier: tier, kyc_status: 'matched', consumer_complete_url: null, decline_reasons: [] });
  }
  const SUCCESS_EVENTS = ['application.created', 'application.kyc_completed', 'decision.created', 'decision.finalized', 'score.completed'];
  const FAILED_EVENTS = ['application.created', 'application.kyc_failed', 'decision.created', 'decision.finalized'];
  const EXPIRED_EVENTS = ['application.created', 'decision.created', 'decision.finalized'];

  async function expectReferredAa24(id: string, apiKey = t.tenant.sandbox.apiKey) {
    const body = (await poll(id, apiKey)).json<Record<string, unknown>>();
    expect(Object.keys(body).sort()).toEqual(REFERRED_KEYS);
    expect(body).toMatchObject({ status: 'complete', outcome: 'referred', kyc_status: 'pending', decline_reasons: [{ code: 'AA-24', reason: REASONS.get('AA-24') }] });
    expect(await eventTypes(id)).toEqual(FAILED_EVENTS);
    const finalized = JSON.parse((await eventsOf(id)).find((e) => e.type === 'decision.finalized')!.data_json);
    expect(finalized).toMatchObject({ outcome: 'referred', reason_codes: ['AA-24'], score: null });
  }

  async function expectDeclinedAa01(id: string) {
    const body = (await poll(id)).json<Record<string, unknown>>();
    expect(Object.keys(body).sort()).toEqual(DECLINED_KEYS);
    expect(body).toMatchObject({ status: 'complete', outcome: 'declined', decline_reasons: [{ code: 'AA-01', reason: REASONS.get('AA-01') }] });
    expect(await eventTypes(id)).toEqual(EXPIRED_EVENTS);
    const finalized = JSON.parse((await eventsOf(id)).find((e) => e.type === 'decision.finalized')!.data_json);
    expect(finalized).toMatchObject({ outcome: 'declined', reason_codes: ['AA-01'], score: null });
  }

  it('enhanced (sandbox): send code, 000000, finished page; the poll stays pending until then and returns the approved decision; events once each', async () => {
    const smsBefore = sms.messages.length;
    const mailBefore = smtp.messages.length;
    const { id, body: created, browser } = await createPending('enhanced');

    await browser.open();
    expect(browser.status).toBe(200);
    expect(browser.headers['content-type']).toMatch(/^text\/html/);
    expect(browser.headers['cache-control']).toBe('no-store');
    expect(browser.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(browser.headers['referrer-policy']).toBe('no-referrer');
    expect(browser.setCookieHeader).toMatch(/^cds_verify=[^;]+;.*HttpOnly/i);
    expect(browser.setCookieHeader).toMatch(/SameSite=Strict/i);
    expect(browser.html).toContain('<html lang="en">');
    expect(browser.heading).toBe('Verify your identity');
    expect(browser.html).toContain('•••• 0102');
    expect(browser.hasForm('send-code')).toBe(true);
    expect(browser.hasForm('code')).toBe(false);
    expect((await poll(id)).body).toBe(created);

    await browser.sendCode();
    expect(browser.status).toBe(200);
    expect(browser.notice).toBe('Sandbox: no code was sent. Enter 000000 to pass or 111111 to fail.');
    expect(browser.hasForm('code')).toBe(true);
    expect(browser.html).toMatch(/<label for="code">/);
    expect((await poll(id)).body).toBe(created);

    // What a double-click would send a second time: this page's csrf value and cookie.
    const doubleClick = { csrf: browser.csrfOf('code'), cookie: browser.cookie };
    await browser.enterCode('000000');
    expect(browser.status).toBe(200);
    expect(browser.heading).toBe("You're verified");
    expect(browser.hasForm('code')).toBe(false);

    const polled = (await poll(id)).json<Record<string, unknown>>();
    expectApproved(polled, 'enhanced');
    expect(polled.approved_amount).toBe('1500.00');
    expect(await eventTypes(id)).toEqual(SUCCESS_EVENTS);
    const row = await decisionRow(id);
    expect(row.verification_token_sealed).toBeNull();

    // The finished page says so on reload, and the same form submitted again changes nothing.
    await browser.open();
    expect(browser.heading).toBe("You're verified");
    await browser.enterCode('000000', doubleClick);
    expect(browser.status).toBe(200);
    expect(browser.heading).toBe("You're verified");
    expect(await eventTypes(id)).toEqual(SUCCESS_EVENTS);
    expect((await poll(id)).body).toBe(JSON.stringify(polled));

    // The sandbox sends nothing.
    expect(sms.messages.length).toBe(smsBefore);
    expect(smtp.messages.length).toBe(mailBefore);
  });

  it('hard (sandbox): code, details, ID document; the document is stored encrypted and readable back', async () => {
    const { id, body: created, browser } = await createPending('hard');
    await browser.open();
    expect(browser.html).toContain('aria-current="step">Code');
    await browser.sendCode();
    await browser.enterCode('000000');
    expect(browser.heading).toBe('Verify your identity');
    expect(browser.html).toContain('aria-current="step">Your details');
    expect(browser.hasForm('identity')).toBe(true);
    expect((await poll(id)).body).toBe(created);

    await browser.confirmIdentity(HARPER.ssn, HARPER.dob);
    expect(browser.status).toBe(200);
    expect(browser.html).toContain('aria-current="step">ID document');
    expect(browser.html).toContain('enctype="multipart/form-data"');
    expect((await poll(id)).body).toBe(created);

    const marker = `RAW-ID-DOCUMENT-${randomBytes(12).toString('hex')}`;
    const bytes = Buffer.concat([PNG_1X1, Buffer.from(marker)]);
    await browser.upload({ name: 'license.png', type: 'image/png', bytes });
    expect(browser.status).toBe(200);
    expect(browser.heading).toBe("You're verified");

    expectApproved((await poll(id)).json(), 'hard');
    expect(await eventTypes(id)).toEqual(SUCCESS_EVENTS);

    const docs = await documentsOf(id);
    expect(docs).toHaveLength(1);
    const doc = docs[0]!;
    expect(doc).toMatchObject({ content_type: 'image/png', size_bytes: bytes.length, tenant_id: t.tenant.tenantId, environment: 'sandbox' });
    const stored = JSON.stringify(await t.ctx.storage.db.selectFrom('verification_documents').selectAll().execute());
    for (const form of [marker, bytes.toString('base64'), bytes.toString('hex'), PNG_1X1.toString('base64').slice(0, 40)]) expect(stored).not.toContain(form);
    if (dialect === 'sqlite') {
      const files = readdirSync(db.dataDir).filter((f) => f.startsWith('cds.sqlite'));
      const raw = files.map((f) => readFileSync(path.join(db.dataDir, f)).toString('latin1')).join('');
      expect(raw.length).toBeGreaterThan(0);
      expect(raw).not.toContain(marker);
    }
    const back = await t.ctx.verification.readDocument(doc.id, scope());
    expect(back?.contentType).toBe('image/png');
    expect(back?.bytes.equals(bytes)).toBe(true);
    // Scoped: another environment or tenant cannot read it.
    expect(await t.ctx.verification.readDocument(doc.id, scope('live'))).toBeNull();
    expect(await t.ctx.verification.readDocument(doc.id, { tenantId: '00000000-0000-4000-8000-000000000000', environment: 'sandbox' })).toBeNull();
  });

  it('sandbox 111111 fails the verification: referred AA-24 with application.kyc_failed', async () => {
    const { id, browser } = await createPending('enhanced');
    await browser.open();
    await browser.sendCode();
    await browser.enterCode('111111');
    expect(browser.status).toBe(200);
    expect(browser.heading).toBe("We couldn't verify your identity");
    await expectReferredAa24(id);
    expect((await decisionRow(id)).kyc_status).toBe('pending');
    await browser.open();
    expect(browser.heading).toBe("We couldn't verify your identity");
  });

  it('5 wrong codes fail the verification; each wrong try says how many are left', async () => {
    const { id, body: created, browser } = await createPending('enhanced');
    await browser.open();
    await browser.sendCode();
    // Not six digits: explained, and not counted as a try.
    await browser.enterCode('12ab');
    expect(browser.status).toBe(422);
    expect(browser.notice).toBe('Enter the 6 digits of your code.');
    for (let i = 1; i <= 4; i++) {
      await browser.enterCode('123456');
      expect(browser.status).toBe(422);
      expect(browser.notice).toBe(`That code is not right. ${5 - i === 1 ? '1 try' : `${5 - i} tries`} left.`);
      expect(browser.html).toContain('aria-describedby="notice"');
      expect((await poll(id)).body).toBe(created);
    }
    await browser.enterCode('654321');
    expect(browser.heading).toBe("We couldn't verify your identity");
    await expectReferredAa24(id);
    const audit = (await t.ctx.decisions.getAuditRecord(scope(), id)) as { kyc: { failure_reason: string } };
    expect(audit.kyc.failure_reason).toBe('too_many_code_attempts');
    // A 6th try changes nothing.
    await browser.open();
    expect(browser.hasForm('code')).toBe(false);
    expect(await eventTypes(id)).toEqual(FAILED_EVENTS);
  });

  it('3 identity mismatches fail the verification; malformed details do not count', async () => {
    const { id, body: created, browser } = await createPending('hard');
    await browser.open();
    await browser.sendCode();
    await browser.enterCode('000000');
    await browser.confirmIdentity('70a3', '30/06/1970');
    expect(browser.status).toBe(422);
    expect(browser.notice).toBe('Enter the last 4 digits of your SSN and your date of birth.');
    await browser.confirmIdentity('1234', HARPER.dob);
    expect(browser.status).toBe(422);
    expect(browser.notice).toBe('Those details do not match our records. 2 tries left.');
    await browser.confirmIdentity(HARPER.ssn, '1970-07-30');
    expect(browser.notice).toBe('Those details do not match our records. 1 try left.');
    expect((await poll(id)).body).toBe(created);
    await browser.confirmIdentity('0000', '2000-01-01');
    expect(browser.heading).toBe("We couldn't verify your identity");
    await expectReferredAa24(id);
    const audit = (await t.ctx.decisions.getAuditRecord(scope(), id)) as { kyc: { failure_reason: string } };
    expect(audit.kyc.failure_reason).toBe('identity_mismatch');
    expect(await documentsOf(id)).toHaveLength(0);
  });

  it('checks ID documents by their bytes: a text file renamed .jpg and an empty file are refused; a few MB and exactly 10 MB are accepted', async () => {
    const { id, body: created, browser } = await createPending('hard');
    await browser.open();
    await browser.sendCode();
    await browser.enterCode('000000');
    await browser.confirmIdentity(HARPER.ssn, HARPER.dob);

    await browser.upload({ name: 'passport.jpg', type: 'image/jpeg', bytes: Buffer.from('this is just text, not a photo\n') });
    expect(browser.status).toBe(422);
    expect(browser.notice).toBe('That file is not a JPEG, PNG or PDF. Upload a photo or a PDF scan of your ID.');
    await browser.upload({ name: 'id.gif', type: 'image/gif', bytes: Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1') });
    expect(browser.status).toBe(422);
    await browser.upload({ name: 'empty.png', type: 'image/png', bytes: Buffer.alloc(0) });
    expect(browser.status).toBe(422);
    expect(browser.notice).toBe('Choose a photo or scan of your ID to upload.');
    await browser.upload(null);
    expect(browser.status).toBe(422);
    // A phone photo of a few MB is fine (well over the JSON API's 64 KiB body limit); probed with a
    // wrong csrf value so it is parsed but not stored.
    await browser.upload({ name: 'photo.jpg', type: 'image/jpeg', bytes: Buffer.concat([JPEG_HEADER, Buffer.alloc(3 * 1024 * 1024, 0x42)]) }, { csrf: 'not-the-csrf-value' });
    expect(browser.status).toBe(403);
    await browser.open();
    expect(await documentsOf(id)).toHaveLength(0);
    expect((await poll(id)).body).toBe(created);

    // Exactly 10 MB is allowed; the declared type and the name are ignored, the bytes decide.
    const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(10 * 1024 * 1024 - 9, 0x20)]);
    await browser.upload({ name: 'scan.bin', type: 'application/octet-stream', bytes: pdf });
    expect(browser.status).toBe(200);
    expect(browser.heading).toBe("You're verified");
    const docs = await documentsOf(id);
    expect(docs.map((d) => [d.content_type, d.size_bytes])).toEqual([['application/pdf', 10 * 1024 * 1024]]);
    expectApproved((await poll(id)).json(), 'hard');
  });

  it('refuses an ID document over 10 MB with the page and its plain message (not a JSON error)', async () => {
    const { id, body: created, browser } = await createPending('hard');
    await browser.open();
    await browser.sendCode();
    await browser.enterCode('000000');
    await browser.confirmIdentity(HARPER.ssn, HARPER.dob);
    const oversize = Buffer.concat([JPEG_HEADER, Buffer.alloc(10 * 1024 * 1024 + 1 - JPEG_HEADER.length, 0x41)]);
    await browser.upload({ name: 'huge.jpg', type: 'image/jpeg', bytes: oversize });
    expect(await documentsOf(id)).toHaveLength(0);
    expect((await poll(id)).body).toBe(created);
    expect(browser.headers['content-type']).toMatch(/^text\/html/);
    expect(browser.status).toBe(422);
    expect(browser.notice).toBe('That file is larger than 10 MB. Upload a smaller photo or scan.');
    expect(browser.hasForm('document')).toBe(true);
  });

  it('answers unreadable or unexpected multipart uploads with a page, never a 500 or a request left hanging (found by the fuzz)', async () => {
    const { id, browser } = await createPending('hard');
    await browser.open();
    const csrf = browser.csrfOf('send-code');
    const cookie = { cookie: `cds_verify=${browser.cookie}` };
    const whole = multipartBody({ csrf }, { field: 'unexpected', name: 'id.png', type: 'image/png', bytes: PNG_1X1 });
    const cases: Array<[string, string, string, Buffer, number]> = [
      ['no boundary', 'document', 'multipart/form-data', whole.payload, 400],
      ['another boundary', 'document', 'multipart/form-data; boundary=other', whole.payload, 400],
      ['cut short', 'document', whole.contentType, whole.payload.subarray(0, whole.payload.length - 40), 400],
      ['cut short', 'documents', whole.contentType, whole.payload.subarray(0, whole.payload.length - 40), 400],
      // A file under a name the form does not have: skipped (drained), and the form is answered
      // (this link has no document request, so its upload page is "not valid").
      ['file under another name', 'document', whole.contentType, whole.payload, 200],
      ['file under another name', 'documents', whole.contentType, whole.payload, 404],
    ];
    for (const [name, action, contentType, payload, status] of cases) {
      const r = await t.app.inject({ method: 'POST', url: `${browser.path}/${action}`, headers: { 'content-type': contentType, ...cookie }, payload });
      expect(r.statusCode, `${name} (${action})`).toBe(status);
      expect(r.headers['content-type'], name).toMatch(/^text\/html/);
    }
    expect(await documentsOf(id)).toHaveLength(0);
  });

  it('refuses forms without the right csrf value and cookie (403) and changes nothing', async () => {
    const a = await createPending('hard');
    const b = await createPending('enhanced');
    await a.browser.open();
    await b.browser.open();
    const unchanged = async () => {
      expect((await poll(a.id)).body).toBe(a.body);
      expect(await eventTypes(a.id)).toEqual(['application.created', 'decision.created']);
    };

    const attempts: Array<[string, { csrf?: string | null; cookie?: string | null }]> = [
      ['no csrf field', { csrf: null }],
      ['wrong csrf', { csrf: 'A'.repeat(43) }],
      ['no cookie', { cookie: null }],
      ['another page\'s csrf and cookie', { csrf: b.browser.csrfOf('send-code'), cookie: b.browser.cookie }],
    ];
    for (const [name, opts] of attempts) {
      await a.browser.sendCode(opts);
      expect(a.browser.status, name).toBe(403);
      expect(a.browser.heading).toBe('Your session has expired');
      await a.browser.open();
    }
    expect((await verificationRow(a.id))?.codes_sent).toBe(0);
    expect((await verificationRow(a.id))?.code_hash).toBeNull();
    await unchanged();

    await a.browser.sendCode();
    expect(a.browser.status).toBe(200);
    for (const [name, opts] of attempts.slice(0, 3)) {
      await a.browser.enterCode('000000', opts);
      expect(a.browser.status, name).toBe(403);
      await a.browser.open();
    }
    expect(JSON.parse((await verificationRow(a.id))!.state_json)).toEqual({ kind: 'awaiting_code', codeAttempts: 0 });
    await unchanged();

    await a.browser.enterCode('000000');
    for (const [name, opts] of attempts.slice(0, 3)) {
      await a.browser.confirmIdentity(HARPER.ssn, HARPER.dob, opts);
      expect(a.browser.status, name).toBe(403);
      await a.browser.open();
    }
    expect(JSON.parse((await verificationRow(a.id))!.state_json).kind).toBe('awaiting_identity');
    await a.browser.confirmIdentity(HARPER.ssn, HARPER.dob);
    for (const [name, opts] of attempts.slice(0, 3)) {
      await a.browser.upload({ name: 'id.png', type: 'image/png', bytes: PNG_1X1 }, opts);
      expect(a.browser.status, name).toBe(403);
      await a.browser.open();
    }
    expect(await documentsOf(a.id)).toHaveLength(0);
    await unchanged();

    // A token nobody issued is "not valid", whatever the form.
    const bogus = new ConsumerBrowser(t, `/verify/${'x'.repeat(43)}`, pages);
    await bogus.open();
    expect(bogus.status).toBe(404);
    expect(bogus.heading).toBe('This link is not valid');

    // Both still complete normally afterwards.
    await a.browser.upload({ name: 'id.png', type: 'image/png', bytes: PNG_1X1 });
    expectApproved((await poll(a.id)).json(), 'hard');
    expect((await helper(b.id, 'pass')).statusCode).toBe(200);
  });

  it('bounds guessing: every link request draws from a bucket per address; past it, a valid link is refused like a wrong one, from that address only, until the wait has passed', async () => {
    const { browser } = await createPending('enhanced');
    const guesser = '203.0.113.7';
    const open = (path: string, remoteAddress = guesser) => t.app.inject({ method: 'GET', url: path, remoteAddress });
    const bogus = (i: number) => `/verify/${String(i).padStart(43, 'g')}`;
    for (let i = 0; i < PAGE_LIMITS.burst; i++) expect((await open(bogus(i))).statusCode, `guess ${i}`).toBe(404);
    const refused = await open(browser.path);
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused.headers['content-type']).toMatch(/^text\/html/);
    expect(refused.body).toContain('Too many requests');
    expect((await open(bogus(999))).statusCode).toBe(429);
    expect((await t.app.inject({ method: 'POST', url: `${browser.path}/send-code`, remoteAddress: guesser, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'csrf=x' })).statusCode).toBe(429);
    // The stylesheet the 429 page links to is not counted.
    expect((await open('/verify/assets/verify.css')).statusCode).toBe(200);
    // Another address opens the link as usual.
    expect((await open(browser.path, '198.51.100.2')).statusCode).toBe(200);
    // Once the wait has passed, the guesser's address is served again.
    clock.advance(Number(refused.headers['retry-after']) * 1000);
    expect((await open(browser.path)).statusCode).toBe(200);
  });

  it('expires an enhanced link after 24 h: the page says so and the poll returns declined AA-01 with decision.finalized', async () => {
    const { id, body: created, browser } = await createPending('enhanced');
    await browser.open();
    await browser.sendCode();
    const staleForm = { csrf: browser.csrfOf('code'), cookie: browser.cookie };
    clock.advance(24 * HOUR - 1);
    await browser.open();
    expect(browser.hasForm('code')).toBe(true);
    expect((await poll(id)).body).toBe(created);

    clock.advance(1);
    await browser.open();
    expect(browser.status).toBe(200);
    expect(browser.heading).toBe('This link has expired');
    expect(browser.html).toContain('start again at checkout');
    await expectDeclinedAa01(id);
    expect((await decisionRow(id)).kyc_status).toBe('pending');
    // The code form left open in another tab, submitted after expiry, does nothing.
    await browser.enterCode('000000', staleForm);
    expect(browser.status).toBe(200);
    expect(browser.heading).toBe('This link has expired');
    await expectDeclinedAa01(id);
  });

  it('expires a hard decision by poll after 72 h (no page ever opened)', async () => {
    const { id, body: created } = await createPending('hard');
    clock.advance(72 * HOUR - 1);
    expect((await poll(id)).body).toBe(created);
    clock.advance(1);
    await expectDeclinedAa01(id);
  });

  it('the sweeper finalizes an abandoned decision that nobody polls, once', async () => {
    const { id, browser } = await createPending('hard');
    await browser.open();
    clock.advance(72 * HOUR - 1);
    await t.ctx.decisions.expireOverdue();
    expect((await decisionRow(id)).status).toBe('needs_consumer_action');

    clock.advance(1);
    const overdue = await t.ctx.storage.db
      .selectFrom('decisions')
      .select('id')
      .where('status', '=', 'needs_consumer_action')
      .where('expires_at', '<=', clock.now().getTime())
      .execute();
    expect(overdue.map((r) => r.id)).toContain(id);
    expect(await t.ctx.decisions.expireOverdue()).toBe(overdue.length);
    const row = await decisionRow(id);
    expect(row).toMatchObject({ status: 'complete', outcome: 'declined', kyc_status: 'pending' });
    expect(JSON.parse(row.reasons_json)).toEqual([{ code: 'AA-01', reason: REASONS.get('AA-01') }]);
    expect(await eventTypes(id)).toEqual(EXPIRED_EVENTS);
    // A second sweep, a poll and a page load add nothing.
    expect(await t.ctx.decisions.expireOverdue()).toBe(0);
    await expectDeclinedAa01(id);
    await browser.open();
    expect(browser.heading).toBe('This link has expired');
    expect(await eventTypes(id)).toEqual(EXPIRED_EVENTS);
  });

  it('sandbox helper: pass approves, fail refers AA-24; idempotent replays; a complete decision is left alone; 404 with a live key', async () => {
    const passed = await createPending('enhanced');
    const r = await helper(passed.id, 'pass', { idem: `pass-${passed.id}` });
    expect(r.statusCode).toBe(200);
    expectApproved(r.json(), 'enhanced');
    expect(r.body).toBe((await poll(passed.id)).body);
    expect(await eventTypes(passed.id)).toEqual(SUCCESS_EVENTS);
    const replayed = await helper(passed.id, 'pass', { idem: `pass-${passed.id}` });
    expect(replayed.body).toBe(r.body);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    // Already complete: "fail" changes nothing and returns the decision as it is.
    const late = await helper(passed.id, 'fail');
    expect(late.statusCode).toBe(200);
    expect(late.body).toBe(r.body);
    expect(await eventTypes(passed.id)).toEqual(SUCCESS_EVENTS);
    await passed.browser.open();
    expect(passed.browser.heading).toBe("You're verified");

    const failed = await createPending('hard');
    const f = await helper(failed.id, 'fail', { idem: `fail-${failed.id}` });
    expect(f.statusCode).toBe(200);
    await expectReferredAa24(failed.id);
    expect(f.body).toBe((await poll(failed.id)).body);
    expect((await helper(failed.id, 'fail', { idem: `fail-${failed.id}` })).body).toBe(f.body);
    expect((await helper(failed.id, 'pass')).body).toBe(f.body);
    expect(await eventTypes(failed.id)).toEqual(FAILED_EVENTS);
    await failed.browser.open();
    expect(failed.browser.heading).toBe("We couldn't verify your identity");

    // Hard through the helper: the engine decides like the page would.
    const hardPass = await createPending('hard');
    expectApproved((await helper(hardPass.id, 'pass')).json(), 'hard');

    // With a live key the route does not exist, and the sandbox decision is untouched.
    const pending = await createPending('enhanced');
    const live = await helper(pending.id, 'pass', { apiKey: t.tenant.live.apiKey });
    expect(live.statusCode).toBe(404);
    expect(errorOf(live).error).toBe('not_found');
    expect((await poll(pending.id)).body).toBe(pending.body);
    // For a live key the path does not exist whatever else is wrong: no 400, 415 or 405 that says otherwise.
    const liveKey = bearer(t.tenant.live.apiKey);
    const liveCases = [
      { method: 'POST' as const, url: `/v1/sandbox/decisions/${pending.id}/verification`, headers: { ...liveKey, 'content-type': 'application/json' }, payload: '{"result":"maybe"}' },
      { method: 'POST' as const, url: '/v1/sandbox/decisions/xyz/verification', headers: { ...liveKey, 'content-type': 'application/json' }, payload: '{"result":"pass"}' },
      { method: 'POST' as const, url: `/v1/sandbox/decisions/${pending.id}/verification`, headers: { ...liveKey, 'content-type': 'text/plain' }, payload: 'pass' },
      { method: 'GET' as const, url: `/v1/sandbox/decisions/${pending.id}/verification`, headers: liveKey },
    ];
    for (const c of liveCases) {
      const refused = await t.app.inject(c);
      expect(refused.statusCode, `${c.method} ${c.url} ${c.headers['content-type'] ?? ''}`).toBe(404);
      expect(refused.headers.allow).toBeUndefined();
    }
    // The sandbox key still gets its 405 there.
    expect((await t.app.inject({ method: 'GET', url: `/v1/sandbox/decisions/${pending.id}/verification`, headers: bearer(t.tenant.sandbox.apiKey) })).statusCode).toBe(405);
    // Unknown decision, bad body.
    expect((await helper('6f0b7f5e-2b1c-4d3e-8f9a-0b1c2d3e4f5a', 'pass')).statusCode).toBe(404);
    const bad = await t.app.inject({ method: 'POST', url: `/v1/sandbox/decisions/${pending.id}/verification`, headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json' }, payload: '{"result":"maybe"}' });
    expect(bad.statusCode).toBe(400);
    expect((await poll(pending.id)).body).toBe(pending.body);
    // An expired decision stays expired.
    clock.advance(24 * HOUR);
    expect((await helper(pending.id, 'pass')).json()).toMatchObject({ outcome: 'declined', decline_reasons: [{ code: 'AA-01' }] });
    expect(await eventTypes(pending.id)).toEqual(EXPIRED_EVENTS);
  });

  it('sandbox ssn_last4 2222 fails the verification on the enhanced and hard tiers too, however it is completed', async () => {
    const newConsumer = (first: string) => ({ first_name: first, last_name: 'Failing', email: `${first.toLowerCase()}@example.com`, dob: '1985-05-05', ssn_last4: '2222', address: { line1: '1 Main St', city: 'Austin', state: 'TX', zip: '73301' } });
    // The right code on the page: the consumer is told it failed, the lender gets AA-24.
    const onPage = await createPending('enhanced', { consumer: newConsumer('Vera'), transaction: txn('800.00') });
    await onPage.browser.open();
    await onPage.browser.sendCode();
    await onPage.browser.enterCode('000000');
    expect(onPage.browser.heading).toBe("We couldn't verify your identity");
    await expectReferredAa24(onPage.id);
    const audit = (await t.ctx.decisions.getAuditRecord(scope(), onPage.id)) as { kyc: { failure_reason: string; identity_verification_failed: boolean } };
    expect(audit.kyc).toMatchObject({ identity_verification_failed: true, failure_reason: 'sandbox_magic_ssn' });
    // The helper's pass is "as if the consumer had done it": the same failure.
    const byHelper = await createPending('hard', { consumer: newConsumer('Wren'), transaction: txn('6000.00') });
    expect((await helper(byHelper.id, 'pass')).statusCode).toBe(200);
    await expectReferredAa24(byHelper.id);
  });

  it('the sandbox identity step says where the details on file are written, without showing them', async () => {
    const pending = await createPending('hard');
    await pending.browser.open();
    await pending.browser.sendCode();
    await pending.browser.enterCode('000000');
    expect(pending.browser.html).toContain('<a href="/docs/sandbox">sandbox guide</a>');
    expect(pending.browser.html).not.toMatch(standalone(HARPER.ssn));
    expect((await t.app.inject({ method: 'GET', url: '/docs/sandbox' })).body).toContain(HARPER.ssn);
  });

  it('live enhanced by email (no phone): the real code from the SMTP server, resend cooldown on the clock, code expiry', async () => {
    const { id, body: created, browser } = await createPending('enhanced', { consumer: LIVE_EMAIL, transaction: txn('2400.00') }, t.tenant.live.apiKey);
    await browser.open();
    expect(browser.html).toContain('your email');
    expect(browser.html).toContain('l•••@example.org');
    expect(browser.html).not.toContain('Sandbox');

    const since = smtp.messages.length;
    const smsBefore = sms.messages.length;
    await browser.sendCode();
    expect(browser.notice).toBe('We sent a 6-digit code to your email.');
    const first = await smtp.waitForMessage({ since, to: LIVE_EMAIL.email });
    expect(first.code).toMatch(/^\d{6}$/);
    expect(first.subject).toBe(`Your verification code: ${first.code}`);
    expect(first.text).toContain('your purchase at Acme Furniture');
    expect(first.text).toContain('expires in 10 minutes');
    expect(first.headers.from).toContain('verify@acme.test');
    expect(first.headers['x-reference']).toBe(`${id}:1`);
    expect(sms.messages.length).toBe(smsBefore);
    expect(browser.html).toContain('You can ask for a new code in 30 seconds.');

    // Resend: refused inside the 30 s cooldown (clock time), accepted after it.
    clock.advance(29_000);
    await browser.sendCode();
    expect(browser.notice).toBe('Please wait 1 seconds before asking for a new code.');
    expect(smtp.messages.length).toBe(since + 1);
    clock.advance(1_000);
    await browser.sendCode();
    const second = await smtp.waitForMessage({ since: since + 1, to: LIVE_EMAIL.email });
    expect(second.headers['x-reference']).toBe(`${id}:2`);
    expect((await verificationRow(id))?.codes_sent).toBe(2);

    // Codes are valid 10 minutes.
    clock.advance(10 * 60_000);
    await browser.enterCode(second.code!);
    expect(browser.status).toBe(422);
    expect(browser.notice).toBe('This code has expired. Ask for a new one.');
    expect(JSON.parse((await verificationRow(id))!.state_json)).toEqual({ kind: 'awaiting_code', codeAttempts: 0 });
    await browser.sendCode();
    const third = await smtp.waitForMessage({ since: since + 2, to: LIVE_EMAIL.email });
    // Only the newest code works: an older one, or the sandbox's 000000, is a wrong try.
    let left = 5;
    for (const stale of [second.code!, '000000']) {
      if (stale === third.code) continue;
      await browser.enterCode(stale);
      expect(browser.notice).toBe(`That code is not right. ${--left} tries left.`);
    }
    expect((await poll(id, t.tenant.live.apiKey)).body).toBe(created);
    await browser.enterCode(third.code!);
    expect(browser.heading).toBe("You're verified");
    const polled = (await poll(id, t.tenant.live.apiKey)).json<Record<string, unknown>>();
    expectApproved(polled, 'enhanced');
    expect(polled.approved_amount).toBe('2400.00');
    expect(await eventTypes(id)).toEqual(SUCCESS_EVENTS);
    // A sandbox key cannot see the live decision.
    expect((await poll(id)).statusCode).toBe(404);
  });

  it('live by email: an SMTP server that takes the connection and never answers costs the page the 5 s time-out, a "could not send" notice and no try; it works once the server answers', async () => {
    const { id, browser } = await createPending('enhanced', { consumer: LIVE_EMAIL, transaction: txn('2600.00') }, t.tenant.live.apiKey);
    await browser.open();
    smtp.setHanging(true);
    const hungBefore = smtp.hung;
    const since = smtp.messages.length;
    const started = performance.now();
    try {
      await browser.sendCode();
    } finally {
      smtp.setHanging(false);
    }
    // Without the time-out nodemailer waits 30 s for a greeting, past this test's own limit.
    expect(performance.now() - started).toBeGreaterThanOrEqual(CODE_SEND_TIMEOUT_MS - 100);
    expect(smtp.hung).toBe(hungBefore + 1);
    expect(browser.notice).toBe('We could not send a code just now. Please try again in a moment.');
    expect(await verificationRow(id)).toMatchObject({ codes_sent: 0, code_hash: null });
    expect(smtp.messages.length).toBe(since);

    await browser.sendCode();
    expect(browser.notice).toBe('We sent a 6-digit code to your email.');
    expect((await smtp.waitForMessage({ since, to: LIVE_EMAIL.email })).headers['x-reference']).toBe(`${id}:1`);
  }, 20_000);

  it('live hard by SMS: the gateway contract, a delivery failure costs nothing, at most 5 codes, then details and a document', async () => {
    const { id, browser } = await createPending('hard', { consumer: LIVE_SMS, transaction: txn('7200.00') }, t.tenant.live.apiKey);
    await browser.open();
    expect(browser.html).toContain('•••• 0147');

    sms.setFailing(true);
    const failedBefore = sms.failedRequests;
    await browser.sendCode();
    sms.setFailing(false);
    expect(sms.failedRequests).toBe(failedBefore + 1);
    expect(browser.notice).toBe('We could not send a code just now. Please try again in a moment.');
    expect(browser.hasForm('send-code')).toBe(true);
    expect(await verificationRow(id)).toMatchObject({ codes_sent: 0, code_hash: null });
    expect(t.logs.text).toContain('one-time code could not be sent');

    let since = sms.messages.length;
    await browser.sendCode();
    expect(browser.notice).toBe('We sent a 6-digit code to your phone.');
    let message = await sms.waitForMessage({ since, to: LIVE_SMS.phone });
    expect(message.authorization).toBe(`Bearer ${sms.token}`);
    expect(message.reference).toBe(`${id}:1`);
    expect(message.message).toBe(`${message.code} is your verification code for your purchase at Acme Furniture. It expires in 10 minutes. Never share it.`);

    // At most 5 codes per verification (the cooldown is clock time: no sleeping).
    for (let n = 2; n <= 5; n++) {
      clock.advance(30_000);
      since = sms.messages.length;
      await browser.sendCode();
      message = await sms.waitForMessage({ since, to: LIVE_SMS.phone });
      expect(message.reference).toBe(`${id}:${n}`);
    }
    expect(browser.html).toMatch(/<button type="submit" class="link" disabled>Send a new code<\/button>/);
    clock.advance(30_000);
    const count = sms.messages.length;
    await browser.sendCode();
    expect(browser.notice).toBe('No more codes can be sent for this verification.');
    expect(sms.messages.length).toBe(count);

    await browser.enterCode(message.code!.split('').join(' '));
    expect(browser.html).toContain('aria-current="step">Your details');
    await browser.confirmIdentity(LIVE_SMS.ssn_last4, LIVE_SMS.dob);
    expect(browser.hasForm('document')).toBe(true);
    const jpeg = Buffer.concat([JPEG_HEADER, randomBytes(2048)]);
    await browser.upload({ name: 'IMG_0001.JPG', type: 'image/jpeg', bytes: jpeg });
    expect(browser.heading).toBe("You're verified");

    expectApproved((await poll(id, t.tenant.live.apiKey)).json(), 'hard');
    expect(await eventTypes(id)).toEqual(SUCCESS_EVENTS);
    const [doc] = await documentsOf(id);
    expect(doc).toMatchObject({ content_type: 'image/jpeg', environment: 'live' });
    expect((await t.ctx.verification.readDocument(doc!.id, scope('live')))?.bytes.equals(jpeg)).toBe(true);
    expect(doc!.sealed_content).not.toContain(jpeg.subarray(0, 256).toString('base64').slice(0, 40));
  });

  it('shows no PII (full phone, email, SSN digits, date of birth) on any page or in the logs', async () => {
    expect(pages.length).toBeGreaterThan(50);
    const html = pages.join('\n');
    const logs = t.logs.text;
    expect(logs.length).toBeGreaterThan(0);
    for (const who of PII) {
      for (const [where, text] of [['pages', html], ['logs', logs]] as const) {
        if (who.phone) {
          expect(text, `${where}: phone`).not.toContain(who.phone);
          expect(text, `${where}: phone digits`).not.toContain(who.phone.slice(2));
        }
        expect(text, `${where}: email`).not.toContain(who.email);
        expect(text, `${where}: ssn`).not.toMatch(standalone(who.ssn));
        expect(text, `${where}: dob`).not.toContain(who.dob);
      }
    }
    // No PII in any URL either: the pages only ever link to /verify/{token}/<step>.
    for (const [, action] of html.matchAll(/action="([^"]+)"/g)) expect(action).toMatch(/^\/verify\/[A-Za-z0-9_-]{43}\/(send-code|code|identity|document)$/);
  });
});
