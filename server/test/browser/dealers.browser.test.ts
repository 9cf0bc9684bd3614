/**
 * Dealers in the lender portal, in headless Chromium against the real service on a loopback port,
 * with a real HTTPS webhook receiver. An admin signs up, points a webhook endpoint at the receiver,
 * adds two dealers, edits one and disables it; every add and disable must reach the receiver as a
 * signed `dealer.added` / `dealer.removed` naming the dealer as the portal showed it. A viewer
 * sees the dealers but no way to change them (and the API refuses them). Last, the API the lender's
 * systems call: an indirect auto loan naming the disabled dealer is refused (422), naming the
 * active one is decided. Screenshots: test-artifacts/screenshots/dealers-*.png.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptInvitationInPortal, BrowserPages, chromiumAvailable, ensurePortalBuilt, heading, launchChromium, type ListeningTestApp, pageFetch, Screenshots, signUpInPortal, startListeningTestApp } from '../support/browser.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { signedWith, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const LAPTOP = { width: 1366, height: 900 } as const;
const TABLET = { width: 820, height: 1180 } as const;
const PASSWORD = 'a long sandbox passphrase';
const HOOK_PATH = '/dealer-events';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The receiver-side check of interface.md, Authentication 5: any v1 = HMAC(secret, `t.body`). */

interface Envelope {
  id: string;
  type: string;
  created: number;
  attempt: number;
  data: Record<string, unknown>;
}

/** A valid 17-character VIN (check digit in position 9 computed as ISO 3779 / 49 CFR 565 says). */
function vinWithCheckDigit(seventeen: string): string {
  const values: Record<string, number> = { A: 1, B: 2, C: 3, D: 4, E: 5, F: 6, G: 7, H: 8, J: 1, K: 2, L: 3, M: 4, N: 5, P: 7, R: 9, S: 2, T: 3, U: 4, V: 5, W: 6, X: 7, Y: 8, Z: 9 };
  const weights = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2];
  let sum = 0;
  for (let i = 0; i < 17; i++) {
    const c = seventeen[i]!;
    sum += (/\d/.test(c) ? Number(c) : values[c]!) * weights[i]!;
  }
  const check = sum % 11 === 10 ? 'X' : String(sum % 11);
  return seventeen.slice(0, 8) + check + seventeen.slice(9);
}

describe.skipIf(!chromiumAvailable())('dealers in the lender portal (headless Chromium)', () => {
  let db: TestDatabase;
  let t: ListeningTestApp;
  let receiver: WebhookReceiver;
  let browser: Browser;
  let pages: BrowserPages;
  const shots = new Screenshots('dealers');
  const adminEmail = 'morgan.admin@prairie-auto-credit.example.com';
  // Shared along the journey (each test builds on the previous one, as one person's session would).
  let admin: Page;
  let sandboxKey = '';
  let secret = '';
  let disabledDealerId = '';
  let activeDealerId = '';

  beforeAll(async () => {
    ensurePortalBuilt();
    [receiver, db, browser] = await Promise.all([startWebhookReceiver(), createTestDatabase('sqlite'), launchChromium()]);
    pages = new BrowserPages(browser);
    t = await startListeningTestApp(db, {
      env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' },
      overrides: { webhookDelivery: { ca: receiver.ca, timeoutMs: 2_000, leaseMs: 30_000, pollIntervalMs: 100 } },
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
    if (shots.files.length > 0) console.info(`dealer screenshots:\n  ${shots.files.join('\n  ')}`);
  });

  /** The signed deliveries of one event type about one dealer, parsed (after checking the signature). */
  function dealerEvents(type: string, dealerId: string): Envelope[] {
    return receiver
      .requestsTo(HOOK_PATH)
      .filter((r) => r.headers['svc-webhook-type'] === type)
      .map((r) => {
        expect(signedWith(r, secret), `${type} signed with the endpoint secret`).toBe(true);
        const event = JSON.parse(r.body) as Envelope;
        expect(r.headers['svc-webhook-id']).toBe(event.id);
        return event;
      })
      .filter((e) => e.data.dealer_id === dealerId);
  }

  async function waitForDealerEvent(type: string, dealerId: string, count = 1): Promise<Envelope> {
    await receiver.waitFor(() => dealerEvents(type, dealerId).length >= count, 15_000);
    return dealerEvents(type, dealerId)[count - 1]!;
  }

  const dealersTable = (page: Page) => page.getByRole('table', { name: 'Dealers' });
  const dealerRow = (page: Page, name: string) => dealersTable(page).getByRole('row').filter({ has: page.getByText(name, { exact: true }) });

  it('signs up and points a webhook endpoint at the HTTPS receiver', async () => {
    sandboxKey = await signUpInPortal(admin, t.baseUrl, { company: 'Prairie Auto Credit', name: 'Morgan Reyes', email: adminEmail, password: PASSWORD });
    expect(sandboxKey).toMatch(/^svc_test_/);
    await heading(admin, /Welcome, Morgan/);

    await admin.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks' }).click();
    await heading(admin, 'Webhooks');
    await admin.getByRole('button', { name: 'Add endpoint' }).click();
    const add = admin.getByRole('dialog', { name: 'Add sandbox endpoint' });
    await add.getByLabel('Endpoint URL').fill(receiver.url(HOOK_PATH));
    await add.getByLabel('Description (optional)').fill('Dealer network sync');
    await add.getByRole('button', { name: 'Add endpoint' }).click();
    const created = admin.getByRole('dialog', { name: 'Endpoint added' });
    secret = await created.getByLabel('Signing secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    await created.getByRole('button', { name: 'Done' }).click();
    await heading(admin, 'Webhook endpoint');
  });

  it('starts with no dealers, and adds one: listed active with its dealer ID, dealer.added arrives signed', async () => {
    await admin.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Dealers' }).click();
    await heading(admin, 'Dealers');
    expect(admin.url()).toBe(`${t.baseUrl}/portal/sandbox/dealers`);
    await dealersTable(admin).getByText('No sandbox dealers yet.', { exact: false }).waitFor();
    await shots.screen(admin, 'empty');

    await admin.getByRole('button', { name: 'Add dealer' }).click();
    const add = admin.getByRole('dialog', { name: 'Add sandbox dealer' });
    // The form refuses an empty name before anything is sent.
    await add.getByRole('button', { name: 'Add dealer' }).click();
    await add.getByText('Enter the dealership’s name.').waitFor();
    await add.getByLabel('Dealer name').fill('Lone Star Motors');
    await add.getByLabel('License number (optional)').fill('TX-DLR-20417');
    await add.getByLabel('State (optional)').selectOption('TX');
    await shots.screen(admin, 'add-dealer');
    await add.getByRole('button', { name: 'Add dealer' }).click();
    await admin.getByText('Lone Star Motors was added.', { exact: false }).waitFor();
    expect(await add.count()).toBe(0);

    const row = dealerRow(admin, 'Lone Star Motors');
    await row.getByText('Active', { exact: true }).waitFor();
    await row.getByText('TX-DLR-20417').waitFor();
    await row.getByText('TX', { exact: true }).waitFor();
    disabledDealerId = (await row.getByLabel('Dealer ID of Lone Star Motors').textContent())!.trim();
    expect(disabledDealerId).toMatch(UUID);
    await shots.screen(admin, 'list-one-active');

    const added = await waitForDealerEvent('dealer.added', disabledDealerId);
    expect(added.attempt).toBe(1);
    expect(added.type).toBe('dealer.added');
    expect(added.data).toEqual({ dealer_id: disabledDealerId, dealer_name: 'Lone Star Motors', status: 'active' });
    // What the API says about it is what the portal showed and the event carried.
    const listed = await pageFetch(admin, 'GET', '/portal/api/dealers/sandbox/dealers');
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([
      expect.objectContaining({ id: disabledDealerId, environment: 'sandbox', name: 'Lone Star Motors', license_number: 'TX-DLR-20417', state: 'TX', status: 'active', disabled_at: null }),
    ]);
  });

  it('edits the dealer: the new name and state are listed, clearing the license number', async () => {
    await dealerRow(admin, 'Lone Star Motors').getByRole('button', { name: 'Edit Lone Star Motors' }).click();
    const edit = admin.getByRole('dialog', { name: 'Edit dealer' });
    expect(await edit.getByLabel('Dealer name').inputValue()).toBe('Lone Star Motors');
    expect(await edit.getByLabel('State (optional)').inputValue()).toBe('TX');
    await edit.getByLabel('Dealer name').fill('Lone Star Motors of Austin');
    await edit.getByLabel('License number (optional)').fill('');
    await edit.getByLabel('State (optional)').selectOption('OK');
    await shots.screen(admin, 'edit-dealer');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await admin.getByText('Lone Star Motors of Austin was updated.').waitFor();
    const row = dealerRow(admin, 'Lone Star Motors of Austin');
    await row.getByText('OK', { exact: true }).waitFor();
    expect(await row.getByText('TX-DLR-20417').count()).toBe(0);
    expect(await dealersTable(admin).getByText('Lone Star Motors', { exact: true }).count()).toBe(0);
    const listed = await pageFetch(admin, 'GET', '/portal/api/dealers/sandbox/dealers');
    expect(listed.body.data).toEqual([expect.objectContaining({ id: disabledDealerId, name: 'Lone Star Motors of Austin', license_number: null, state: 'OK', status: 'active' })]);
    await shots.screen(admin, 'list-edited');
  });

  it('adds a second dealer, then disables the first after a confirmation: Disabled badge, dealer.removed arrives signed', async () => {
    await admin.getByRole('button', { name: 'Add dealer' }).click();
    const add = admin.getByRole('dialog', { name: 'Add sandbox dealer' });
    await add.getByLabel('Dealer name').fill('Gulf Coast Auto Group');
    await add.getByRole('button', { name: 'Add dealer' }).click();
    const second = dealerRow(admin, 'Gulf Coast Auto Group');
    await second.getByText('Active', { exact: true }).waitFor();
    activeDealerId = (await second.getByLabel('Dealer ID of Gulf Coast Auto Group').textContent())!.trim();
    expect(activeDealerId).toMatch(UUID);
    const addedSecond = await waitForDealerEvent('dealer.added', activeDealerId);
    expect(addedSecond.data).toEqual({ dealer_id: activeDealerId, dealer_name: 'Gulf Coast Auto Group', status: 'active' });

    const first = dealerRow(admin, 'Lone Star Motors of Austin');
    await first.getByRole('button', { name: 'Disable Lone Star Motors of Austin' }).click();
    const confirm = admin.getByRole('dialog', { name: 'Disable this dealer?' });
    await confirm.getByText('dealer.removed').waitFor();
    await shots.screen(admin, 'disable-confirm');
    // Cancel changes nothing.
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await first.getByText('Active', { exact: true }).waitFor();
    expect(dealerEvents('dealer.removed', disabledDealerId)).toHaveLength(0);

    await first.getByRole('button', { name: 'Disable Lone Star Motors of Austin' }).click();
    await confirm.getByRole('button', { name: 'Disable dealer' }).click();
    await admin.getByText('Lone Star Motors of Austin was disabled.', { exact: false }).waitFor();
    await first.getByText('Disabled', { exact: true }).waitFor();
    await first.getByRole('button', { name: 'Re-enable Lone Star Motors of Austin' }).waitFor();
    expect(await first.getByRole('button', { name: /^Disable / }).count()).toBe(0);
    await second.getByText('Active', { exact: true }).waitFor();

    const removed = await waitForDealerEvent('dealer.removed', disabledDealerId);
    expect(removed.type).toBe('dealer.removed');
    expect(removed.data).toEqual({ dealer_id: disabledDealerId, dealer_name: 'Lone Star Motors of Austin', status: 'disabled' });
    expect(removed.id).not.toBe((await waitForDealerEvent('dealer.added', disabledDealerId)).id);
    // Payloads carry the dealer, never anyone's personal data.
    for (const r of receiver.requestsTo(HOOK_PATH)) expect(r.body).not.toContain(adminEmail);

    await admin.getByLabel('Status').selectOption('disabled');
    await expect.poll(() => dealersTable(admin).getByRole('row').count()).toBe(2); // header + the disabled one
    expect(admin.url()).toBe(`${t.baseUrl}/portal/sandbox/dealers?status=disabled`);
    await shots.screen(admin, 'list-filter-disabled');
    await admin.getByLabel('Status').selectOption('all');
    await shots.screen(admin, 'list-one-disabled');
  });

  it('re-enabling is an add again (dealer.added); disabling once more leaves it refused', async () => {
    const first = dealerRow(admin, 'Lone Star Motors of Austin');
    await first.getByRole('button', { name: 'Re-enable Lone Star Motors of Austin' }).click();
    await admin.getByText('Lone Star Motors of Austin is active again.', { exact: false }).waitFor();
    await first.getByText('Active', { exact: true }).waitFor();
    const readded = await waitForDealerEvent('dealer.added', disabledDealerId, 2);
    expect(readded.data).toEqual({ dealer_id: disabledDealerId, dealer_name: 'Lone Star Motors of Austin', status: 'active' });

    await first.getByRole('button', { name: 'Disable Lone Star Motors of Austin' }).click();
    await admin.getByRole('dialog', { name: 'Disable this dealer?' }).getByRole('button', { name: 'Disable dealer' }).click();
    await first.getByText('Disabled', { exact: true }).waitFor();
    await waitForDealerEvent('dealer.removed', disabledDealerId, 2);
  });

  it('keeps dealers per environment: live has none of the sandbox dealers', async () => {
    await admin.getByRole('navigation', { name: 'Environment' }).getByRole('link', { name: 'Live' }).click();
    await admin.getByText('Live environment.').waitFor();
    expect(admin.url()).toBe(`${t.baseUrl}/portal/live/dealers`);
    await dealersTable(admin).getByText('No live dealers yet.', { exact: false }).waitFor();
    await shots.screen(admin, 'live-empty');
    expect((await pageFetch(admin, 'PATCH', `/portal/api/dealers/live/dealers/${activeDealerId}`, { expected_version: 1, name: 'Moved' })).status).toBe(404);
    await admin.getByRole('navigation', { name: 'Environment' }).getByRole('link', { name: 'Sandbox' }).click();
    await dealerRow(admin, 'Gulf Coast Auto Group').waitFor();
  });

  it('a viewer sees the dealers and their status but no Add, Edit, Disable or Re-enable; the API refuses with 403', async () => {
    const invited = await pageFetch(admin, 'POST', '/portal/api/invitations', { email: 'vic.viewer@prairie-auto-credit.example.com', role: 'viewer' });
    expect(invited.status).toBe(201);
    const viewer = await pages.open(TABLET);
    await acceptInvitationInPortal(viewer, String(invited.body.invite_url), { name: 'Vic Viewer', password: PASSWORD });
    await viewer.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Dealers' }).click();
    await heading(viewer, 'Dealers');
    await viewer.getByText('Your role can view dealers but not add, edit, disable or re-enable them.', { exact: false }).waitFor();
    await dealerRow(viewer, 'Gulf Coast Auto Group').getByText('Active', { exact: true }).waitFor();
    await dealerRow(viewer, 'Lone Star Motors of Austin').getByText('Disabled', { exact: true }).waitFor();
    for (const name of ['Add dealer', /^Edit /, /^Disable /, /^Re-enable /]) expect(await viewer.getByRole('button', { name }).count(), String(name)).toBe(0);
    await shots.screen(viewer, 'viewer-tablet');

    const refused = await pageFetch(viewer, 'POST', `/portal/api/dealers/sandbox/dealers/${activeDealerId}/disable`);
    expect(refused).toMatchObject({ status: 403, body: { error: 'forbidden' } });
    expect((await pageFetch(viewer, 'POST', '/portal/api/dealers/sandbox/dealers', { name: 'Sneaky Motors' })).status).toBe(403);
    expect((await pageFetch(viewer, 'PATCH', `/portal/api/dealers/sandbox/dealers/${activeDealerId}`, { expected_version: 1, name: 'Sneaky Motors' })).status).toBe(403);
    const listed = await pageFetch(admin, 'GET', '/portal/api/dealers/sandbox/dealers');
    expect((listed.body.data as Array<{ id: string; status: string }>).find((d) => d.id === activeDealerId)?.status).toBe('active');
  });

  it('an indirect auto loan naming the disabled dealer is 422; naming the active dealer gets a decision', async () => {
    const consumers = await pageFetch(admin, 'GET', '/portal/api/sandbox/consumers?seeded=true');
    const soft = (consumers.body.data as Array<{ id: string; tier: string }>).find((c) => c.tier === 'soft')!;
    const application = (dealerId: string) => ({
      consumer: { consumer_id: soft.id },
      vehicle: { vin: vinWithCheckDigit('1HGCM8260NA004352'), year: 2022, make: 'Honda', model: 'Accord', mileage: 18_500, condition: 'used', value: '24000.00' },
      loan: { amount: '18000.00', down_payment: '4000.00', trade_in_value: '2000.00', term_months: 60, currency: 'USD' },
      channel: 'indirect',
      dealer: { dealer_id: dealerId, markup_rate_pct: '1.00' },
    });
    const post = (body: unknown) =>
      fetch(`${t.baseUrl}/v1/decisions/auto-loan`, { method: 'POST', headers: { authorization: `Bearer ${sandboxKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

    const refused = await post(application(disabledDealerId));
    expect(refused.status).toBe(422);
    const error = (await refused.json()) as Record<string, string>;
    expect(Object.keys(error).sort()).toEqual(['error', 'message', 'request_id']);
    expect(error.error).toBe('unprocessable_entity');
    expect(error.message).toMatch(/dealer/i);

    const decided = await post(application(activeDealerId));
    expect(decided.status).toBe(200);
    const decision = (await decided.json()) as Record<string, unknown>;
    expect(decision.decision_id).toMatch(UUID);
    expect(['complete', 'needs_consumer_action']).toContain(decision.status);
    expect(decision.polling_url).toBe(`/v1/decisions/auto-loan/${String(decision.decision_id)}`);
  });
});
