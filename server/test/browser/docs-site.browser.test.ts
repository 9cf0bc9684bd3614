/**
 * The documentation site in headless Chromium against the real service on a loopback port: a
 * reader opens /docs, moves through the sidebar, searches, follows a link between pages, copies a
 * sample, and uses the API reference (operations rendered from /v1/openapi.json, one "Try it out"
 * with a sandbox key answered 200). Every request the pages make must stay on the service's own
 * origin (no CDN), and the browser must report no Content-Security-Policy violation. Screens are
 * kept under test-artifacts/screenshots/docs-*.png.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserPages, chromiumAvailable, heading, launchChromium, Screenshots, startListeningTestApp, type ListeningTestApp } from '../support/browser.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';

const LAPTOP = { width: 1366, height: 900 } as const;
const PHONE = { width: 390, height: 844 } as const;

describe.skipIf(!chromiumAvailable())('documentation site in headless Chromium', () => {
  let db: TestDatabase;
  let t: ListeningTestApp;
  let browser: Browser;
  let pages: BrowserPages;
  const shots = new Screenshots('docs');
  const foreignRequests: string[] = [];
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    [db, browser] = await Promise.all([createTestDatabase('sqlite'), launchChromium()]);
    pages = new BrowserPages(browser);
    t = await startListeningTestApp(db);
  });
  afterAll(async () => {
    await pages?.closeAll();
    await browser?.close();
    await t?.close();
    await db?.drop();
    if (shots.files.length > 0) console.info(`docs screenshots:\n  ${shots.files.join('\n  ')}`);
  });

  async function newPage(viewport: { width: number; height: number }, options: { colorScheme?: 'light' | 'dark' } = {}): Promise<Page> {
    const page = await pages.open(viewport, { colorScheme: options.colorScheme ?? 'light' });
    const origin = new URL(t.baseUrl).origin;
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.protocol !== 'data:' && url.origin !== origin) foreignRequests.push(request.url());
    });
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(String(error)));
    return page;
  }

  /**
   * On the API reference, swagger-ui's own markup (its hidden title heading, icon buttons named by
   * aria-label) is not ours to check; our part of that page must still have exactly one h1.
   */
  const swaggerUiMarkup = (problem: string) => problem === 'a button has no text' || /^\d+ h1 elements$/.test(problem);

  it('opens the home page and moves through the sidebar', async () => {
    const page = await newPage(LAPTOP);
    await page.goto(`${t.baseUrl}/docs`);
    await heading(page, 'Credit Decisioning Service documentation');
    await shots.screen(page, 'home');
    const sidebar = page.getByRole('navigation', { name: 'Documentation' });
    await sidebar.getByRole('link', { name: 'Quickstart' }).click();
    await heading(page, 'Quickstart');
    expect(page.url()).toBe(`${t.baseUrl}/docs/quickstart`);
    expect(await sidebar.getByRole('link', { name: 'Quickstart' }).getAttribute('aria-current')).toBe('page');
    await shots.screen(page, 'quickstart');
    await sidebar.getByRole('link', { name: 'Errors' }).click();
    await heading(page, 'Errors');
    expect(await page.locator('table').first().innerText()).toContain('idempotency_conflict');
    await shots.screen(page, 'errors');
    await sidebar.getByRole('link', { name: /Webhook delivery queued/ }).click();
    await heading(page, /ADR 0005/);
  });

  it('searches, opens a result at its section, and follows a link between pages to its anchor', async () => {
    const page = await newPage(LAPTOP);
    await page.goto(`${t.baseUrl}/docs/quickstart`);
    const search = page.getByLabel('Search the documentation');
    await search.fill('rotating signing secret');
    const results = page.getByRole('listbox', { name: 'Search results' });
    await results.getByRole('option').first().waitFor();
    expect(await results.getByRole('option').first().innerText()).toContain('Rotating the signing secret');
    await shots.take(page, 'search');
    await search.press('Enter');
    await page.waitForURL(`${t.baseUrl}/docs/webhooks#rotating-the-signing-secret`);
    await heading(page, 'Webhooks');

    await search.fill('zzzz-nothing-like-this');
    await results.getByText('No results').waitFor();

    // Internal link written in markdown as `quickstart.md#2-get-a-sandbox-key`.
    await page.keyboard.press('Escape');
    await page.locator('article').getByRole('link', { name: 'quickstart' }).first().click();
    await page.waitForURL(/\/docs\/quickstart#2-get-a-sandbox-key$/);
    expect(await page.locator('[id="2-get-a-sandbox-key"]').isVisible()).toBe(true);
  });

  it('copies a code sample with its Copy button', async () => {
    const page = await newPage(LAPTOP);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.baseUrl });
    await page.goto(`${t.baseUrl}/docs/quickstart`);
    const block = page.locator('.code-block[data-sample="run"]').first();
    expect(await block.getByText('tested').isVisible()).toBe(true);
    await block.getByRole('button', { name: 'Copy' }).click();
    await block.getByRole('button', { name: 'Copied' }).waitFor();
    const copied = await page.evaluate<string>('navigator.clipboard.readText()');
    expect(copied).toContain('npm run --silent cds -- tenants create --name Acme --json > tenant.json');
  });

  it('renders the API reference from the OpenAPI document and tries a request with a sandbox key', async () => {
    const page = await newPage(LAPTOP);
    await page.goto(`${t.baseUrl}/docs/api`);
    await heading(page, 'API reference');
    const operation = page.locator('.opblock-summary-path', { hasText: '/v1/decisions/bnpl/{decision_id}' }).first();
    await operation.waitFor();
    expect(await page.locator('.opblock-summary-path').allInnerTexts()).toEqual(
      expect.arrayContaining(['/v1/decisions/bnpl', '/v1/decisions/bnpl/{decision_id}', '/v1/sandbox/decisions/{decision_id}/verification']),
    );
    await shots.screen(page, 'api-reference', { ignore: swaggerUiMarkup });
    expect(await page.locator('article.doc > h1').count()).toBe(1);

    // A real decision to look up, made with the tenant's sandbox key.
    const soft = t.tenant.sandbox.consumers.find((c) => c.tier === 'soft')!;
    const created = await fetch(`${t.baseUrl}/v1/decisions/bnpl`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.tenant.sandbox.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ consumer: { consumer_id: soft.consumerId }, transaction: { amount: '149.97', currency: 'USD', merchant_name: 'Acme', merchant_category: 'furniture' } }),
    });
    const { decision_id: decisionId } = (await created.json()) as { decision_id: string };

    await page.getByRole('button', { name: /Authorize/ }).first().click();
    const dialog = page.locator('.dialog-ux');
    await dialog.getByLabel('auth-bearer-value').fill(t.tenant.sandbox.apiKey);
    await dialog.getByRole('button', { name: 'Apply credentials' }).click();
    await dialog.getByRole('button', { name: 'Remove authorization' }).waitFor(); // swagger-ui's sign that the key is set
    await dialog.locator('button.btn-done').click();

    await operation.click();
    const block = page.locator('.opblock.is-open');
    await block.getByRole('button', { name: 'Try it out' }).click();
    await block.locator('input[placeholder="decision_id"]').fill(decisionId);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url() === `${t.baseUrl}/v1/decisions/bnpl/${decisionId}`),
      block.getByRole('button', { name: 'Execute' }).click(),
    ]);
    expect(response.status()).toBe(200);
    expect(response.request().headers().authorization).toBe(`Bearer ${t.tenant.sandbox.apiKey}`);
    const status = block.locator('.live-responses-table tbody .response-col_status').first();
    await status.waitFor();
    expect((await status.innerText()).trim()).toBe('200');
    expect(await block.locator('.live-responses-table').innerText()).toContain(decisionId);
    await shots.take(page, 'api-try-it-out');
  });

  it('fits a phone: the menu opens the navigation; dark scheme; an unknown page is a 404 in the layout', async () => {
    const page = await newPage(PHONE, { colorScheme: 'dark' });
    await page.goto(`${t.baseUrl}/docs/webhooks`);
    await heading(page, 'Webhooks');
    await shots.screen(page, 'webhooks-phone-dark');
    const menu = page.getByRole('button', { name: 'Menu' });
    await menu.click();
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    const sandbox = page.getByRole('navigation', { name: 'Documentation' }).getByRole('link', { name: 'Sandbox' });
    await sandbox.waitFor({ state: 'visible' });
    await shots.take(page, 'menu-phone-dark');
    await sandbox.click();
    await heading(page, 'Sandbox');

    const response = await page.goto(`${t.baseUrl}/docs/no-such-page`);
    expect(response?.status()).toBe(404);
    await heading(page, 'Page not found');
    await shots.screen(page, 'not-found-phone-dark');
  });

  it('made no request to another origin and hit no Content-Security-Policy violation', () => {
    expect(foreignRequests).toEqual([]);
    expect(consoleErrors.filter((e) => /Content Security Policy|Refused to/i.test(e))).toEqual([]);
  });
});
