/**
 * The underwriting workplace in headless Chromium against the real service on a loopback port,
 * with a real HTTPS webhook receiver (its CA trusted by the delivery worker, which runs as in
 * production). Referred sandbox decisions (magic SSN 1111) are worked through the referral queue by
 * an underwriter who signs in through the portal: approve, decline, request documents (uploaded by
 * the applicant on the hosted page in a phone-size browser, then viewed and accepted in
 * verification review) and add a condition. After each action the /v1 poll shows the new state
 * and the action's event arrives, signed, at the receiver. A second person acting first gives the
 * underwriter the conflict message. Every screen: test-artifacts/screenshots/underwriting-*.png.
 */
import { writeFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserPages, chromiumAvailable, ensurePortalBuilt, heading, launchChromium, type ListeningTestApp, makePng, Screenshots, startListeningTestApp } from '../support/browser.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { makeTempDir } from '../support/server-process.js';
import { signedWith, startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';

const LAPTOP = { width: 1366, height: 900 } as const;
const PASSWORD = 'a long underwriting passphrase';
const HOOK = '/underwriting-e2e';

describe.skipIf(!chromiumAvailable())('underwriting workplace in headless Chromium', () => {
  let db: TestDatabase;
  let t: ListeningTestApp;
  let receiver: WebhookReceiver;
  let browser: Browser;
  let pages: BrowserPages;
  const shots = new Screenshots('underwriting');
  let apiKey = '';
  let secret = '';
  let tenantId = '';
  let adminId = '';
  let underwriter: Page;
  const ids: Record<'approve' | 'decline' | 'documents' | 'conflict', string> = { approve: '', decline: '', documents: '', conflict: '' };

  beforeAll(async () => {
    ensurePortalBuilt();
    [receiver, db, browser] = await Promise.all([startWebhookReceiver(), createTestDatabase('sqlite'), launchChromium()]);
    pages = new BrowserPages(browser);
    t = await startListeningTestApp(db, {
      env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' },
      overrides: { webhookDelivery: { ca: receiver.ca, timeoutMs: 2_000, leaseMs: 30_000, pollIntervalMs: 100 } },
    });
    t.ctx.webhookDelivery.start();

    // The lender: an admin (signed up as the portal does), an underwriter invited by them, and a
    // webhook endpoint on the local HTTPS receiver for every event.
    const signed = await t.ctx.accounts.signUp({ companyName: 'Harbor Credit', name: 'Ada Admin', email: 'ada@harbor-credit.example.com', password: PASSWORD, clientAddress: '127.0.0.1' });
    apiKey = signed.sandboxApiKey;
    tenantId = signed.tenant.id;
    adminId = signed.session.user.id;
    const invited = await t.ctx.accounts.inviteUser(signed.session.user, { email: 'uri@harbor-credit.example.com', role: 'underwriter' });
    await t.ctx.accounts.acceptInvitation({ token: invited.token, name: 'Uri Underwriter', password: PASSWORD, clientAddress: '127.0.0.1' });
    const endpoint = await t.ctx.webhooks.createEndpoint({ tenantId, environment: 'sandbox' }, { url: receiver.url(HOOK) });
    secret = endpoint.secret;

    ids.approve = await referred('Rosa', 'Approve', '300.00');
    ids.decline = await referred('Dan', 'Decline', '180.00');
    ids.documents = await referred('Doris', 'Documents', '420.00');
    ids.conflict = await referred('Cory', 'Conflict', '90.00');
  });
  afterAll(async () => {
    await pages?.closeAll();
    await browser?.close();
    await t?.close();
    await db?.drop();
    await receiver?.stop();
    if (shots.files.length > 0) console.info(`underwriting screenshots:\n  ${shots.files.join('\n  ')}`);
  });

  async function referred(first: string, last: string, amount: string): Promise<string> {
    const r = await fetch(`${t.baseUrl}/v1/decisions/bnpl`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        consumer: { first_name: first, last_name: last, email: `${first.toLowerCase()}@example.com`, phone: '+14155550142', dob: '1985-05-06', ssn_last4: '1111', address: { line1: '9 Pier Rd', city: 'Seattle', state: 'WA', zip: '98101' } },
        transaction: { amount, currency: 'USD', merchant_name: 'Harbor Outfitters', merchant_category: 'sporting_goods' },
      }),
    });
    const body = (await r.json()) as { decision_id: string; outcome: string };
    expect(body.outcome).toBe('referred');
    return body.decision_id;
  }

  async function poll(id: string): Promise<Record<string, unknown>> {
    const r = await fetch(`${t.baseUrl}/v1/decisions/bnpl/${id}`, { headers: { authorization: `Bearer ${apiKey}` } });
    return (await r.json()) as Record<string, unknown>;
  }

  /** The event of `type` about decision `id`, once it has arrived (signed) at the receiver. */
  async function arrived(type: string, id: string): Promise<{ id: string; type: string; data: Record<string, unknown> }> {
    const match = (r: ReceivedWebhook) => r.headers['svc-webhook-type'] === type && (JSON.parse(r.body) as { data: { decision_id?: string } }).data.decision_id === id;
    await receiver.waitFor((rs) => rs.some(match), 10_000);
    const request = receiver.requestsTo(HOOK).find(match)!;
    expect(signedWith(request, secret)).toBe(true);
    return JSON.parse(request.body) as { id: string; type: string; data: Record<string, unknown> };
  }

  async function openReferral(page: Page, id: string): Promise<void> {
    await page.goto(`${t.baseUrl}/portal/sandbox/referrals/${id}`);
    await heading(page, 'Referred decision');
  }

  it('the underwriter signs in and sees the queue, oldest first, with applicants masked', async () => {
    underwriter = await pages.open(LAPTOP);
    await underwriter.goto(`${t.baseUrl}/portal/login`);
    await heading(underwriter, 'Sign in');
    await underwriter.getByLabel('Work email').fill('uri@harbor-credit.example.com');
    await underwriter.getByLabel('Password').fill(PASSWORD);
    await underwriter.getByRole('button', { name: 'Sign in' }).click();
    await heading(underwriter, 'Welcome, Uri');
    await underwriter.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Referral queue' }).click();
    await heading(underwriter, 'Referral queue');
    const table = underwriter.getByRole('table', { name: 'Referred decisions' });
    await table.getByRole('row').nth(4).waitFor();
    const rows = await table.getByRole('row').allInnerTexts();
    // Oldest first is pinned on a controlled clock in the integration suite; here: all four, masked.
    expect(rows.slice(1).map((r) => r.split('\t')[1]?.split(' ').slice(0, 2).join(' ')).sort()).toEqual(['C. C.', 'D. D.', 'D. D.', 'R. A.']);
    const html = await underwriter.content();
    for (const name of ['Rosa', 'Approve', 'rosa@example.com', '4155550142', '1985-05-06']) expect(html).not.toContain(name);
    await shots.screen(underwriter, 'queue');
  });

  it('approves with amount and plan: the poll returns the approval and decision.adjusted arrives', async () => {
    await openReferral(underwriter, ids.approve);
    await underwriter.getByText('r•••@example.com').waitFor();
    await underwriter.getByRole('table', { name: 'Action history' }).getByText('No one has acted on this decision yet.').waitFor();
    await shots.screen(underwriter, 'referral-detail');

    await underwriter.getByRole('button', { name: 'Reveal' }).click();
    await underwriter.getByText('Rosa Approve').waitFor();
    await underwriter.getByText('1985-05-06').waitFor();
    await underwriter.getByRole('table', { name: 'Action history' }).getByRole('row', { name: /Uri Underwriter.*Applicant details revealed/ }).waitFor();
    await shots.screen(underwriter, 'referral-revealed');

    await underwriter.getByRole('button', { name: 'Approve' }).click();
    const dialog = underwriter.getByRole('dialog', { name: 'Approve this application' });
    await dialog.getByLabel('Approved amount (USD)').fill('250.00');
    await dialog.getByLabel('Plan').selectOption('pay_in_6');
    await dialog.getByText(/Priced at grade D: 14\.99% nominal/).waitFor();
    // 250.00 of the 300.00 asked is a counteroffer: the form asks why, and will not approve without it.
    const why = dialog.getByRole('group', { name: /Counteroffer reasons: why not the full 300\.00 USD.*required/ });
    await why.waitFor();
    expect(await why.getByLabel(/AA-25/).count()).toBe(0);
    expect(await dialog.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(true);
    await why.getByLabel('AA-08 Income insufficient for amount of credit requested').check();
    await dialog.getByText('Chosen: AA-08').waitFor();
    await shots.screen(underwriter, 'approve-dialog');
    await dialog.getByRole('button', { name: 'Approve' }).click();
    await underwriter.getByText(/Approved: 250\.00 USD at \d+\.\d\d% APR/).waitFor();
    await underwriter.getByText('This decision is approved').waitFor();
    await underwriter.getByRole('table', { name: 'Action history' }).getByRole('row', { name: /Uri Underwriter.*counteroffer reasons AA-08/ }).waitFor();
    await shots.screen(underwriter, 'approved');

    const polled = await poll(ids.approve);
    expect(polled).toMatchObject({ status: 'complete', outcome: 'approved', approved_amount: '250.00', term_months: 6, decline_reasons: [], tila_disclosure: { amount_financed: '250.00', payment_frequency: 'monthly' } });
    expect((polled.payment_schedule as unknown[]).length).toBe(6);
    const event = await arrived('decision.adjusted', ids.approve);
    expect(event.data).toMatchObject({ previous_outcome: 'referred', outcome: 'approved', approved_amount: '250.00', plan: 'pay_in_6', apr: polled.apr, reason_codes: ['AA-08'], adjusted_by: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(event.data.adjusted_by).not.toBe(adminId);
  });

  it('declines with reasons from the catalogue: the poll returns the decline and decision.adjusted arrives', async () => {
    await openReferral(underwriter, ids.decline);
    await underwriter.getByRole('button', { name: 'Decline' }).click();
    const dialog = underwriter.getByRole('dialog', { name: 'Decline this application' });
    expect(await dialog.getByLabel(/AA-25/).count()).toBe(0); // referral-only: never offered
    await dialog.getByLabel('AA-09 Excessive obligations in relation to income').check();
    await dialog.getByLabel('AA-22 Number of recent inquiries on credit bureau report').check();
    await dialog.getByText('Chosen: AA-09, AA-22').waitFor();
    await shots.screen(underwriter, 'decline-dialog');
    await dialog.getByRole('button', { name: 'Decline' }).click();
    await underwriter.getByText('Declined with AA-09, AA-22.', { exact: false }).waitFor();
    await shots.screen(underwriter, 'declined');

    expect(await poll(ids.decline)).toEqual({
      decision_id: ids.decline,
      application_id: ids.decline,
      status: 'complete',
      outcome: 'declined',
      decline_reasons: [
        { code: 'AA-09', reason: 'Excessive obligations in relation to income' },
        { code: 'AA-22', reason: 'Number of recent inquiries on credit bureau report' },
      ],
    });
    const event = await arrived('decision.adjusted', ids.decline);
    expect(event.data).toMatchObject({ outcome: 'declined', reason_codes: ['AA-09', 'AA-22'], approved_amount: null });
  });

  it('requests documents; the applicant uploads them on the hosted page; the underwriter views and accepts them in verification review', async () => {
    await openReferral(underwriter, ids.documents);
    await underwriter.getByRole('button', { name: 'Request documents' }).click();
    const dialog = underwriter.getByRole('dialog', { name: 'Request documents' });
    await dialog.getByLabel('Proof of income').check();
    await dialog.getByLabel(/Note for the file/).fill('Recent payslip');
    await shots.screen(underwriter, 'request-documents-dialog');
    await dialog.getByRole('button', { name: 'Request documents' }).click();
    await underwriter.getByText(/Documents requested\. Send the applicant this upload link/).waitFor();
    await shots.screen(underwriter, 'documents-requested');

    const event = await arrived('application.documents_requested', ids.documents);
    expect(event.data).toMatchObject({ document_types: ['proof_of_income'], upload_url: expect.stringMatching(new RegExp(`^${t.baseUrl}/verify/[A-Za-z0-9_-]{43}$`)) });
    expect(JSON.stringify(event.data)).not.toContain('payslip');
    expect(await underwriter.getByLabel('Upload link').innerText()).toBe(event.data.upload_url);
    expect((await poll(ids.documents)).outcome).toBe('referred');

    // The applicant, on a phone.
    const applicant = await pages.phone();
    await applicant.goto(String(event.data.upload_url));
    await applicant.locator('h1', { hasText: 'Upload documents' }).waitFor();
    await shots.screen(applicant, 'hosted-upload');
    const dir = makeTempDir('uw-upload');
    const file = `${dir}/payslip.png`;
    writeFileSync(file, makePng(240, 160, [200, 120, 40]));
    await applicant.getByLabel('Proof of income').setInputFiles(file);
    await applicant.getByRole('button', { name: 'Upload documents' }).click();
    await applicant.locator('h1', { hasText: 'Documents received' }).waitFor();
    await shots.screen(applicant, 'hosted-upload-received');

    await underwriter.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Verification review' }).click();
    await heading(underwriter, 'Verification review');
    const card = underwriter.getByRole('region', { name: `Decision ${ids.documents.slice(0, 8)}` });
    await card.getByText('Awaiting review').waitFor();
    await shots.screen(underwriter, 'verification-review');
    await card.getByRole('button', { name: /View Proof of income/ }).click();
    const viewer = underwriter.getByRole('dialog', { name: `Proof of income of decision ${ids.documents.slice(0, 8)}` });
    const img = viewer.getByRole('img', { name: 'Proof of income uploaded by the applicant' });
    await img.waitFor();
    // The image decoded (240 px wide). Read through the locator, not a string predicate: a string
    // is evaluated with eval in the page when it must be polled, which the page's CSP refuses.
    await expect.poll(() => underwriter.locator('img.document-view').evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth), { timeout: 10_000 }).toBe(240);
    await shots.screen(underwriter, 'document-viewer');
    await viewer.getByRole('button', { name: 'Close' }).click();
    await card.getByLabel(/Review note/).fill('Payslip matches the application');
    await card.getByRole('button', { name: 'Accept' }).click();
    await underwriter.getByText(`Verification of decision ${ids.documents.slice(0, 8)} marked accepted.`).waitFor();
    await underwriter.getByText('Nothing to review').waitFor();
    await underwriter.getByLabel('Show').selectOption('reviewed');
    await underwriter.getByRole('region', { name: `Decision ${ids.documents.slice(0, 8)}` }).getByText('Accepted').waitFor();
    await shots.screen(underwriter, 'verification-reviewed');
  });

  it('adds a condition: application.condition_added arrives, and the history lists every action', async () => {
    await openReferral(underwriter, ids.documents);
    await underwriter.getByRole('button', { name: 'Add condition' }).click();
    const dialog = underwriter.getByRole('dialog', { name: 'Add an approval condition' });
    await dialog.getByLabel('Condition').selectOption('proof_of_income');
    await dialog.getByLabel('Note (optional)').fill('Payslip must show 3 months');
    await shots.screen(underwriter, 'condition-dialog');
    await dialog.getByRole('button', { name: 'Add condition' }).click();
    await underwriter.getByText('Condition added: Proof of income.', { exact: false }).waitFor();
    const event = await arrived('application.condition_added', ids.documents);
    expect(event.data).toMatchObject({ code: 'proof_of_income', decision_id: ids.documents });
    const history = underwriter.getByRole('table', { name: 'Action history' });
    for (const action of ['Documents requested', 'Document viewed', 'Verification reviewed', 'Condition added']) await history.getByRole('cell', { name: action, exact: true }).waitFor();
    await shots.screen(underwriter, 'condition-added-history');
  });

  it('when someone else acts first, the underwriter gets a clear conflict message and reloads the new state', async () => {
    await openReferral(underwriter, ids.conflict);
    // The admin approves the same decision meanwhile (through the same service the portal uses).
    await t.ctx.underwriting.approve({ tenantId, environment: 'sandbox' }, ids.conflict, { userId: adminId, name: 'Ada Admin' }, { expectedVersion: 1, amount: '90.00', plan: 'pay_in_4' });
    await underwriter.getByRole('button', { name: 'Decline' }).click();
    const dialog = underwriter.getByRole('dialog', { name: 'Decline this application' });
    await dialog.getByLabel('AA-08 Income insufficient for amount of credit requested').check();
    await dialog.getByRole('button', { name: 'Decline' }).click();
    await underwriter.getByText('Someone else acted on this decision first').waitFor();
    await underwriter.getByText(/This decision was changed by Ada Admin \(approved\) at .+; reload to see the new state\./).waitFor();
    await shots.screen(underwriter, 'conflict');
    await underwriter.getByRole('button', { name: 'Reload decision' }).click();
    await underwriter.getByText('This decision is approved').waitFor();
    expect(await underwriter.getByRole('button', { name: 'Decline' }).count()).toBe(0);
    expect((await poll(ids.conflict)).outcome).toBe('approved');
  });

  it('approves a referred indirect auto loan with amount financed and term: the preview, the poll and decision.adjusted agree', async () => {
    const dealer = await t.ctx.dealers.addDealer({ tenantId, environment: 'sandbox' }, { name: 'Harbor Honda', state: 'WA' });
    const created = await fetch(`${t.baseUrl}/v1/decisions/auto-loan`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        consumer: { first_name: 'Alma', last_name: 'Autoloan', email: 'alma@example.com', phone: '+14155550143', dob: '1984-07-09', ssn_last4: '1111', address: { line1: '9 Pier Rd', city: 'Seattle', state: 'WA', zip: '98101' } },
        vehicle: { vin: '1HGCM8262RA004352', year: 2024, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00' },
        loan: { amount: '16000.00', down_payment: '2000.00', trade_in_value: '1000.00', term_months: 60, currency: 'USD' },
        channel: 'indirect',
        dealer: { dealer_id: dealer.id, markup_rate_pct: '1.25' },
      }),
    });
    const { decision_id: id, outcome } = (await created.json()) as { decision_id: string; outcome: string };
    expect(outcome).toBe('referred');

    await openReferral(underwriter, id);
    const card = underwriter.getByRole('table', { name: 'Buy rate and markup cap by term' });
    await card.waitFor();
    await underwriter.getByText('2024 Honda Accord (used), 18,000 miles').waitFor();
    await underwriter.getByText('Indirect, dealer Harbor Honda').waitFor();
    await underwriter.getByText('86.67%').waitFor();
    await shots.screen(underwriter, 'auto-loan-detail');

    await underwriter.getByRole('button', { name: 'Approve' }).click();
    const dialog = underwriter.getByRole('dialog', { name: 'Approve this application' });
    expect(await dialog.getByLabel('Plan').count()).toBe(0);
    await dialog.getByLabel('Amount financed (USD)').fill('12000.00');
    // 72 months: the 1.25 markup is above that term's 1.00 cap; the form says so and will not submit.
    await dialog.getByLabel('Term (months)').selectOption('72');
    await dialog.getByText(/above the policy’s cap of 1\.00 for 72 months/).waitFor();
    expect(await dialog.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(true);
    await dialog.getByLabel('Term (months)').selectOption('48');
    expect(await dialog.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(true); // less than asked: no reason yet
    await dialog.getByLabel('AA-23 Value or type of collateral not sufficient').check();
    const preview = await dialog.getByTestId('auto-loan-preview').innerText();
    const [, buy, contract] = /buy rate (\d+\.\d\d)% \+ dealer markup 1\.25 = contract rate (\d+\.\d\d)%/.exec(preview) ?? [];
    expect(Math.round(Number(contract) * 100) - Math.round(Number(buy) * 100)).toBe(125);
    await shots.screen(underwriter, 'auto-loan-approve-dialog');
    await dialog.getByRole('button', { name: 'Approve' }).click();
    await underwriter.getByText(/Approved: 12000\.00 USD financed over 48 months at \d+\.\d\d% \(APR \d+\.\d\d%\)/).waitFor();
    await underwriter.getByText('This decision is approved').waitFor();
    await shots.screen(underwriter, 'auto-loan-approved');

    const polled = (await (await fetch(`${t.baseUrl}/v1/decisions/auto-loan/${id}`, { headers: { authorization: `Bearer ${apiKey}` } })).json()) as Record<string, unknown>;
    expect(polled).toMatchObject({ outcome: 'approved', approved_amount: '12000.00', term_months: 48, buy_rate: buy, contract_rate: contract, ltv: '80.00' });
    const event = await arrived('decision.adjusted', id);
    expect(event.data).toMatchObject({ outcome: 'approved', plan: null, term_months: 48, approved_amount: '12000.00', apr: polled.apr, reason_codes: ['AA-23'] });
  });
});
