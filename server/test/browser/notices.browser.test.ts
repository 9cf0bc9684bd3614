/**
 * Adverse-action notices in headless Chromium against the real service on a loopback port. An
 * admin signs up; the lender's backend declines a new sandbox consumer through /v1 (`ssn_last4`
 * 0000: AA-21 "Bankruptcy" first); before any settings the notice marks what is missing. The admin
 * enters the settings on Settings -> Adverse-action notices (the service's 422 message shown first),
 * reloads and finds them kept, then opens the decision, follows "Adverse-action notice" and reads
 * the letter: creditor, applicant, what was applied for, Part I, Part II with the agency and the
 * credit score the decision page shows, the ECOA statement and the federal agency. In print media
 * only the letter shows, black on white. An underwriter-style counteroffer (approved for less) has a
 * notice saying what is offered instead; an approval in full offers none, and its notice address
 * shows the service's reason. A viewer is offered no notice and cannot edit the settings.
 * Screens: test-artifacts/screenshots/notices-*.png.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptInvitationInPortal, BrowserPages, chromiumAvailable, ensurePortalBuilt, heading, launchChromium, type ListeningTestApp, pageFetch, Screenshots, signUpInPortal, startListeningTestApp } from '../support/browser.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';

const LAPTOP = { width: 1366, height: 900 } as const;
const TABLET = { width: 820, height: 1180 } as const;
const PASSWORD = 'a long notices passphrase';
const DAY_MS = 86_400_000;

const SETTINGS = {
  creditorName: 'Prairie Lending Co.',
  creditorAddress: '200 Main Street\nSuite 4\nDes Moines, IA 50309',
  creditorPhone: '1-515-555-0100',
  agency: 'Consumer Financial Protection Bureau\n1700 G Street NW\nWashington, DC 20552',
  craName: 'Example Credit Bureau, Inc.',
  craAddress: 'P.O. Box 1000\nAtlanta, GA 30348',
  craPhone: '1-800-555-0199',
} as const;

/** A date as the letter writes it (the service's UTC calendar day). */
const LETTER_DATE = new Intl.DateTimeFormat('en-US', { year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' });
const letterDate = (at: Date) => LETTER_DATE.format(at);

interface Disclosure {
  score: number;
  range: { min: number; max: number } | null;
  key_factors: Array<{ code: string; reason: string | null }>;
}

describe.skipIf(!chromiumAvailable())('adverse-action notices in headless Chromium', () => {
  let db: TestDatabase;
  let t: ListeningTestApp;
  let browser: Browser;
  let pages: BrowserPages;
  const shots = new Screenshots('notices');
  let admin: Page;
  let apiKey = '';
  let declinedId = '';

  beforeAll(async () => {
    ensurePortalBuilt();
    [db, browser] = await Promise.all([createTestDatabase('sqlite'), launchChromium()]);
    pages = new BrowserPages(browser);
    t = await startListeningTestApp(db, { env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' } });
    admin = await pages.open(LAPTOP);
  });
  afterAll(async () => {
    await pages?.closeAll();
    await browser?.close();
    await t?.close();
    await db?.drop();
    if (shots.files.length > 0) console.info(`notices screenshots:\n  ${shots.files.join('\n  ')}`);
  });

  const letter = (page: Page) => page.getByRole('article', { name: 'Notice letter' });
  // Exact: the navigation's "Adverse-action notices" (the settings) would match otherwise.
  const noticeLink = (page: Page) => page.getByRole('link', { name: 'Adverse-action notice', exact: true });

  /** Who made this decision's notices so far: each making is recorded as a reveal of the applicant. */
  async function noticeReveals(id: string): Promise<string[]> {
    const rows = await t.ctx.storage.db.selectFrom('underwriting_actions').select(['user_name', 'details_json']).where('decision_id', '=', id).where('kind', '=', 'pii_revealed').orderBy('created_at').execute();
    return rows.map((r) => `${r.user_name}: ${(JSON.parse(r.details_json) as { purpose?: string }).purpose}`);
  }

  /** The decision page, once its reasons are shown (the notice link depends on them, so its absence then means something). */
  async function openDecision(page: Page, id: string, reasons: { list: string; text: string } = { list: 'Reasons, most important first', text: 'AA-21' }): Promise<void> {
    await page.goto(`${t.baseUrl}/portal/sandbox/decisions/${id}`);
    await heading(page, 'Decision');
    await page.getByRole('list', { name: reasons.list }).getByText(reasons.text).waitFor();
  }

  /** A BNPL decision made as the lender's backend makes it, through /v1 with the sandbox key. */
  async function decide(body: unknown): Promise<{ decision_id: string; outcome: string; decline_reasons?: Array<{ code: string; reason: string }> }> {
    const r = await fetch(`${t.baseUrl}/v1/decisions/bnpl`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(r.status).toBe(200);
    return (await r.json()) as { decision_id: string; outcome: string; decline_reasons?: Array<{ code: string; reason: string }> };
  }

  it('declines a new consumer through /v1; before any settings, the notice marks what is missing', async () => {
    apiKey = await signUpInPortal(admin, t.baseUrl, { company: 'Prairie Lending', name: 'Paula Admin', email: 'paula.admin@prairie-lending.example.com', password: PASSWORD });
    const body = await decide({
      consumer: { first_name: 'Dana', last_name: 'Decline', email: 'dana@example.com', phone: '+14155550188', dob: '1980-03-14', ssn_last4: '0000', address: { line1: '12 Elm Street', line2: 'Apt 3', city: 'Omaha', state: 'NE', zip: '68102' } },
      transaction: { amount: '450.00', currency: 'USD', merchant_name: 'Prairie Outfitters', merchant_category: 'sporting_goods' },
    });
    expect(body.outcome).toBe('declined');
    expect(body.decline_reasons?.[0]).toEqual({ code: 'AA-21', reason: 'Bankruptcy' });
    declinedId = body.decision_id;

    await openDecision(admin, declinedId);
    await noticeLink(admin).click();
    await heading(admin, 'Adverse-action notice');
    const warning = admin.getByRole('status').filter({ hasText: 'This notice is not ready to mail' });
    await warning.waitFor();
    expect(await warning.innerText()).toContain('Not set yet: creditor name, creditor address, federal agency, consumer reporting agency name, consumer reporting agency address and consumer reporting agency telephone number.');
    const text = await letter(admin).innerText();
    for (const placeholder of ['[creditor name not set]', '[creditor address not set]', '[federal agency not set]', '[consumer reporting agency name not set]', '[consumer reporting agency address not set]']) {
      expect(text, placeholder).toContain(placeholder);
    }
    await shots.screen(admin, 'notice-without-settings');
    await warning.getByRole('link', { name: 'Settings: Adverse-action notices' }).click();
    await heading(admin, 'Adverse-action notices');
  });

  it('the admin enters the settings: the service’s message on a 422, then saved, and kept after a reload', async () => {
    expect(await admin.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Adverse-action notices' }).getAttribute('aria-current')).toBe('page');
    await admin.getByLabel('Creditor name').fill(SETTINGS.creditorName);
    await admin.getByLabel('Creditor address').fill(SETTINGS.creditorAddress);
    await admin.getByLabel('Creditor telephone (optional)').fill(SETTINGS.creditorPhone);
    await admin.getByLabel('Federal agency name and address').fill(SETTINGS.agency);
    // The agency's name without its address: the service refuses, and its message is shown.
    await admin.getByLabel('Consumer reporting agency name').fill(SETTINGS.craName);
    await admin.getByRole('button', { name: 'Save settings' }).click();
    const refused = admin.getByRole('alert').filter({ hasText: 'Could not save the settings' });
    await refused.getByText(/cra_name and cra_address go together/).waitFor();
    await shots.screen(admin, 'settings-refused');

    await admin.getByLabel('Consumer reporting agency address').fill(SETTINGS.craAddress);
    await admin.getByLabel('Consumer reporting agency telephone', { exact: true }).fill(SETTINGS.craPhone);
    await admin.getByRole('button', { name: 'Save settings' }).click();
    await admin.getByText('Saved. Notices made from now on use these details.').waitFor();
    expect(await refused.count()).toBe(0);
    await shots.screen(admin, 'settings-saved');

    await admin.reload();
    await heading(admin, 'Adverse-action notices');
    await admin.getByText(/^Last saved \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.$/).waitFor();
    const kept = {
      creditorName: await admin.getByLabel('Creditor name').inputValue(),
      creditorAddress: await admin.getByLabel('Creditor address').inputValue(),
      creditorPhone: await admin.getByLabel('Creditor telephone (optional)').inputValue(),
      agency: await admin.getByLabel('Federal agency name and address').inputValue(),
      craName: await admin.getByLabel('Consumer reporting agency name').inputValue(),
      craAddress: await admin.getByLabel('Consumer reporting agency address').inputValue(),
      craPhone: await admin.getByLabel('Consumer reporting agency telephone', { exact: true }).inputValue(),
    };
    expect(kept).toEqual(SETTINGS);
  });

  it('saved meanwhile from another tab: Save says so and saves nothing; Reload brings the other values into the form, which then saves', async () => {
    // The screen shows version 1. Another tab of the same organisation saves a new telephone.
    const elsewhere = await pageFetch(admin, 'PUT', '/portal/api/settings/notices', {
      expected_version: 1, creditor_name: SETTINGS.creditorName, creditor_address: SETTINGS.creditorAddress, creditor_phone: '1-800-555-0111',
      agency: SETTINGS.agency, cra_name: SETTINGS.craName, cra_address: SETTINGS.craAddress, cra_phone: SETTINGS.craPhone,
    });
    expect(elsewhere.status, JSON.stringify(elsewhere.body)).toBe(200);

    await admin.getByLabel('Creditor name').fill('Typed Over Lending');
    await admin.getByRole('button', { name: 'Save settings' }).click();
    const conflict = admin.getByRole('status').filter({ hasText: 'Someone else saved these settings first' });
    await conflict.getByText(/These settings were saved by Paula Admin at .* since you loaded them; reload to see them\./).waitFor();
    expect(await admin.getByRole('button', { name: 'Save settings' }).isDisabled()).toBe(true);
    // Nothing of this screen's was written.
    const stored = (await pageFetch(admin, 'GET', '/portal/api/settings/notices')).body as { settings: { creditor_name: string; creditor_phone: string; version: number } };
    expect(stored.settings).toMatchObject({ creditor_name: SETTINGS.creditorName, creditor_phone: '1-800-555-0111', version: 2 });
    await shots.screen(admin, 'settings-conflict');

    await conflict.getByRole('button', { name: 'Reload settings' }).click();
    await conflict.waitFor({ state: 'detached' });
    expect(await admin.getByLabel('Creditor telephone (optional)').inputValue()).toBe('1-800-555-0111');
    expect(await admin.getByLabel('Creditor name').inputValue()).toBe(SETTINGS.creditorName);
    // On top of what was reloaded, the change saves (and puts back the telephone the letters below expect).
    await admin.getByLabel('Creditor telephone (optional)').fill(SETTINGS.creditorPhone);
    await admin.getByRole('button', { name: 'Save settings' }).click();
    await admin.getByText('Saved. Notices made from now on use these details.').waitFor();
    expect(((await pageFetch(admin, 'GET', '/portal/api/settings/notices')).body as { settings: { creditor_phone: string; version: number } }).settings).toMatchObject({ creditor_phone: SETTINGS.creditorPhone, version: 3 });
  });

  it('the decision page offers the notice; the letter shows the applicant, Part I, Part II, the creditor and the agency as saved', async () => {
    const detail = (await pageFetch(admin, 'GET', `/portal/api/decisions/sandbox/${declinedId}`)).body as { summary: { created_at: string; completed_at: string }; explanation: { credit_score_disclosure: Disclosure | null } };
    const disclosure = detail.explanation.credit_score_disclosure;
    expect(disclosure).not.toBeNull();

    await openDecision(admin, declinedId);
    await shots.screen(admin, 'decision-with-notice-link');
    await noticeLink(admin).click();
    await heading(admin, 'Adverse-action notice');
    expect(admin.url()).toBe(`${t.baseUrl}/portal/sandbox/decisions/${declinedId}/notice`);
    const sheet = letter(admin);
    await sheet.waitFor();

    await admin.getByText('Sandbox: a test notice, not for mailing').waitFor();
    // 30 days from the completed application, a day less so that no US time zone's date is later.
    const due = new Date(Date.parse(detail.summary.completed_at) + 29 * DAY_MS);
    await admin.getByText(`Send by ${letterDate(due)}`).waitFor();
    await admin.getByText('Regulation B gives 30 days from the completed application to notify the applicant of a decline', { exact: false }).waitFor();
    expect(await admin.getByText('This notice is not ready to mail').count()).toBe(0);

    const text = await sheet.innerText();
    expect(text).not.toContain('not set]');
    // The letterhead, in the lines the admin typed, then the date and the applicant.
    expect(text).toContain(['Prairie Lending Co.', '200 Main Street', 'Suite 4', 'Des Moines, IA 50309', 'Telephone: 1-515-555-0100'].join('\n'));
    expect(text).toContain(letterDate(new Date()));
    expect(text).toContain(['Dana Decline', '12 Elm Street', 'Apt 3', 'Omaha, NE 68102'].join('\n'));
    expect(text).toContain('Dear Dana Decline:');
    expect(text).toMatch(new RegExp(`Thank you for your application of ${letterDate(new Date(detail.summary.created_at))} for a buy now, pay later loan of \\$450\\.00\\b`));
    expect(text).toContain('we have declined your application');

    const partOne = sheet.getByRole('region', { name: /^Part I: Principal reason\(s\) for credit denial/ });
    expect((await partOne.locator('li').allInnerTexts())[0]).toBe('Bankruptcy AA-21');

    const partTwo = sheet.getByRole('region', { name: /^Part II: Disclosure of use of information obtained from an outside source/ });
    const partTwoText = await partTwo.innerText();
    expect(partTwoText).toContain('Our credit decision was based in whole or in part on information obtained in a report from the consumer reporting agency listed below.');
    expect(partTwoText).toContain(['Example Credit Bureau, Inc.', 'P.O. Box 1000', 'Atlanta, GA 30348', 'Telephone: 1-800-555-0199'].join('\n'));
    // The credit score block: what the decision page's FCRA disclosure holds, in its order.
    expect(partTwoText).toMatch(new RegExp(`Your credit score\\s+${disclosure!.score}\\b`));
    expect(disclosure!.range).not.toBeNull();
    expect(partTwoText).toMatch(new RegExp(`Scores range\\s+from ${disclosure!.range!.min} to ${disclosure!.range!.max}\\b`));
    const factors = await partTwo.getByRole('list', { name: /Key factors that adversely affected your credit score/ }).locator('li').allInnerTexts();
    expect(factors).toEqual(disclosure!.key_factors.map((f) => `${f.reason ?? f.code} ${f.code}`));
    expect(factors.length).toBeGreaterThan(0);

    // The ECOA statement, then the federal agency as saved.
    // Its paragraph and the agency's address (the section's heading is for screen readers only).
    const ecoa = (await sheet.getByRole('region', { name: 'Equal Credit Opportunity Act notice' }).locator(':scope > p, :scope > address').allInnerTexts()).join('\n');
    // Opened twice so far (without settings, and now): the screen made the notice once each time.
    expect(await noticeReveals(declinedId)).toEqual(['Paula Admin: adverse_action_notice', 'Paula Admin: adverse_action_notice']);
    expect(ecoa).toMatch(/^The Federal Equal Credit Opportunity Act prohibits creditors from discriminating against credit applicants .* The Federal agency that administers compliance with this law concerning this creditor is:\n+Consumer Financial Protection Bureau\n1700 G Street NW\nWashington, DC 20552\s*$/s);
    await shots.screen(admin, 'notice');
  });

  it('printed, only the letter shows: no navigation, header, banners or toolbar; black on white; no reason codes', async () => {
    const printButton = admin.locator('button', { hasText: 'Print' });
    const code = letter(admin).getByText('AA-21', { exact: true });
    const shell = { nav: admin.locator('nav.sidenav'), header: admin.locator('header.topbar'), envBanner: admin.locator('.env-banner'), title: admin.locator('h1', { hasText: 'Adverse-action notice' }), sandbox: admin.getByText('Sandbox: a test notice, not for mailing') };
    // On screen, all of it is there (so "not visible" below is the print style's doing).
    for (const [what, l] of Object.entries({ ...shell, printButton, code })) expect(await l.isVisible(), what).toBe(true);

    await admin.emulateMedia({ media: 'print' });
    try {
      for (const [what, l] of Object.entries({ ...shell, printButton, code })) expect(await l.isVisible(), `${what} in print`).toBe(false);
      const sheet = letter(admin);
      expect(await sheet.isVisible()).toBe(true);
      expect(await sheet.getByText('Dana Decline', { exact: true }).isVisible()).toBe(true);
      expect(await sheet.getByText('Bankruptcy', { exact: false }).isVisible()).toBe(true);
      // The screen's sandbox banner does not print; the letter's own mark does, so a printed test letter cannot be mailed as real.
      expect(await sheet.getByText('Sandbox test notice: not for mailing', { exact: true }).isVisible()).toBe(true);
      const colours = await sheet.evaluate((el) => {
        // Runs in the page; this Node-typed project has no DOM typings.
        const style = (globalThis as unknown as { getComputedStyle(e: unknown): { color: string; backgroundColor: string } }).getComputedStyle(el);
        return { color: style.color, background: style.backgroundColor };
      });
      expect(colours).toEqual({ color: 'rgb(0, 0, 0)', background: 'rgb(255, 255, 255)' });
      await shots.screen(admin, 'notice-print');
    } finally {
      await admin.emulateMedia({ media: 'screen' });
    }
  });

  it('a counteroffer has a notice saying what is offered instead; an approval in full has none, and its notice address says why', async () => {
    const rosa = await decide({
      consumer: { first_name: 'Rosa', last_name: 'Counter', email: 'rosa@example.com', phone: '+14155550189', dob: '1985-05-06', ssn_last4: '1111', address: { line1: '9 Pier Road', city: 'Seattle', state: 'WA', zip: '98101' } },
      transaction: { amount: '300.00', currency: 'USD', merchant_name: 'Prairie Outfitters', merchant_category: 'sporting_goods' },
    });
    expect(rosa.outcome).toBe('referred');
    // While referred, the referral screen offers the actions, and no notice yet.
    await admin.goto(`${t.baseUrl}/portal/sandbox/referrals/${rosa.decision_id}`);
    await heading(admin, 'Referred decision');
    await admin.getByRole('button', { name: 'Approve' }).waitFor();
    expect(await noticeLink(admin).count()).toBe(0);
    // The admin approves less than asked, with the reason (the referral screen's own request).
    const approved = await pageFetch(admin, 'POST', `/portal/api/referrals/sandbox/${rosa.decision_id}/approve`, { expected_version: 1, amount: '250.00', plan: 'pay_in_4', reason_codes: ['AA-08'] });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    // Worked into a counteroffer, the referral screen leads to the notice.
    await admin.reload();
    await heading(admin, 'Referred decision');
    await noticeLink(admin).click();
    await heading(admin, 'Adverse-action notice');
    expect(admin.url()).toBe(`${t.baseUrl}/portal/sandbox/decisions/${rosa.decision_id}/notice`);

    await openDecision(admin, rosa.decision_id, { list: 'Counteroffer reasons, most important first', text: 'AA-08' });
    await noticeLink(admin).click();
    await heading(admin, 'Adverse-action notice');
    const text = await letter(admin).innerText();
    expect(text).toContain('for a buy now, pay later loan of $300.00.');
    expect(text).toContain('We are unable to offer you the credit you applied for. We can offer you instead a buy now, pay later loan of $250.00, in 4 payments every two weeks');
    expect(text).toContain('If you do not accept our offer, this notice applies to your application.');
    expect(text).not.toContain('declined your application');
    expect(await letter(admin).getByRole('region', { name: /^Part I:/ }).locator('li').allInnerTexts()).toEqual(['Income insufficient for amount of credit requested AA-08']);
    await admin.getByText('Owed only if the applicant does not take the counteroffer: within 90 days of it', { exact: false }).waitFor();
    await shots.screen(admin, 'counteroffer-notice');

    const seeded = (await pageFetch(admin, 'GET', '/portal/api/sandbox/consumers?seeded=true')).body.data as Array<{ id: string }>;
    const inFull = await decide({ consumer: { consumer_id: seeded[0]!.id }, transaction: { amount: '100.00', currency: 'USD', merchant_name: 'Prairie Outfitters', merchant_category: 'sporting_goods' } });
    expect(inFull.outcome).toBe('approved');
    await admin.goto(`${t.baseUrl}/portal/sandbox/decisions/${inFull.decision_id}`);
    await heading(admin, 'Decision');
    await admin.getByText('No adverse-action reasons (approved in full).').waitFor();
    expect(await noticeLink(admin).count()).toBe(0);
    // Opened by its address anyway: the service's reason, as it says it.
    await admin.goto(`${t.baseUrl}/portal/sandbox/decisions/${inFull.decision_id}/notice`);
    await heading(admin, 'Adverse-action notice');
    const none = admin.getByRole('alert').filter({ hasText: 'No notice for this decision' });
    await none.getByText('This decision has no adverse-action notice: it was approved as requested.').waitFor();
    expect(await letter(admin).count()).toBe(0);
    expect(await admin.locator('button', { hasText: 'Print' }).isDisabled()).toBe(true);
    await shots.screen(admin, 'no-notice');

    // The explorer's "Adverse action" filter lists the decisions that owe a notice: here the
    // counteroffer and the decline of the first test, not the approval in full.
    await admin.goto(`${t.baseUrl}/portal/sandbox/decisions`);
    await heading(admin, 'Decisions');
    await admin.getByLabel('Adverse action').selectOption('any');
    await admin.getByRole('button', { name: 'Search' }).click();
    await admin.waitForURL(/adverse_action=any/);
    const results = admin.getByRole('table', { name: 'Decisions, newest first' });
    // The unfiltered table stays on screen until the filtered answer replaces it: wait for the
    // approval in full to go, then read what is left.
    await results.getByRole('link', { name: `Decision ${inFull.decision_id}` }).waitFor({ state: 'detached' });
    await results.getByRole('link', { name: `Decision ${rosa.decision_id}` }).waitFor();
    await results.getByRole('link', { name: `Decision ${declinedId}` }).waitFor();
    expect(await results.locator('tbody tr').count()).toBe(2);
    // Each row says by when its notice is due: the notice's own date.
    const dueBy = async (id: string) =>
      ((await (await fetch(`${t.baseUrl}/v1/decisions/bnpl/${id}/adverse-action-notice`, { headers: { authorization: `Bearer ${apiKey}` } })).json()) as { due_by: string }).due_by;
    for (const id of [rosa.decision_id, declinedId]) {
      const row = results.locator('tbody tr').filter({ has: admin.getByRole('link', { name: `Decision ${id}` }) });
      await row.getByText(`notice by ${await dueBy(id)}`).waitFor();
    }
    await shots.screen(admin, 'explorer-adverse-action');
  });

  it("an auto loan's notice: the amount financed as a letter writes money, and its term", async () => {
    const r = await fetch(`${t.baseUrl}/v1/decisions/auto-loan`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        consumer: { first_name: 'Abe', last_name: 'Auto', email: 'abe@example.com', phone: '+14155550177', dob: '1979-09-09', ssn_last4: '0000', address: { line1: '4 Depot Road', city: 'Lincoln', state: 'NE', zip: '68508' } },
        vehicle: { vin: '1HGCM8262RA004352', year: 2024, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00' },
        loan: { amount: '16000.00', down_payment: '2000.00', trade_in_value: '1000.00', term_months: 60, currency: 'USD' },
        channel: 'direct',
      }),
    });
    expect(r.status).toBe(200);
    const auto = (await r.json()) as { decision_id: string; outcome: string };
    expect(auto.outcome).toBe('declined');
    await admin.goto(`${t.baseUrl}/portal/sandbox/decisions/${auto.decision_id}/notice`);
    await heading(admin, 'Adverse-action notice');
    // 16,000.00 less 2,000.00 down and 1,000.00 traded in: the amount financed, grouped by thousands.
    expect(await letter(admin).innerText()).toContain('for an auto loan of $13,000.00, repaid monthly over 60 months.');
  });

  it('a viewer is offered no notice, may not open one, and reads the settings without a form', async () => {
    const invited = await pageFetch(admin, 'POST', '/portal/api/invitations', { email: 'vera.viewer@prairie-lending.example.com', role: 'viewer' });
    expect(invited.status).toBe(201);
    const viewer = await pages.open(TABLET);
    await acceptInvitationInPortal(viewer, String(invited.body.invite_url), { name: 'Vera Viewer', password: PASSWORD });

    await openDecision(viewer, declinedId);
    expect(await noticeLink(viewer).count()).toBe(0);
    await viewer.goto(`${t.baseUrl}/portal/sandbox/decisions/${declinedId}/notice`);
    await heading(viewer, 'Not allowed');
    expect(await letter(viewer).count()).toBe(0);
    expect(await noticeReveals(declinedId)).toHaveLength(2); // the refused screen asked for nothing

    await viewer.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Adverse-action notices' }).click();
    await heading(viewer, 'Adverse-action notices');
    await viewer.getByText('Your role can read these settings but not change them; an admin can.').waitFor();
    // What the admin saved, read-only: the address as typed, line by line.
    expect(await viewer.getByText(SETTINGS.creditorName, { exact: true }).count()).toBe(1);
    expect(await viewer.locator('.pre-line', { hasText: '200 Main Street' }).innerText()).toBe(SETTINGS.creditorAddress);
    expect(await viewer.locator('input, textarea').count()).toBe(0);
    expect(await viewer.getByRole('button', { name: 'Save settings' }).count()).toBe(0);
    await shots.screen(viewer, 'viewer-settings');
    expect((await pageFetch(viewer, 'PUT', '/portal/api/settings/notices', { creditor_name: 'X', creditor_address: 'Y', agency: 'Z' })).status).toBe(403);
  });
});
