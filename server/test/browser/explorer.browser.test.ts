/**
 * The decision explorer and the dashboard in headless Chromium against the real service on a
 * loopback port, with a real HTTPS webhook receiver (one endpoint answering 200, one 500) so the
 * decisions have deliveries to show. A risk analyst signs up, the lender's backend makes decisions
 * through /v1, and the analyst searches and filters them, opens one (events, deliveries), downloads
 * the CSV and reads it, then opens the dashboard, whose numbers are compared with counts computed
 * from the API's own answers. Every screen is kept under test-artifacts/screenshots/explorer-*.png.
 */
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserPages, chromiumAvailable, ensurePortalBuilt, heading, launchChromium, type ListeningTestApp, pageFetch, Screenshots, signUpInPortal, startListeningTestApp } from '../support/browser.js';
import { parseCsv } from '../support/csv.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const LAPTOP = { width: 1366, height: 900 } as const;
const TABLET = { width: 820, height: 1180 } as const;
const PASSWORD = 'a long sandbox passphrase';

const nearestRank = (sorted: number[], p: number) => sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1]!;

describe.skipIf(!chromiumAvailable())('decision explorer and dashboard in headless Chromium', () => {
  let db: TestDatabase;
  let t: ListeningTestApp;
  let receiver: WebhookReceiver;
  let browser: Browser;
  let pages: BrowserPages;
  const shots = new Screenshots('explorer');
  let analyst: Page;
  const consoleProblems: string[] = [];
  let apiKey = '';
  /** What /v1 answered for each decision, in creation order. */
  const answers: Array<{ decision_id: string; status: string; outcome: string | null }> = [];
  let softConsumer = '';

  beforeAll(async () => {
    ensurePortalBuilt();
    [receiver, db, browser] = await Promise.all([startWebhookReceiver(), createTestDatabase('sqlite'), launchChromium()]);
    pages = new BrowserPages(browser);
    receiver.setMode('/down', 500);
    t = await startListeningTestApp(db, {
      env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' },
      overrides: { webhookDelivery: { ca: receiver.ca, timeoutMs: 2_000, leaseMs: 30_000, pollIntervalMs: 100, schedule: { delaysMs: [] } } },
    });
    t.ctx.webhookDelivery.start();
    analyst = await newPage(LAPTOP);
  });
  afterAll(async () => {
    await pages?.closeAll();
    await browser?.close();
    await t?.close();
    await db?.drop();
    await receiver?.stop();
    if (shots.files.length > 0) console.info(`explorer screenshots:\n  ${shots.files.join('\n  ')}`);
  });

  async function newPage(viewport: { width: number; height: number }): Promise<Page> {
    const page = await pages.open(viewport, { acceptDownloads: true });
    page.on('console', (m) => {
      if (m.type() === 'error') consoleProblems.push(m.text());
    });
    page.on('pageerror', (e) => consoleProblems.push(e.message));
    return page;
  }

  const resultRows = (page: Page) => page.getByRole('table', { name: 'Decisions, newest first' }).locator('tbody tr');

  async function decide(body: unknown): Promise<void> {
    const r = await fetch(`${t.baseUrl}/v1/decisions/bnpl`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(r.status).toBe(200);
    answers.push((await r.json()) as (typeof answers)[number]);
  }

  /** Until every delivery has finished (the worker polls every 100 ms; one attempt each here). */
  async function deliveriesFinished(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const row = await t.ctx.storage.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('state', '=', 'pending').executeTakeFirstOrThrow();
      if (Number(row.n) === 0) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('deliveries did not finish');
  }

  it('signs up and makes decisions through /v1 that reach two webhook endpoints', async () => {
    apiKey = await signUpInPortal(analyst, t.baseUrl, { company: 'Fabrikam Finance', name: 'Rowan Risk', email: 'rowan.risk@fabrikam.example.com', password: PASSWORD });

    for (const path of ['/hooks', '/down']) expect((await pageFetch(analyst, 'POST', '/portal/api/webhooks/sandbox/endpoints', { url: receiver.url(path) })).status).toBe(201);
    const seeded = (await pageFetch(analyst, 'GET', '/portal/api/sandbox/consumers?seeded=true')).body.data as Array<{ id: string }>;
    softConsumer = seeded[0]!.id;
    const txn = (amount: string) => ({ amount, currency: 'USD', merchant_name: 'Fabrikam Bikes', merchant_category: 'sporting_goods' });
    const person = (first: string, ssn: string) => ({ first_name: first, last_name: 'Shopper', email: 'shopper@example.com', dob: '1990-01-01', ssn_last4: ssn, address: { line1: '2 Side St', city: 'Boise', state: 'ID', zip: '83702' } });
    for (const amount of ['80.00', '120.00', '240.00']) await decide({ consumer: { consumer_id: softConsumer }, transaction: txn(amount) });
    await decide({ consumer: person('Dale', '0000'), transaction: txn('300.00') });
    await decide({ consumer: person('Remy', '1111'), transaction: txn('300.00') });
    await decide({ consumer: { consumer_id: seeded[1]!.id }, transaction: txn('900.00') });
    expect(answers.map((a) => a.outcome ?? a.status)).toEqual(['approved', 'approved', 'approved', 'declined', 'referred', 'needs_consumer_action']);
    await deliveriesFinished();
    expect(receiver.requestsTo('/hooks').length).toBeGreaterThan(0);
  });

  it('searches and filters the decisions, with the filters in the address', async () => {
    await analyst.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Decisions' }).click();
    await heading(analyst, 'Decisions');
    await expect.poll(() => resultRows(analyst).count()).toBe(6);
    await shots.screen(analyst, 'list');

    await analyst.getByLabel('Outcome').selectOption('declined');
    await analyst.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => resultRows(analyst).count()).toBe(1);
    expect(analyst.url()).toContain('outcome=declined');
    await resultRows(analyst).first().getByText('Declined').waitFor();
    await shots.screen(analyst, 'filtered-declined');

    await analyst.getByLabel('Outcome').selectOption('');
    await analyst.getByLabel('Consumer ID', { exact: true }).fill(softConsumer);
    await analyst.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => resultRows(analyst).count()).toBe(3);
    expect(analyst.url()).toContain(`consumer_id=${softConsumer}`);

    await analyst.getByLabel('Consumer ID', { exact: true }).fill('');
    await analyst.getByLabel('Outcome').selectOption('pending');
    await analyst.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => resultRows(analyst).count()).toBe(1);
    await resultRows(analyst).first().getByText('Pending').waitFor();

    // A bookmarked search opens as it was.
    await analyst.goto(`${t.baseUrl}/portal/sandbox/decisions?outcome=approved`);
    await heading(analyst, 'Decisions');
    await expect.poll(() => resultRows(analyst).count()).toBe(3);
    expect(await analyst.getByLabel('Outcome').inputValue()).toBe('approved');
    await analyst.getByRole('button', { name: 'Clear' }).click();
    await expect.poll(() => resultRows(analyst).count()).toBe(6);
  });

  it('opens a decision: reasons, partial scores, versions, its events and webhook deliveries', async () => {
    const declined = answers[3]!.decision_id;
    await analyst.getByRole('link', { name: `Decision ${declined}` }).click();
    await heading(analyst, 'Decision');
    await analyst.getByText(declined, { exact: true }).first().waitFor();
    await analyst.getByRole('list', { name: 'Reasons, most important first' }).getByText('AA-21').waitFor();
    const partial = analyst.getByRole('table', { name: /Partial scores/ });
    expect(await partial.locator('tbody tr').count()).toBeGreaterThan(1);
    // The FCRA disclosure: the score's own key factors, a list apart from the ECOA reasons (whose
    // first is the bankruptcy knock-out): its first is the reason of the partial score furthest
    // below its maximum.
    const keyFactors = analyst.getByRole('list', { name: /Key factors that adversely affected the credit score/ });
    await keyFactors.locator('li').first().waitFor();
    const factorTexts = await keyFactors.locator('li').allInnerTexts();
    const reasonTexts = await analyst.getByRole('list', { name: 'Reasons, most important first' }).locator('li').allInnerTexts();
    expect(factorTexts.length).toBeLessThanOrEqual(5);
    expect(reasonTexts[0]).toMatch(/^AA-21/);
    expect(factorTexts).not.toEqual(reasonTexts);
    // (Characteristics the file had no data for are no key factors.)
    const gaps = await partial.locator('tbody tr').evaluateAll((rows) => rows.filter((r) => r.children[1]!.textContent !== 'missing').map((r) => [Number(r.children[5]!.textContent), r.children[6]!.textContent!.slice(0, 5)] as const));
    const furthest = gaps.reduce((best, g) => (g[0] > best[0] ? g : best));
    expect(factorTexts[0]!.slice(0, 5)).toBe(furthest[1]);
    await analyst.getByText('300 to 850').waitFor();
    await analyst.getByText(/^engine-.+\+.+\+.+$/).waitFor();
    const events = analyst.getByRole('table', { name: /Events this decision caused/ });
    // A new applicant whose identity matched their credit file (then declined on it): kyc_completed too.
    expect(await events.locator('tbody tr td:nth-child(2)').allInnerTexts()).toEqual(['application.created', 'decision.created', 'application.kyc_completed', 'score.completed', 'decision.finalized']);
    // Both endpoints take every event: five events, two endpoints, ten deliveries.
    const deliveries = analyst.getByTestId('decision-delivery');
    await expect.poll(() => deliveries.count()).toBe(10);
    expect(await deliveries.filter({ hasText: '/hooks' }).filter({ hasText: 'Delivered' }).count()).toBe(5);
    expect(await deliveries.filter({ hasText: '/down' }).filter({ hasText: 'Failed' }).count()).toBe(5);
    expect(await deliveries.filter({ hasText: '/down' }).first().innerText()).toMatch(/Attempt 1: 500/);
    // No personal data of the applicant on the page.
    expect(await analyst.locator('main').innerText()).not.toMatch(/Dale|Shopper|shopper@example\.com|1990-01-01|83702/);
    await analyst.getByText('Inputs', { exact: true }).click();
    await shots.screen(analyst, 'detail');
  });

  it('downloads the filtered list as CSV with every row the API lists', async () => {
    await analyst.getByRole('link', { name: 'Decisions' }).first().click();
    await heading(analyst, 'Decisions');
    await expect.poll(() => resultRows(analyst).count()).toBe(6);
    const [download] = await Promise.all([analyst.waitForEvent('download'), analyst.getByRole('link', { name: 'Download CSV' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^decisions-sandbox-\d{4}-\d{2}-\d{2}\.csv$/);
    const rows = parseCsv(readFileSync((await download.path())!, 'utf8'));
    const [header, ...data] = rows;
    const listed = (await pageFetch(analyst, 'GET', '/portal/api/decisions/sandbox?limit=100')).body.data as Array<{ decision_id: string; outcome: string; requested_amount: string }>;
    expect(data.map((r) => r[header!.indexOf('decision_id')])).toEqual(listed.map((d) => d.decision_id));
    expect(data.map((r) => r[header!.indexOf('outcome')])).toEqual(listed.map((d) => d.outcome));
    expect(data.map((r) => r[header!.indexOf('requested_amount')])).toEqual(['900.00', '300.00', '300.00', '240.00', '120.00', '80.00']);

    // The filtered download holds only what the filter shows.
    await analyst.getByLabel('Outcome').selectOption('approved');
    await analyst.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => resultRows(analyst).count()).toBe(3);
    const [filtered] = await Promise.all([analyst.waitForEvent('download'), analyst.getByRole('link', { name: 'Download CSV' }).click()]);
    const filteredRows = parseCsv(readFileSync((await filtered.path())!, 'utf8'));
    expect(filteredRows.slice(1).map((r) => r[header!.indexOf('outcome')])).toEqual(['approved', 'approved', 'approved']);
  });

  it('dashboard: charts for the period and numbers equal to counts from the API', async () => {
    const scripts: string[] = [];
    analyst.on('request', (r) => {
      if (r.url().endsWith('.js')) scripts.push(r.url());
    });
    await analyst.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Dashboard' }).click();
    await heading(analyst, 'Dashboard');
    const summary = analyst.getByTestId('dashboard-summary');
    await summary.waitFor();
    // The chart library came in its own file, only now.
    expect(scripts.some((u) => /dashboard-screen-[\w-]+\.js$/.test(u))).toBe(true);
    expect(await analyst.locator('svg.recharts-surface').count()).toBeGreaterThanOrEqual(4);

    const metric = async (key: string) => (await summary.locator(`tr[data-metric="${key}"] td`).innerText()).trim();
    const count = (o: string) => String(answers.filter((a) => (a.outcome ?? 'pending') === o).length);
    expect(await metric('decisions')).toBe(String(answers.length));
    for (const o of ['approved', 'declined', 'referred', 'pending']) expect(await metric(o), o).toBe(count(o));
    const decided = answers.filter((a) => a.outcome !== null).length;
    expect(await metric('approval-rate')).toBe(`${((Number(count('approved')) / decided) * 100).toFixed(1)}%`);

    // Latency: nearest rank over the latencies the explorer API lists for the same decisions.
    const listed = (await pageFetch(analyst, 'GET', '/portal/api/decisions/sandbox?limit=100')).body.data as Array<{ latency_ms: number | null }>;
    const latencies = listed.map((d) => d.latency_ms).filter((l): l is number => l !== null).sort((a, b) => a - b);
    expect(latencies).toHaveLength(5);
    expect(await metric('latency-p50')).toBe(`${nearestRank(latencies, 50)} ms`);
    expect(await metric('latency-p99')).toBe(`${nearestRank(latencies, 99)} ms`);
    expect(await metric('pending-verifications')).toBe('1');
    // The table behind "Show as a table" (closed: read its text, not its rendering).
    expect(await analyst.getByTestId('pending-by-age').locator('tr[data-bucket="under_1h"] td').nth(1).textContent()).toBe('1');

    // Webhooks: per endpoint, from each endpoint's own delivery history.
    const endpoints = (await pageFetch(analyst, 'GET', '/portal/api/webhooks/sandbox/endpoints')).body.data as Array<{ id: string; url: string }>;
    for (const e of endpoints) {
      const history = (await pageFetch(analyst, 'GET', `/portal/api/webhooks/sandbox/endpoints/${e.id}/deliveries?page_size=100`)).body.data as Array<{ state: string }>;
      const row = analyst.getByTestId('webhook-success').locator(`tr[data-endpoint="${e.id}"] td`);
      const delivered = history.filter((h) => h.state === 'delivered').length;
      const failed = history.filter((h) => h.state === 'failed').length;
      expect(await row.allInnerTexts()).toEqual([e.url, String(delivered), String(failed), '0', `${((delivered / (delivered + failed)) * 100).toFixed(1)}%`]);
    }
    await shots.screen(analyst, 'dashboard');

    await analyst.getByLabel('Period', { exact: true }).selectOption('7d');
    await expect.poll(() => analyst.url()).toContain('period=7d');
    await analyst.getByText(/^From .* to .*\.$/).waitFor();
    expect(await metric('decisions')).toBe(String(answers.length));

    // Tablet width: the same numbers, nothing wider than the screen.
    const tablet = await analyst.context().newPage();
    await tablet.setViewportSize(TABLET);
    await tablet.goto(`${t.baseUrl}/portal/sandbox/dashboard`);
    await heading(tablet, 'Dashboard');
    await tablet.getByTestId('dashboard-summary').waitFor();
    await shots.screen(tablet, 'dashboard-tablet');
    await tablet.close();
    expect(consoleProblems).toEqual([]);
  });
});
