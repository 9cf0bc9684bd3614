/**
 * Portal passwords in headless Chromium against the real service on a loopback port: an admin's
 * one-time reset link for a member (Settings -> Users), opened in another browser by the member,
 * and a signed-in person changing their own password (Settings -> Account). There is no email: the
 * link is read from the dialog that shows it once, as a person would copy it. Each step checks
 * what the service did as well as what the page shows: the other sessions end, the old password
 * stops working, the new one works, a used link is refused. Screenshots:
 * test-artifacts/screenshots/passwords-*.png.
 */
import type { Browser, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserPages, chromiumAvailable, ensurePortalBuilt, heading, launchChromium, type ListeningTestApp, pageFetch, Screenshots, signUpInPortal, startListeningTestApp } from '../support/browser.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';

const LAPTOP = { width: 1366, height: 900 } as const;
const PASSWORD = 'a long sandbox passphrase';
const DEVELOPER_NEW_PASSWORD = 'a brand new passphrase for Devon';
const VIEWER_NEW_PASSWORD = 'the viewer picked this one';
const INVALID_LINK = 'This password reset link is not valid any more (used, replaced or expired); ask an admin of your team for a new one.';

describe.skipIf(!chromiumAvailable())('portal passwords in headless Chromium', () => {
  let db: TestDatabase;
  let t: ListeningTestApp;
  let browser: Browser;
  let pages: BrowserPages;
  const shots = new Screenshots('passwords');
  const company = 'Juniper Lending';
  const adminEmail = 'ines.admin@juniper-lending.example.com';
  const developer = { name: 'Devon Developer', email: 'devon.dev@juniper-lending.example.com' };
  const viewer = { name: 'Vera Viewer', email: 'vera.viewer@juniper-lending.example.com' };
  // Shared along the journey (each test builds on the previous one, as these people's sessions would).
  let admin: Page;
  let developerEarlier: Page;
  let viewerPage: Page;
  let developerId = '';
  let resetUrl = '';

  beforeAll(async () => {
    ensurePortalBuilt();
    [db, browser] = await Promise.all([createTestDatabase('sqlite'), launchChromium()]);
    pages = new BrowserPages(browser);
    t = await startListeningTestApp(db);
    admin = await newPage();
  });
  afterAll(async () => {
    await pages?.closeAll();
    await browser?.close();
    await t?.close();
    await db?.drop();
    if (shots.files.length > 0) console.info(`password screenshots:\n  ${shots.files.join('\n  ')}`);
  });

  /** A fresh laptop-size browser (its own cookies: another device, or another person). */
  const newPage = () => pages.open(LAPTOP);

  const mainNav = (page: Page) => page.getByRole('navigation', { name: 'Main' });
  const portalCall = (page: Page, method: string, path: string) => page.waitForResponse((r) => r.request().method() === method && new URL(r.url()).pathname === `/portal/api${path}`);
  const errorBody = async (response: Response) => (await response.json()) as Record<string, string>;

  /** Signs in through the portal's own form, as a person does, and lands on the overview. */
  async function signIn(page: Page, email: string, password: string): Promise<void> {
    await page.goto(`${t.baseUrl}/portal/login`);
    await heading(page, 'Sign in');
    await page.getByLabel('Work email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading(page, /^Welcome, /);
  }

  /** The sign-in form refuses this password (in a browser of its own, so nothing else is signed out). */
  async function signInRefused(email: string, password: string): Promise<void> {
    const page = await newPage();
    await page.goto(`${t.baseUrl}/portal/login`);
    await heading(page, 'Sign in');
    await page.getByLabel('Work email').fill(email);
    await page.getByLabel('Password').fill(password);
    const login = portalCall(page, 'POST', '/login');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect((await login).status()).toBe(401);
    await page.getByRole('alert').filter({ hasText: 'Could not sign in' }).waitFor();
    await heading(page, 'Sign in');
    await page.context().close();
  }

  /** An invitation made by the admin (the API call the Users screen makes), accepted by the invitee. */
  async function invite(person: { name: string; email: string }, role: 'developer' | 'viewer'): Promise<void> {
    const invited = await pageFetch(admin, 'POST', '/portal/api/invitations', { email: person.email, role });
    expect(invited.status).toBe(201);
    const token = new URL(String(invited.body.invite_url)).hash.slice(1);
    await t.ctx.accounts.acceptInvitation({ token, name: person.name, password: PASSWORD, clientAddress: '127.0.0.1' });
  }

  it('an admin signs up and invites a developer and a viewer, who sign in; everyone has Settings -> Account', async () => {
    await signUpInPortal(admin, t.baseUrl, { company, name: 'Ines Admin', email: adminEmail, password: PASSWORD });
    await invite(developer, 'developer');
    await invite(viewer, 'viewer');
    const users = await pageFetch(admin, 'GET', '/portal/api/users');
    developerId = (users.body.data as Array<{ id: string; email: string }>).find((u) => u.email === developer.email)!.id;

    developerEarlier = await newPage();
    await signIn(developerEarlier, developer.email, PASSWORD);
    await heading(developerEarlier, 'Welcome, Devon');
    viewerPage = await newPage();
    await signIn(viewerPage, viewer.email, PASSWORD);
    await heading(viewerPage, 'Welcome, Vera');

    for (const page of [admin, developerEarlier, viewerPage]) await mainNav(page).getByRole('link', { name: 'Account' }).waitFor();
    expect(await mainNav(admin).getByRole('link', { name: 'Users' }).count()).toBe(1);
    for (const page of [developerEarlier, viewerPage]) expect(await mainNav(page).getByRole('link', { name: 'Users' }).count()).toBe(0);
  });

  it('a viewer sees no Reset password action, and the API refuses them a reset link (403)', async () => {
    await viewerPage.goto(`${t.baseUrl}/portal/sandbox/settings/users`);
    await heading(viewerPage, 'Not allowed');
    expect(await viewerPage.getByRole('button', { name: /Reset password/ }).count()).toBe(0);
    const refused = await pageFetch(viewerPage, 'POST', `/portal/api/users/${developerId}/password-reset`, {});
    expect(refused).toMatchObject({ status: 403, body: { error: 'forbidden' } });
    await mainNav(viewerPage).getByRole('link', { name: 'Overview' }).click();
    await heading(viewerPage, 'Welcome, Vera');
  });

  it("an admin creates the developer's reset link on Settings -> Users: confirmed first, shown once with Copy and its expiry", async () => {
    await mainNav(admin).getByRole('link', { name: 'Users' }).click();
    await heading(admin, 'Users');
    const team = admin.getByRole('table', { name: 'Users' });
    const developerRow = team.getByRole('row').filter({ hasText: developer.email });
    const adminRow = team.getByRole('row').filter({ hasText: adminEmail });
    await developerRow.getByRole('button', { name: `Reset password of ${developer.name}` }).waitFor();
    // Their own password is changed on Account, not reset from here.
    expect(await adminRow.getByRole('button', { name: /Reset password/ }).count()).toBe(0);
    expect(await mainNav(admin).getByRole('link', { name: 'Users' }).getAttribute('aria-current')).toBe('page');
    expect(await mainNav(admin).getByRole('link', { name: 'Account' }).getAttribute('aria-current')).toBeNull();

    await developerRow.getByRole('button', { name: `Reset password of ${developer.name}` }).click();
    const confirm = admin.getByRole('dialog', { name: 'Reset password' });
    await confirm
      .getByText(`Create a one-time link for ${developer.name} to set a new password? The link works once, for 24 hours. Their current password keeps working until the link is used.`)
      .waitFor();
    await shots.screen(admin, 'users-reset-confirm');
    // Cancel makes nothing; the keyboard works the dialog as well as the mouse.
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'hidden' });
    await developerRow.getByRole('button', { name: `Reset password of ${developer.name}` }).focus();
    await admin.keyboard.press('Enter');
    await confirm.waitFor();

    const created = portalCall(admin, 'POST', `/users/${developerId}/password-reset`);
    const before = Date.now();
    await confirm.getByRole('button', { name: 'Create reset link' }).click();
    const response = await created;
    expect(response.status()).toBe(201);
    const body = (await response.json()) as { reset_url: string; expires_at: string; user: Record<string, unknown> };
    expect(Object.keys(body).sort()).toEqual(['expires_at', 'reset_url', 'user']);
    const listed = (await pageFetch(admin, 'GET', '/portal/api/users')).body.data as Array<Record<string, unknown>>;
    expect(body.user).toEqual(listed.find((u) => u.id === developerId));

    const shown = admin.getByRole('dialog', { name: 'Password reset link created' });
    resetUrl = await shown.getByLabel('Password reset link').inputValue();
    expect(resetUrl).toBe(body.reset_url);
    expect(resetUrl).toMatch(new RegExp(`^${t.baseUrl}/portal/reset-password#[A-Za-z0-9_-]{32,}$`));
    await shown.getByRole('button', { name: 'Copy' }).waitFor();
    const warning = (await shown.getByText(/It works once and expires at/).textContent()) ?? '';
    expect(warning).toContain(`${developer.name} (${developer.email})`);
    const [, day, time] = /expires at (\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}) UTC/.exec(warning) ?? [];
    const expires = Date.parse(`${day}T${time}Z`);
    expect(expires).toBe(Math.floor(Date.parse(body.expires_at) / 1000) * 1000);
    expect(expires).toBeGreaterThanOrEqual(before + 24 * 3600_000 - 60_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 24 * 3600_000 + 1_000);
    await shots.screen(admin, 'users-reset-link-shown-once');

    await shown.getByRole('button', { name: 'Done' }).click();
    await shown.waitFor({ state: 'hidden' });
    expect(await admin.content()).not.toContain(new URL(resetUrl).hash.slice(1));
    // Until the link is used, the developer's password and session are untouched.
    await mainNav(developerEarlier).getByRole('link', { name: 'API keys' }).click();
    await heading(developerEarlier, 'API keys');
  });

  it('the developer opens the link in another browser, sets a new password and lands signed in; their earlier session is signed out', async () => {
    const phone = await pages.phone(); // a fresh phone, where a link handed over in a chat is often opened
    const lookup = portalCall(phone, 'POST', '/password-reset-links/lookup');
    await phone.goto(resetUrl);
    expect((await lookup).status()).toBe(200);
    await heading(phone, 'Set a new password');
    await phone.getByText(`Set a new password for ${developer.email} (${company})`).waitFor();
    await shots.screen(phone, 'reset-password');

    // The browser's own checks first: nothing is sent while the two differ or the password is short.
    await phone.getByLabel('New password', { exact: true }).fill('too short');
    await phone.getByLabel('Confirm new password').fill('too short!');
    await phone.getByRole('button', { name: 'Set password and sign in' }).click();
    await phone.getByText('Use at least 12 characters.').waitFor();
    await phone.getByText('The two passwords are not the same.').waitFor();
    expect(await phone.getByLabel('New password', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    await shots.screen(phone, 'reset-password-checks');

    await phone.getByLabel('New password', { exact: true }).fill(DEVELOPER_NEW_PASSWORD);
    await phone.getByLabel('Confirm new password').fill(DEVELOPER_NEW_PASSWORD);
    const accepted = portalCall(phone, 'POST', '/password-reset-links/accept');
    await phone.getByRole('button', { name: 'Set password and sign in' }).click();
    expect((await accepted).status()).toBe(200);
    await heading(phone, 'Welcome, Devon');
    // Signed in as accepting an invitation leaves you: the token is gone from the address bar.
    expect(phone.url()).toBe(`${t.baseUrl}/portal/sandbox`);
    await shots.screen(phone, 'reset-password-signed-in');
    await phone.reload();
    await heading(phone, 'Welcome, Devon');

    // The session from before the reset (still showing API keys): its next API call finds it
    // ended, and the app lands on sign-in saying why.
    const refused = developerEarlier.waitForResponse((r) => new URL(r.url()).pathname.startsWith('/portal/api/') && r.request().method() === 'GET');
    await mainNav(developerEarlier).getByRole('link', { name: 'Webhooks' }).click();
    const gone = await refused;
    expect(gone.status()).toBe(401);
    expect(await errorBody(gone)).toMatchObject({ error: 'not_authenticated' });
    await heading(developerEarlier, 'Sign in');
    await developerEarlier.getByText('Your session has ended. Sign in again to continue.').waitFor();
    await developerEarlier.goto(`${t.baseUrl}/portal/sandbox/settings/account`);
    await heading(developerEarlier, 'Sign in');
    expect((await pageFetch(developerEarlier, 'GET', '/portal/api/session')).body.authenticated).toBe(false);
  });

  it('the old password no longer signs in, the new one does, and the used link shows the invalid-link message', async () => {
    await signInRefused(developer.email, PASSWORD);
    await signIn(developerEarlier, developer.email, DEVELOPER_NEW_PASSWORD);
    await heading(developerEarlier, 'Welcome, Devon');

    const again = await newPage();
    const lookup = portalCall(again, 'POST', '/password-reset-links/lookup');
    await again.goto(resetUrl);
    const refused = await lookup;
    expect(refused.status()).toBe(404);
    expect(await errorBody(refused)).toMatchObject({ error: 'not_found', message: INVALID_LINK });
    await heading(again, 'Password reset link not valid');
    await again.getByText(INVALID_LINK).waitFor();
    await shots.screen(again, 'reset-password-used-link');
    await again.getByRole('link', { name: 'Go to sign in' }).click();
    await heading(again, 'Sign in');
    // And accepting it directly is refused the same way (a used link sets no password).
    const accept = await pageFetch(again, 'POST', '/portal/api/password-reset-links/accept', { token: new URL(resetUrl).hash.slice(1), password: 'yet another long passphrase' });
    expect(accept).toMatchObject({ status: 404, body: { error: 'not_found', message: INVALID_LINK } });
    await signIn(again, developer.email, DEVELOPER_NEW_PASSWORD);
  });

  it('a viewer changes their own password on Settings -> Account: the wrong current password is refused, then success ends their other session', async () => {
    const viewerElsewhere = await newPage();
    await signIn(viewerElsewhere, viewer.email, PASSWORD);
    // A second tab of the same browser (same cookies), open before the change.
    const sameBrowserTab = await viewerPage.context().newPage();
    await sameBrowserTab.goto(`${t.baseUrl}/portal/sandbox/settings/account`);
    await heading(sameBrowserTab, 'Account');

    await mainNav(viewerPage).getByRole('link', { name: 'Account' }).click();
    await heading(viewerPage, 'Account');
    expect(viewerPage.url()).toBe(`${t.baseUrl}/portal/sandbox/settings/account`);
    expect(await mainNav(viewerPage).getByRole('link', { name: 'Account' }).getAttribute('aria-current')).toBe('page');
    const details = viewerPage.getByRole('region', { name: 'Your account' });
    expect(await details.locator('dt, dd').allTextContents()).toEqual(['Name', viewer.name, 'Email', viewer.email, 'Role', 'Viewer', 'Organisation', company]);
    await shots.screen(viewerPage, 'account');

    const form = viewerPage.getByRole('region', { name: 'Change password' });
    const current = form.getByLabel('Current password');
    const fresh = form.getByLabel('New password', { exact: true });
    const confirm = form.getByLabel('Confirm new password');
    const submit = form.getByRole('button', { name: 'Change password' });

    // The browser's check: the two new fields differ, nothing is sent.
    await current.fill(PASSWORD);
    await fresh.fill(VIEWER_NEW_PASSWORD);
    await confirm.fill(`${VIEWER_NEW_PASSWORD}.`);
    await submit.click();
    await form.getByText('The two passwords are not the same.').waitFor();

    // The service's refusal, shown as it says it.
    await current.fill('not my password at all');
    await confirm.fill(VIEWER_NEW_PASSWORD);
    let call = portalCall(viewerPage, 'POST', '/account/password');
    await submit.click();
    let response = await call;
    expect(response.status()).toBe(422);
    const wrong = await errorBody(response);
    expect(wrong).toMatchObject({ error: 'unprocessable_entity', message: 'The current password is not right.' });
    await viewerPage.getByRole('alert').filter({ hasText: 'Could not change the password' }).getByText(wrong.message!).waitFor();
    expect(await form.getByText('The two passwords are not the same.').count()).toBe(0);
    await shots.screen(viewerPage, 'account-wrong-current-password');

    // The right current password, but the same one again: refused as the service says.
    await current.fill(PASSWORD);
    await fresh.fill(PASSWORD);
    await confirm.fill(PASSWORD);
    call = portalCall(viewerPage, 'POST', '/account/password');
    await submit.click();
    response = await call;
    expect(response.status()).toBe(422);
    const same = await errorBody(response);
    expect(same).toMatchObject({ error: 'unprocessable_entity', message: 'The new password must differ from the current one.' });
    await viewerPage.getByRole('alert').getByText(same.message!).waitFor();

    const sessionCookie = async () => (await viewerPage.context().cookies()).filter((c) => !/csrf/i.test(c.name)).map((c) => `${c.name}=${c.value}`).join('; ');
    const cookieBefore = await sessionCookie();
    await fresh.fill(VIEWER_NEW_PASSWORD);
    await confirm.fill(VIEWER_NEW_PASSWORD);
    call = portalCall(viewerPage, 'POST', '/account/password');
    await submit.click();
    response = await call;
    expect(response.status()).toBe(200);
    // The session is renewed, not kept: a new cookie, and the old one is signed out with the rest.
    const cookieAfter = await sessionCookie();
    expect(cookieAfter).not.toBe(cookieBefore);
    const oldSession = await fetch(`${t.baseUrl}/portal/api/session`, { headers: { cookie: cookieBefore } });
    expect(((await oldSession.json()) as { authenticated: boolean }).authenticated).toBe(false);
    const newSession = await fetch(`${t.baseUrl}/portal/api/session`, { headers: { cookie: cookieAfter } });
    expect(((await newSession.json()) as { authenticated: boolean }).authenticated).toBe(true);
    await viewerPage.getByRole('status').filter({ hasText: 'Password changed. Your other sessions were signed out, and this one was renewed.' }).waitFor();
    for (const field of [current, fresh, confirm]) expect(await field.inputValue()).toBe('');
    expect(await viewerPage.getByRole('alert').count()).toBe(0);
    await shots.screen(viewerPage, 'account-password-changed');

    // The other browser is signed out at its next navigation. The second tab of this browser has
    // the renewed cookie but the old session's CSRF token: its next state change (signing out) is
    // refused once (403), and the app takes the current token and succeeds without a reload.
    await viewerElsewhere.reload();
    await heading(viewerElsewhere, 'Sign in');
    const logouts: number[] = [];
    sameBrowserTab.on('response', (r) => {
      if (new URL(r.url()).pathname === '/portal/api/logout') logouts.push(r.status());
    });
    await sameBrowserTab.getByRole('button', { name: 'Sign out' }).click();
    await heading(sameBrowserTab, 'Sign in');
    expect(logouts).toEqual([403, 200]);
  });

  it("afterwards the viewer's sign-in works only with the new password", async () => {
    await signInRefused(viewer.email, PASSWORD);
    const page = await newPage();
    await signIn(page, viewer.email, VIEWER_NEW_PASSWORD);
    await heading(page, 'Welcome, Vera');
  });

  it('a link opened where someone is signed in is not dropped: the portal offers to sign out first, then shows the link', async () => {
    const page = await newPage();
    await signIn(page, viewer.email, VIEWER_NEW_PASSWORD);
    await page.goto(resetUrl);
    await heading(page, 'Set a new password');
    await page.getByText(`You are signed in as ${viewer.email}.`).waitFor();
    expect(new URL(page.url()).hash).toBe(new URL(resetUrl).hash); // still the link, not sent to the app
    await shots.screen(page, 'reset-link-while-signed-in');
    const signedOut = portalCall(page, 'POST', '/logout');
    await page.getByRole('button', { name: 'Sign out and open the password reset link' }).click();
    expect((await signedOut).status()).toBe(200);
    // The link's own screen now: this one was used above, so it says so.
    await heading(page, 'Password reset link not valid');
    expect((await pageFetch(page, 'GET', '/portal/api/session')).body.authenticated).toBe(false);
  });
});
