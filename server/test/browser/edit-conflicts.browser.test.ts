/**
 * Two people editing the same webhook endpoint and the same dealer, in headless Chromium against
 * the real service on a loopback port (docs/portal.md, "Two people editing at once"). An admin opens
 * Edit; meanwhile a developer of the same team, in a browser of their own, opens Edit on the same
 * thing and saves. The admin's save is then refused: the dialog says who saved first (the
 * service's 409 message), nothing of the admin's is written, and Save waits for a reload.
 * **Reload** fills the form with the developer's values (and the page behind shows them); the
 * admin's change made again on top of them is saved. Screens:
 * test-artifacts/screenshots/edit-conflicts-*.png.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptInvitationInPortal, BrowserPages, chromiumAvailable, ensurePortalBuilt, heading, launchChromium, type ListeningTestApp, pageFetch, Screenshots, signUpInPortal, startListeningTestApp } from '../support/browser.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';

const LAPTOP = { width: 1366, height: 900 } as const;
const PASSWORD = 'a long edit-conflict passphrase';

describe.skipIf(!chromiumAvailable())('two people editing the same endpoint or dealer (headless Chromium)', () => {
  let db: TestDatabase;
  let t: ListeningTestApp;
  let browser: Browser;
  let pages: BrowserPages;
  const shots = new Screenshots('edit-conflicts');
  let admin: Page;
  let developer: Page;
  let endpointId = '';
  let dealerId = '';

  beforeAll(async () => {
    ensurePortalBuilt();
    [db, browser] = await Promise.all([createTestDatabase('sqlite'), launchChromium()]);
    pages = new BrowserPages(browser);
    t = await startListeningTestApp(db, { env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' } });
    [admin, developer] = await Promise.all([pages.open(LAPTOP), pages.open(LAPTOP)]);
    await signUpInPortal(admin, t.baseUrl, { company: 'Twin Rivers Credit', name: 'Avery Admin', email: 'avery.admin@twin-rivers-credit.example.com', password: PASSWORD });
    const invited = await pageFetch(admin, 'POST', '/portal/api/invitations', { email: 'devon.dev@twin-rivers-credit.example.com', role: 'developer' });
    expect(invited.status).toBe(201);
    await acceptInvitationInPortal(developer, String(invited.body.invite_url), { name: 'Devon Developer', password: PASSWORD });
    // What both will edit, made through the API the web app uses.
    const endpoint = await pageFetch(admin, 'POST', '/portal/api/webhooks/sandbox/endpoints', { url: 'https://hooks.twin-rivers-credit.example.com/cds', description: 'Loan servicing', events: '*' });
    expect(endpoint.status).toBe(201);
    endpointId = (endpoint.body.endpoint as { id: string }).id;
    const dealer = await pageFetch(admin, 'POST', '/portal/api/dealers/sandbox/dealers', { name: 'Riverbend Motors', license_number: 'IA-D-3301', state: 'IA' });
    expect(dealer.status).toBe(201);
    dealerId = dealer.body.id as string;
  });
  afterAll(async () => {
    await pages?.closeAll();
    await browser?.close();
    await t?.close();
    await db?.drop();
    if (shots.files.length > 0) console.info(`edit-conflict screenshots:\n  ${shots.files.join('\n  ')}`);
  });

  async function openEndpoint(page: Page): Promise<void> {
    await page.goto(`${t.baseUrl}/portal/sandbox/webhooks/${endpointId}`);
    await heading(page, 'Webhook endpoint');
  }

  it('endpoint: the admin’s save after the developer’s is refused with the reason; Reload brings the developer’s values, and the change made again is saved', async () => {
    await Promise.all([openEndpoint(admin), openEndpoint(developer)]);
    // Both open Edit on version 1.
    await admin.getByRole('button', { name: 'Edit', exact: true }).click();
    const adminEdit = admin.getByRole('dialog', { name: 'Edit endpoint' });
    expect(await adminEdit.getByLabel('Description (optional)').inputValue()).toBe('Loan servicing');
    await developer.getByRole('button', { name: 'Edit', exact: true }).click();
    const devEdit = developer.getByRole('dialog', { name: 'Edit endpoint' });

    // The developer saves first: a new URL and description.
    await devEdit.getByLabel('Endpoint URL').fill('https://hooks.twin-rivers-credit.example.com/cds-v2');
    await devEdit.getByLabel('Description (optional)').fill('Loan servicing (v2 receiver)');
    await devEdit.getByRole('button', { name: 'Save changes' }).click();
    await developer.getByText('Endpoint updated.', { exact: false }).waitFor();

    // The admin, still on what it loaded, saves its own description: refused, and says why.
    await adminEdit.getByLabel('Description (optional)').fill('Servicing and collections');
    await adminEdit.getByRole('button', { name: 'Save changes' }).click();
    const conflict = adminEdit.getByRole('status').filter({ hasText: 'Someone else saved this endpoint first' });
    await conflict.getByText(/^This webhook endpoint was changed by Devon Developer at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z since you loaded it \(version 1; it is now at 2\); reload to see its current settings, then make your change again\.$/).waitFor();
    expect(await adminEdit.getByRole('button', { name: 'Save changes' }).isDisabled()).toBe(true);
    await shots.screen(admin, 'endpoint-conflict');
    // Nothing of the admin's was written.
    expect((await pageFetch(admin, 'GET', `/portal/api/webhooks/sandbox/endpoints/${endpointId}`)).body.endpoint).toMatchObject({
      url: 'https://hooks.twin-rivers-credit.example.com/cds-v2',
      description: 'Loan servicing (v2 receiver)',
      version: 2,
    });

    // Reload: the form shows the developer's values, the notice is gone, the page behind has them too.
    await conflict.getByRole('button', { name: 'Reload endpoint' }).click();
    await expect.poll(() => adminEdit.getByLabel('Description (optional)').inputValue()).toBe('Loan servicing (v2 receiver)');
    expect(await adminEdit.getByLabel('Endpoint URL').inputValue()).toBe('https://hooks.twin-rivers-credit.example.com/cds-v2');
    expect(await adminEdit.getByText('Someone else saved this endpoint first').count()).toBe(0);
    await admin.locator('.detail-list dd').filter({ hasText: /^Loan servicing \(v2 receiver\)$/ }).waitFor();
    await shots.screen(admin, 'endpoint-reloaded');

    // The admin's change, made again on top of the developer's, is saved.
    await adminEdit.getByLabel('Description (optional)').fill('Servicing and collections');
    await adminEdit.getByRole('button', { name: 'Save changes' }).click();
    await admin.getByText('Endpoint updated.', { exact: false }).waitFor();
    expect((await pageFetch(admin, 'GET', `/portal/api/webhooks/sandbox/endpoints/${endpointId}`)).body.endpoint).toMatchObject({
      url: 'https://hooks.twin-rivers-credit.example.com/cds-v2',
      description: 'Servicing and collections',
      events: ['*'],
      version: 3,
    });
  });

  it('dealer: the same, from the Dealers list', async () => {
    const dealersPage = async (page: Page) => {
      await page.goto(`${t.baseUrl}/portal/sandbox/dealers`);
      await heading(page, 'Dealers');
    };
    await Promise.all([dealersPage(admin), dealersPage(developer)]);
    const row = (page: Page, name: string) => page.getByRole('table', { name: 'Dealers' }).getByRole('row').filter({ has: page.getByText(name, { exact: true }) });

    await row(admin, 'Riverbend Motors').getByRole('button', { name: 'Edit Riverbend Motors' }).click();
    const adminEdit = admin.getByRole('dialog', { name: 'Edit dealer' });
    await row(developer, 'Riverbend Motors').getByRole('button', { name: 'Edit Riverbend Motors' }).click();
    const devEdit = developer.getByRole('dialog', { name: 'Edit dealer' });

    await devEdit.getByLabel('Dealer name').fill('Riverbend Motors of Ames');
    await devEdit.getByLabel('State (optional)').selectOption('NE');
    await devEdit.getByRole('button', { name: 'Save changes' }).click();
    await developer.getByText('Riverbend Motors of Ames was updated.').waitFor();

    await adminEdit.getByLabel('License number (optional)').fill('IA-D-3302');
    await adminEdit.getByRole('button', { name: 'Save changes' }).click();
    const conflict = adminEdit.getByRole('status').filter({ hasText: 'Someone else saved this dealer first' });
    await conflict.getByText(/^This dealer was changed by Devon Developer at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z since you loaded it \(version 1; it is now at 2\); reload to see its current details, then make your change again\.$/).waitFor();
    expect(await adminEdit.getByRole('button', { name: 'Save changes' }).isDisabled()).toBe(true);
    await shots.screen(admin, 'dealer-conflict');
    expect((await pageFetch(admin, 'GET', `/portal/api/dealers/sandbox/dealers/${dealerId}`)).body).toMatchObject({ name: 'Riverbend Motors of Ames', license_number: 'IA-D-3301', state: 'NE', version: 2 });

    await conflict.getByRole('button', { name: 'Reload dealer' }).click();
    await expect.poll(() => adminEdit.getByLabel('Dealer name').inputValue()).toBe('Riverbend Motors of Ames');
    expect(await adminEdit.getByLabel('State (optional)').inputValue()).toBe('NE');
    expect(await adminEdit.getByLabel('License number (optional)').inputValue()).toBe('IA-D-3301');
    // The list behind the dialog shows the developer's edit too.
    await row(admin, 'Riverbend Motors of Ames').getByText('NE', { exact: true }).waitFor();
    await shots.screen(admin, 'dealer-reloaded');

    await adminEdit.getByLabel('License number (optional)').fill('IA-D-3302');
    await adminEdit.getByRole('button', { name: 'Save changes' }).click();
    await admin.getByText('Riverbend Motors of Ames was updated.').waitFor();
    await row(admin, 'Riverbend Motors of Ames').getByText('IA-D-3302').waitFor();
    expect((await pageFetch(admin, 'GET', `/portal/api/dealers/sandbox/dealers/${dealerId}`)).body).toMatchObject({ name: 'Riverbend Motors of Ames', license_number: 'IA-D-3302', state: 'NE', version: 3 });
  });
});
