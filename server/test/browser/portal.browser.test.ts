/**
 * The lender portal in headless Chromium (Debian's, driven by playwright-core) against the real
 * service on a loopback port, with a real HTTPS webhook receiver whose CA the delivery worker
 * trusts. One admin goes from sign-up to a first signed webhook received, as a new lender would;
 * then a viewer and a second tenant prove what they must not do or see. Every screen is kept as a
 * full-page screenshot under test-artifacts/screenshots/portal-*.png.
 *
 * Failures are driven quickly: the worker here makes one attempt per delivery and disables an
 * endpoint after 3 failed deliveries in a row (the production values, 8 attempts and 50, are
 * covered by the webhook delivery suite); failing test events go through the service layer.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserPages, chromiumAvailable, ensurePortalBuilt, heading, launchChromium, type ListeningTestApp, pageFetch, Screenshots, startListeningTestApp, visibleInputCount } from '../support/browser.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { signedWith, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const LAPTOP = { width: 1366, height: 900 } as const;
const TABLET = { width: 820, height: 1180 } as const;
const PASSWORD = 'a long sandbox passphrase';

describe.skipIf(!chromiumAvailable())('lender portal in headless Chromium', () => {
  let db: TestDatabase;
  let t: ListeningTestApp;
  let receiver: WebhookReceiver;
  let browser: Browser;
  let pages: BrowserPages;
  const shots = new Screenshots('portal');
  const adminEmail = 'dana.admin@northwind-credit.example.com';
  // Shared along the journey (each test builds on the previous one, as one person's session would).
  let admin: Page;
  let endpointId = '';
  let inviteUrl = '';

  beforeAll(async () => {
    ensurePortalBuilt();
    [receiver, db, browser] = await Promise.all([startWebhookReceiver(), createTestDatabase('sqlite'), launchChromium()]);
    pages = new BrowserPages(browser);
    t = await startListeningTestApp(db, {
      env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' },
      overrides: { webhookDelivery: { ca: receiver.ca, timeoutMs: 2_000, leaseMs: 30_000, pollIntervalMs: 100, schedule: { delaysMs: [] }, autoDisableThreshold: 3 } },
    });
    t.ctx.webhookDelivery.start();
    admin = await pages.open(LAPTOP);
  });
  afterAll(async () => {
    await pages?.closeAll();
    await browser?.close();
    await t?.close();
    await db?.drop();
    await receiver?.stop();
    if (shots.files.length > 0) console.info(`portal screenshots:\n  ${shots.files.join('\n  ')}`);
  });

  async function tenantOf(email: string): Promise<string> {
    const row = await t.ctx.storage.db.selectFrom('users').select('tenant_id').where('email', '=', email).executeTakeFirstOrThrow();
    return row.tenant_id;
  }

  it('signs up: a tenant with its sandbox, the sandbox key shown once, the overview', async () => {
    await admin.goto(`${t.baseUrl}/portal`);
    await heading(admin, 'Sign in');
    await shots.screen(admin, 'sign-in');
    await admin.getByRole('link', { name: 'Create an account' }).click();
    await heading(admin, 'Create your account');
    await admin.getByLabel('Company name').fill('Northwind Credit');
    await admin.getByLabel('Your name').fill('Dana Okafor');
    await admin.getByLabel('Work email').fill(adminEmail);
    await admin.getByLabel('Password').fill(PASSWORD);
    expect(await visibleInputCount(admin)).toBe(4);
    await shots.screen(admin, 'sign-up');
    await admin.getByRole('button', { name: 'Create account' }).click();
    await heading(admin, 'Your sandbox is ready');
    expect(await admin.getByLabel('Sandbox API key').inputValue()).toMatch(/^svc_test_[0-9A-Za-z]{40}$/);
    await shots.screen(admin, 'sign-up-sandbox-key');
    await admin.getByRole('button', { name: 'Continue to the portal' }).click();
    await heading(admin, 'Welcome, Dana');
    await admin.getByText(/"consumer_id":"[0-9a-f-]{36}"/).waitFor();
    expect(await admin.getByRole('navigation', { name: 'Environment' }).getByRole('link', { name: 'Sandbox' }).getAttribute('aria-current')).toBe('true');
    await shots.screen(admin, 'overview');
  });

  it('generates a sandbox key (shown once, with copy) and uses it against /v1 at once', async () => {
    await admin.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' }).click();
    await heading(admin, 'API keys');
    await admin.getByRole('button', { name: 'Generate new key' }).click();
    const dialog = admin.getByRole('dialog', { name: 'Generate new key' });
    expect(await dialog.getByLabel('Sandbox').isChecked()).toBe(true);
    await dialog.getByLabel('Name (optional)').fill('Checkout service');
    await dialog.getByRole('button', { name: 'Generate key' }).click();
    const shown = admin.getByRole('dialog', { name: 'Your new API key' });
    const key = await shown.getByLabel('Sandbox API key').inputValue();
    expect(key).toMatch(/^svc_test_[0-9A-Za-z]{40}$/);
    await shown.getByRole('button', { name: 'Copy' }).waitFor();
    await shots.screen(admin, 'api-key-shown-once');

    const tenantId = await tenantOf(adminEmail);
    const soft = (await t.ctx.consumers.listConsumers({ tenantId, environment: 'sandbox' }, { seededOnly: true })).consumers[0]!;
    const decision = await fetch(`${t.baseUrl}/v1/decisions/bnpl`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ consumer: { consumer_id: soft.id }, transaction: { amount: '120.00', currency: 'USD', merchant_name: 'Acme Outdoor', merchant_category: 'sporting_goods' } }),
    });
    expect(decision.status).toBe(200);
    expect(await decision.json()).toMatchObject({ status: 'complete', outcome: 'approved' });

    await shown.getByRole('button', { name: 'Done' }).click();
    await admin.reload();
    const row = admin.getByRole('row', { name: /Checkout service/ });
    await row.getByText(`svc_test_…${key.slice(-4)}`).waitFor();
    await row.getByText('just now').waitFor(); // last used
    expect(await admin.content()).not.toContain(key);
    await shots.screen(admin, 'api-keys');
  });

  it('adds a webhook endpoint on the local HTTPS receiver, sends a test event, sees it arrive signed and in the history', async () => {
    await admin.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks' }).click();
    await heading(admin, 'Webhooks');
    await admin.getByRole('button', { name: 'Add endpoint' }).click();
    const add = admin.getByRole('dialog', { name: 'Add sandbox endpoint' });
    await add.getByLabel('Endpoint URL').fill(receiver.url('/portal-e2e'));
    await add.getByLabel('Description (optional)').fill('Orders service');
    await shots.screen(admin, 'webhook-add');
    await add.getByRole('button', { name: 'Add endpoint' }).click();
    const created = admin.getByRole('dialog', { name: 'Endpoint added' });
    const secret = await created.getByLabel('Signing secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    await shots.screen(admin, 'webhook-secret-shown-once');
    await created.getByRole('button', { name: 'Done' }).click();
    await heading(admin, 'Webhook endpoint');
    endpointId = admin.url().split('/').pop()!;

    await admin.getByRole('button', { name: 'Send test event' }).click();
    await receiver.waitFor((rs) => rs.some((r) => r.path === '/portal-e2e'));
    const received = receiver.requestsTo('/portal-e2e')[0]!;
    expect(received.headers['svc-webhook-type']).toBe('webhook.test');
    expect(signedWith(received, secret)).toBe(true);
    const history = admin.getByRole('table', { name: 'Deliveries' });
    await history.getByRole('row', { name: /webhook\.test.*Delivered/ }).waitFor();
    await shots.screen(admin, 'webhook-endpoint');
    await history.getByRole('button', { name: 'View attempts of webhook.test delivery' }).click();
    const attempts = admin.getByRole('dialog', { name: 'Delivery of webhook.test' });
    await attempts.getByText('Attempt 1').waitFor();
    await attempts.getByText('Request').click();
    await attempts.getByText(/Svc-Signature: t=\d+,v1=[0-9a-f]{64}/).waitFor();
    await shots.screen(admin, 'webhook-delivery-attempts');
    await attempts.getByRole('button', { name: 'Close' }).click();

    // Rotate with a one-hour overlap: the next delivery carries both signatures.
    await admin.getByRole('button', { name: 'Rotate secret' }).click();
    const rotate = admin.getByRole('dialog', { name: 'Rotate signing secret' });
    await rotate.getByLabel('Overlap').selectOption('1');
    await rotate.getByRole('button', { name: 'Rotate secret' }).click();
    const newSecret = await rotate.getByLabel('New signing secret').inputValue();
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(secret);
    await shots.screen(admin, 'webhook-rotate-secret');
    await rotate.getByRole('button', { name: 'Done' }).click();
    await admin.getByRole('button', { name: 'Send test event' }).click();
    await receiver.waitFor((rs) => rs.filter((r) => r.path === '/portal-e2e').length >= 2);
    const second = receiver.requestsTo('/portal-e2e')[1]!;
    expect(signedWith(second, newSecret)).toBe(true);
    expect(signedWith(second, secret)).toBe(true); // the overlap
  });

  it('shows an endpoint auto-disabled with its reason, and re-enables it with a resend of what failed', async () => {
    const tenantId = await tenantOf(adminEmail);
    const scope = { tenantId, environment: 'sandbox' as const };
    receiver.setMode('/portal-e2e', 503);
    for (let i = 0; i < 3; i++) {
      await t.ctx.webhooks.sendTestEvent(scope, endpointId);
      await receiver.waitFor((rs) => rs.filter((r) => r.path === '/portal-e2e').length >= 3 + i);
    }
    await expect.poll(async () => (await t.ctx.webhooks.getEndpoint(scope, endpointId)).state, { timeout: 10_000 }).toBe('disabled');
    await admin.reload();
    const notice = admin.getByRole('alert').filter({ hasText: 'Auto-disabled' });
    await notice.getByText(/Auto-disabled after 3 consecutive failed deliveries \(last: HTTP 503/).waitFor();
    await admin.getByText('Auto-disabled', { exact: true }).first().waitFor();
    expect(await admin.getByRole('button', { name: 'Send test event' }).isDisabled()).toBe(true);
    await shots.screen(admin, 'webhook-auto-disabled');

    receiver.setMode('/portal-e2e', 200);
    const before = receiver.requestsTo('/portal-e2e').length;
    await notice.getByRole('button', { name: 'Re-enable' }).click();
    const confirm = admin.getByRole('dialog', { name: 'Re-enable this endpoint?' });
    expect(await confirm.getByRole('checkbox').isChecked()).toBe(true);
    await confirm.getByRole('button', { name: 'Re-enable' }).click();
    await admin.getByText(/Endpoint re-enabled\. 3 missed or failed events are being resent\./).waitFor();
    await receiver.waitFor((rs) => rs.filter((r) => r.path === '/portal-e2e').length >= before + 3);
    await admin.getByRole('table', { name: 'Deliveries' }).getByRole('row', { name: /Delivered/ }).first().waitFor();
    expect((await t.ctx.webhooks.getEndpoint(scope, endpointId)).state).toBe('active');
    await shots.screen(admin, 'webhook-re-enabled');
  });

  it('shows the seeded sandbox consumers and resets one, scoped to this sandbox', async () => {
    await admin.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sandbox consumers' }).click();
    await heading(admin, 'Sandbox consumers');
    const table = admin.getByRole('table', { name: 'Sandbox consumers' });
    for (const name of ['Riley Returning', 'Emery Enhanced', 'Harper Hardcase']) await table.getByRole('link', { name }).waitFor();
    await table.getByRole('button', { name: 'Copy' }).first().waitFor();
    await shots.screen(admin, 'sandbox-consumers');
    await admin.getByLabel('Search').fill('riley');
    await admin.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => table.getByRole('row').count()).toBe(2); // header + Riley
    await table.getByRole('link', { name: 'Riley Returning' }).click();
    await heading(admin, 'Riley Returning');
    const applications = admin.getByRole('table', { name: 'Applications' });
    await applications.getByRole('row', { name: /120\.00 USD.*Approved/ }).waitFor();
    await shots.screen(admin, 'sandbox-consumer');

    await admin.getByRole('button', { name: 'Reset consumer state' }).click();
    await shots.screen(admin, 'sandbox-consumer-reset-confirm');
    await admin.getByRole('dialog', { name: 'Reset this consumer?' }).getByRole('button', { name: 'Reset consumer state' }).click();
    await admin.getByText(/Consumer state reset/).waitFor();
    await applications.getByText('No applications since the last reset.').waitFor();
    await shots.screen(admin, 'sandbox-consumer-after-reset');
  });

  it('invites a viewer, and the environment switch shows live clearly', async () => {
    await admin.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users' }).click();
    await heading(admin, 'Users');
    await admin.getByRole('button', { name: 'Invite user' }).click();
    const invite = admin.getByRole('dialog', { name: 'Invite a user' });
    await invite.getByLabel('Email').fill('val.viewer@northwind-credit.example.com');
    await invite.getByLabel('Viewer').check();
    await invite.getByRole('button', { name: 'Create invitation' }).click();
    inviteUrl = await admin.getByRole('dialog', { name: 'Invitation created' }).getByLabel('Invitation link').inputValue();
    expect(inviteUrl).toMatch(new RegExp(`^${t.baseUrl}/portal/invitation#[A-Za-z0-9_-]{43}$`));
    await shots.screen(admin, 'users-invitation');
    await admin.getByRole('dialog', { name: 'Invitation created' }).getByRole('button', { name: 'Done' }).click();
    await admin.getByRole('table', { name: 'Open invitations' }).getByText('val.viewer@northwind-credit.example.com').waitFor();
    await shots.screen(admin, 'users');

    await admin.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' }).click();
    await admin.getByRole('navigation', { name: 'Environment' }).getByRole('link', { name: 'Live' }).click();
    await admin.getByText('Live environment.').waitFor();
    expect(admin.url()).toBe(`${t.baseUrl}/portal/live/api-keys`);
    await admin.getByLabel('Status').selectOption('all');
    await admin.getByRole('table', { name: 'API keys' }).getByText('svc_live_…', { exact: false }).waitFor();
    await shots.screen(admin, 'live-api-keys');
    // Switched to Live on the same screen: a new key is preselected for Live, not the environment the screen opened in.
    await admin.getByRole('button', { name: 'Generate new key' }).click();
    const liveDialog = admin.getByRole('dialog', { name: 'Generate new key' });
    expect(await liveDialog.getByLabel('Live').isChecked()).toBe(true);
    await admin.keyboard.press('Escape');
    await liveDialog.waitFor({ state: 'hidden' });
  });

  it('a viewer cannot generate keys: the UI does not offer it and the API refuses with 403', async () => {
    const viewer = await pages.open(LAPTOP);
    await viewer.goto(inviteUrl);
    await heading(viewer, 'Join your team');
    await viewer.getByText(/invited to Northwind Credit as Viewer/).waitFor();
    await viewer.getByLabel('Your name').fill('Val Viewer');
    await viewer.getByLabel('Choose a password').fill(PASSWORD);
    await shots.screen(viewer, 'accept-invitation');
    await viewer.getByRole('button', { name: 'Accept invitation' }).click();
    await heading(viewer, 'Welcome, Val');
    await viewer.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' }).click();
    await heading(viewer, 'API keys');
    await viewer.getByText('Your role can view keys but not generate or revoke them.').waitFor();
    expect(await viewer.getByRole('button', { name: 'Generate new key' }).count()).toBe(0);
    expect(await viewer.getByRole('button', { name: /Revoke/ }).count()).toBe(0);
    expect(await viewer.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users' }).count()).toBe(0);
    await shots.screen(viewer, 'viewer-api-keys');
    const refused = await pageFetch(viewer, 'POST', '/portal/api/api-keys', { environment: 'sandbox' });
    expect(refused).toMatchObject({ status: 403, body: { error: 'forbidden' } });
    expect(Object.keys(refused.body).sort()).toEqual(['error', 'message', 'request_id']);
  });

  it("another tenant sees none of this tenant's data, in the UI or through the API", async () => {
    const other = await pages.open(TABLET);
    await other.goto(`${t.baseUrl}/portal/signup`);
    await heading(other, 'Create your account');
    await other.getByLabel('Company name').fill('Contoso Lending');
    await other.getByLabel('Your name').fill('Omar Other');
    await other.getByLabel('Work email').fill('omar@contoso-lending.example.com');
    await other.getByLabel('Password').fill(PASSWORD);
    await other.getByRole('button', { name: 'Create account' }).click();
    await other.getByRole('button', { name: 'Continue to the portal' }).click();
    await heading(other, 'Welcome, Omar');
    await shots.screen(other, 'tablet-overview');

    await other.goto(`${t.baseUrl}/portal/sandbox/webhooks`);
    await other.getByText('No sandbox endpoints yet').waitFor();
    await shots.screen(other, 'tablet-webhooks-other-tenant');
    await other.goto(`${t.baseUrl}/portal/sandbox/webhooks/${endpointId}`);
    await heading(other, 'Endpoint not found');
    const tenantA = await tenantOf(adminEmail);
    const aConsumers = (await t.ctx.consumers.listConsumers({ tenantId: tenantA, environment: 'sandbox' })).consumers.map((c) => c.id);
    await other.goto(`${t.baseUrl}/portal/sandbox/consumers`);
    await other.getByRole('table', { name: 'Sandbox consumers' }).getByRole('link', { name: 'Riley Returning' }).waitFor();
    const html = await other.content();
    for (const id of aConsumers) expect(html).not.toContain(id);
    await shots.screen(other, 'tablet-consumers-other-tenant');
    expect((await pageFetch(other, 'GET', `/portal/api/webhooks/sandbox/endpoints/${endpointId}`)).status).toBe(404);
    expect((await pageFetch(other, 'POST', `/portal/api/sandbox/consumers/${aConsumers[0]}/reset`)).status).toBe(404);
  });
});
