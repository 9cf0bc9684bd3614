/**
 * The consumer's journey on the hosted verification pages in a real browser: headless Chromium
 * (Debian's, driven by playwright-core) at phone size against the real service listening on a
 * loopback port, with a real local SMTP server and SMS gateway for live codes. Each journey starts
 * with a create call, goes through the pages as a person would (keyboard-only where it matters),
 * and ends with a poll returning the final decision. Every page is kept as a full-page screenshot
 * under test-artifacts/screenshots/.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import type { CreditDataConnector } from '../../src/modules/credit-data/credit-data.types.js';
import { createSandboxConnector } from '../../src/modules/credit-data/sandbox-connector.js';
import { BrowserPages, chromiumAvailable, launchChromium, makePng, pageProblems, Screenshots, startListeningTestApp, visibleInputCount, waitForHeading, type ListeningTestApp } from '../support/browser.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { startFakeSmsGateway, type FakeSmsGateway } from '../support/fake-sms-gateway.js';
import { startFakeSmtpServer, type FakeSmtpServer } from '../support/fake-smtp-server.js';

const HARPER = { ssn: '7043', dob: '1970-06-30' };
const LIVE_PHONE = { first_name: 'Paz', last_name: 'Mobile', email: 'paz.mobile@example.net', phone: '+15035550166', dob: '1990-12-01', ssn_last4: '3817', address: { line1: '5 Oak Avenue', city: 'Portland', state: 'OR', zip: '97201' } };
const LIVE_EMAIL_ONLY = { first_name: 'Quinn', last_name: 'Inbox', email: 'quinn.inbox@example.org', dob: '1968-02-14', ssn_last4: '2719', address: { line1: '40 Elm Road', city: 'Madison', state: 'WI', zip: '53703' } };
const txn = (amount: string) => ({ amount, currency: 'USD', merchant_name: 'Northwind Bikes', merchant_category: 'sporting_goods' });

function goodFileConnector(): CreditDataConnector {
  const sandbox = createSandboxConnector();
  return { name: 'test-good-file', fetchCreditFile: (subject, context) => sandbox.fetchCreditFile({ ...subject, sandboxProfile: 'hard' }, context) };
}

describe.skipIf(!chromiumAvailable())('hosted verification in headless Chromium (phone size)', () => {
  let db: TestDatabase;
  let t: ListeningTestApp;
  let browser: Browser;
  let pages: BrowserPages;
  let sms: FakeSmsGateway;
  let smtp: FakeSmtpServer;
  const clock = new ManualClock('2026-04-06T10:00:00.000Z');
  let enhanced: string, hard: string;
  const screenshots: string[] = [];

  beforeAll(async () => {
    [sms, smtp, db, browser] = await Promise.all([startFakeSmsGateway(), startFakeSmtpServer(), createTestDatabase('sqlite'), launchChromium()]);
    pages = new BrowserPages(browser);
    t = await startListeningTestApp(db, {
      clock,
      env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000', SMTP_URL: smtp.url, SMS_GATEWAY_URL: sms.url, SMS_GATEWAY_TOKEN: sms.token! },
      overrides: { creditData: { live: goodFileConnector() } },
    });
    [, enhanced, hard] = t.tenant.sandbox.consumers.map((c) => c.consumerId) as [string, string, string];
  });
  afterEach(async () => {
    await pages?.closeAll();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await sms?.stop();
    await smtp?.stop();
    await db?.drop();
    if (screenshots.length > 0) console.info(`browser screenshots:\n  ${screenshots.join('\n  ')}`);
  });

  /** Real HTTP calls to the listening service, as the lender's backend makes them. */
  async function api(method: 'GET' | 'POST', path: string, apiKey: string, body?: unknown): Promise<Record<string, unknown>> {
    const response = await fetch(`${t.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    expect(response.status, `${method} ${path}`).toBe(200);
    return (await response.json()) as Record<string, unknown>;
  }
  async function createPending(body: unknown, apiKey = t.tenant.sandbox.apiKey) {
    const created = await api('POST', '/v1/decisions/bnpl', apiKey, body);
    expect(created.status).toBe('needs_consumer_action');
    const url = created.consumer_complete_url as string;
    expect(url.startsWith(`${t.baseUrl}/verify/`)).toBe(true);
    return { id: created.decision_id as string, url, pollingUrl: created.polling_url as string, created };
  }

  /** A phone-size page and this journey's screenshots. */
  async function start(journey: string): Promise<{ page: Page; shots: Screenshots; shot(step: string): Promise<void> }> {
    const page = await pages.phone();
    const shots = new Screenshots(journey);
    return {
      page,
      shots,
      async shot(step) {
        screenshots.push(await shots.take(page, step));
        expect(await pageProblems(page), `${journey} ${step}`).toEqual([]);
      },
    };
  }

  /** Keyboard only: focus the field, type, press Enter (no mouse, no click). */
  async function typeAndEnter(page: Page, selector: string, text: string): Promise<void> {
    await page.focus(selector);
    await page.keyboard.type(text);
    await page.keyboard.press('Enter');
  }

  async function expectLabelled(page: Page, inputs: number): Promise<void> {
    expect(await visibleInputCount(page)).toBe(inputs);
    const visible = page.locator('input:not([type=hidden])');
    for (let i = 0; i < inputs; i++) {
      const id = await visible.nth(i).getAttribute('id');
      expect((await page.locator(`label[for="${id}"]`).textContent())?.trim().length).toBeGreaterThan(0);
    }
  }

  it('sandbox enhanced: send code, 000000 typed with the keyboard, finished page; the poll returns approved', async () => {
    const { id, pollingUrl, created } = await createPending({ consumer: { consumer_id: enhanced }, transaction: txn('1200.00') });
    const { page, shot } = await start('sandbox-enhanced');
    const response = await page.goto(created.consumer_complete_url as string);
    expect(response?.status()).toBe(200);
    await waitForHeading(page, 'Verify your identity');
    expect(await page.getAttribute('html', 'lang')).toBe('en');
    expect(await page.textContent('.sandbox')).toContain('Sandbox');
    // The stylesheet is allowed by the page's CSP and applies.
    // (Runs in the page: only the page's own globals are in scope.)
    const background = await page
      .locator('button[type=submit]')
      .first()
      .evaluate((button) => (globalThis as unknown as { getComputedStyle(element: unknown): { backgroundColor: string } }).getComputedStyle(button).backgroundColor);
    expect(background).toBe('rgb(29, 78, 216)');
    await shot('send-code');

    await page.getByRole('button', { name: 'Send code' }).click();
    await page.locator('#code').waitFor();
    expect(await page.textContent('#notice')).toContain('Enter 000000 to pass');
    await expectLabelled(page, 1);
    await shot('enter-code');

    await typeAndEnter(page, '#code', '000000');
    await waitForHeading(page, "You're verified");
    await shot('verified');

    const final = await api('GET', pollingUrl, t.tenant.sandbox.apiKey);
    expect(final).toMatchObject({ decision_id: id, status: 'complete', outcome: 'approved', kyc_tier: 'enhanced', kyc_status: 'matched', approved_amount: '1200.00' });
  });

  it('sandbox hard: code, details, a generated PNG upload, finished page; the poll returns approved', async () => {
    const { id, pollingUrl, url } = await createPending({ consumer: { consumer_id: hard }, transaction: txn('5500.00') });
    const { page, shot } = await start('sandbox-hard');
    await page.goto(url);
    await waitForHeading(page, 'Verify your identity');
    await shot('send-code');
    await page.getByRole('button', { name: 'Send code' }).click();
    await page.locator('#code').waitFor();
    await shot('enter-code');
    await typeAndEnter(page, '#code', '000000');

    await page.locator('#ssn_last4').waitFor();
    expect(await page.locator('[aria-current="step"]').textContent()).toBe('Your details');
    await expectLabelled(page, 2);
    await shot('your-details');
    await page.locator('#dob').fill(HARPER.dob);
    await typeAndEnter(page, '#ssn_last4', HARPER.ssn);

    await page.locator('#document').waitFor({ state: 'attached' });
    expect(await page.locator('[aria-current="step"]').textContent()).toBe('ID document');
    await expectLabelled(page, 1);
    await shot('id-document');
    const png = makePng(64, 40);
    await page.setInputFiles('#document', { name: 'drivers-license.png', mimeType: 'image/png', buffer: png });
    await page.getByRole('button', { name: 'Upload and finish' }).click();
    await waitForHeading(page, "You're verified");
    await shot('verified');

    expect(await api('GET', pollingUrl, t.tenant.sandbox.apiKey)).toMatchObject({ decision_id: id, status: 'complete', outcome: 'approved', kyc_tier: 'hard', kyc_status: 'matched' });
    const [doc] = await t.ctx.storage.db.selectFrom('verification_documents').select(['id', 'content_type']).where('decision_id', '=', id).execute();
    expect(doc?.content_type).toBe('image/png');
    expect((await t.ctx.verification.readDocument(doc!.id, { tenantId: t.tenant.tenantId, environment: 'sandbox' }))?.bytes.equals(png)).toBe(true);
  });

  it('live enhanced by SMS: the code is read from the local SMS gateway and typed in; the poll returns approved', async () => {
    const { id, pollingUrl, url } = await createPending({ consumer: LIVE_PHONE, transaction: txn('900.00') }, t.tenant.live.apiKey);
    const { page, shot } = await start('live-enhanced-sms');
    await page.goto(url);
    await waitForHeading(page, 'Verify your identity');
    expect(await page.locator('.sandbox').count()).toBe(0);
    expect(await page.textContent('main')).toContain('•••• 0166');
    await shot('send-code');

    const since = sms.messages.length;
    await page.getByRole('button', { name: 'Send code' }).click();
    await page.locator('#code').waitFor();
    const message = await sms.waitForMessage({ since, to: LIVE_PHONE.phone });
    expect(message.code).toMatch(/^\d{6}$/);
    expect(await page.textContent('#notice')).toBe('We sent a 6-digit code to your phone.');
    await shot('enter-code');

    await typeAndEnter(page, '#code', message.code!);
    await waitForHeading(page, "You're verified");
    await shot('verified');
    expect(await api('GET', pollingUrl, t.tenant.live.apiKey)).toMatchObject({ decision_id: id, status: 'complete', outcome: 'approved', kyc_tier: 'enhanced', kyc_status: 'matched' });
  });

  it('live hard by email (no phone): the code from the local SMTP server, details, document; the poll returns approved', async () => {
    const { id, pollingUrl, url } = await createPending({ consumer: LIVE_EMAIL_ONLY, transaction: txn('8000.00') }, t.tenant.live.apiKey);
    const { page, shot } = await start('live-hard-email');
    await page.goto(url);
    await waitForHeading(page, 'Verify your identity');
    expect(await page.textContent('main')).toContain('q•••@example.org');
    await shot('send-code');

    const since = smtp.messages.length;
    await page.getByRole('button', { name: 'Send code' }).click();
    await page.locator('#code').waitFor();
    const mail = await smtp.waitForMessage({ since, to: LIVE_EMAIL_ONLY.email });
    expect(await page.textContent('#notice')).toBe('We sent a 6-digit code to your email.');
    await shot('enter-code');
    // A mistyped code first: the page says so and keeps the form.
    await typeAndEnter(page, '#code', mail.code === '999999' ? '999998' : '999999');
    await page.locator('#notice', { hasText: 'That code is not right. 4 tries left.' }).waitFor();
    expect(await page.getAttribute('#code', 'aria-describedby')).toBe('notice');
    await shot('wrong-code');
    await typeAndEnter(page, '#code', mail.code!);

    await page.locator('#ssn_last4').waitFor();
    await shot('your-details');
    await page.locator('#dob').fill(LIVE_EMAIL_ONLY.dob);
    await typeAndEnter(page, '#ssn_last4', LIVE_EMAIL_ONLY.ssn_last4);
    await page.locator('#document').waitFor({ state: 'attached' });
    await shot('id-document');
    await page.setInputFiles('#document', { name: 'passport.png', mimeType: 'image/png', buffer: makePng(80, 50, [5, 96, 58]) });
    await page.getByRole('button', { name: 'Upload and finish' }).click();
    await waitForHeading(page, "You're verified");
    await shot('verified');
    expect(await api('GET', pollingUrl, t.tenant.live.apiKey)).toMatchObject({ decision_id: id, status: 'complete', outcome: 'approved', kyc_tier: 'hard', kyc_status: 'matched' });
  });

  it('a failed journey (sandbox 111111): the page says so plainly and the poll returns referred AA-24', async () => {
    const { pollingUrl, url } = await createPending({ consumer: { consumer_id: enhanced }, transaction: txn('700.00') });
    const { page, shot } = await start('sandbox-failed');
    await page.goto(url);
    await waitForHeading(page, 'Verify your identity');
    await shot('send-code');
    await page.getByRole('button', { name: 'Send code' }).click();
    await page.locator('#code').waitFor();
    await shot('enter-code');
    await typeAndEnter(page, '#code', '111111');
    await waitForHeading(page, "We couldn't verify your identity");
    expect(await page.locator('form').count()).toBe(0);
    await shot('failed');
    expect(await api('GET', pollingUrl, t.tenant.sandbox.apiKey)).toMatchObject({ status: 'complete', outcome: 'referred', kyc_status: 'pending', decline_reasons: [{ code: 'AA-24', reason: 'Unable to verify identity' }] });
  });

  it('an expired link: the page says so plainly and the poll returns declined AA-01', async () => {
    const { pollingUrl, url } = await createPending({ consumer: { consumer_id: enhanced }, transaction: txn('650.00') });
    const { page, shot } = await start('sandbox-expired');
    await page.goto(url);
    await waitForHeading(page, 'Verify your identity');
    await shot('send-code');
    clock.advance(24 * 3_600_000);
    await page.reload();
    await waitForHeading(page, 'This link has expired');
    expect(await page.locator('form').count()).toBe(0);
    await shot('expired');
    expect(await api('GET', pollingUrl, t.tenant.sandbox.apiKey)).toMatchObject({ status: 'complete', outcome: 'declined', decline_reasons: [{ code: 'AA-01', reason: 'Credit application incomplete' }] });
  });
});
