/**
 * Credit policy in headless Chromium against the real service on a loopback port: an admin edits
 * the policy in the structured editor (validation errors first, then a valid change: grade A's
 * monthly rate from 9.99% to 11.99%), looks at the raw JDM, saves a draft, tests it against the sandbox, promotes
 * it, and the next sandbox decision made through /v1 is decided by the new version and names it.
 * Then the same for an auto-loan version (grade A's 60-month buy rate), on the auto-loan screens.
 * Every screen is kept as a full-page screenshot under test-artifacts/screenshots/credit-policy-*.png.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxProfileFor } from '../../src/modules/credit-data/sandbox-connector.js';
import { BrowserPages, chromiumAvailable, ensurePortalBuilt, heading, launchChromium, type ListeningTestApp, Screenshots, signUpInPortal, startListeningTestApp } from '../support/browser.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';

const LAPTOP = { width: 1366, height: 900 } as const;

function primeApplicant() {
  for (let i = 0; i < 5000; i++) {
    const who = { firstName: `Browser${i}`, lastName: 'Policy', dob: '1983-09-09' };
    if (sandboxProfileFor(who) === 'prime') return who;
  }
  throw new Error('no prime identity');
}

describe.skipIf(!chromiumAvailable())('credit policy in headless Chromium', () => {
  let db: TestDatabase;
  let t: ListeningTestApp;
  let browser: Browser;
  let pages: BrowserPages;
  let page: Page;
  let apiKey = '';
  let bundledApr = '';
  const shots = new Screenshots('credit-policy');
  const applicant = primeApplicant();

  beforeAll(async () => {
    ensurePortalBuilt();
    [db, browser] = await Promise.all([createTestDatabase('sqlite'), launchChromium()]);
    t = await startListeningTestApp(db, { env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' } });
    pages = new BrowserPages(browser, 15_000);
    page = await pages.open(LAPTOP);
  });
  afterAll(async () => {
    await pages?.closeAll();
    await browser?.close();
    await t?.close();
    await db?.drop();
    if (shots.files.length > 0) console.info(`credit policy screenshots:\n  ${shots.files.join('\n  ')}`);
  });

  // The overview has one section per product.
  const bnplSection = () => page.getByRole('region', { name: 'Buy now, pay later' });
  const autoSection = () => page.getByRole('region', { name: 'Auto loans' });

  /** A sandbox decision through /v1 for the same prime applicant; returns the body and the engine_version it was finalized with. */
  async function decide(amount: string): Promise<{ body: Record<string, unknown>; engineVersion: string }> {
    const r = await fetch(`${t.baseUrl}/v1/decisions/bnpl`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        consumer: { first_name: applicant.firstName, last_name: applicant.lastName, email: 'p@example.com', phone: '+14155550177', dob: applicant.dob, address: { line1: '9 Elm Street', city: 'Austin', state: 'TX', zip: '73301' } },
        transaction: { amount, currency: 'USD', merchant_name: 'Acme Outdoor', merchant_category: 'sporting_goods' },
        plan_preference: 'monthly',
      }),
    });
    expect(r.status).toBe(200);
    const body = (await r.json()) as Record<string, unknown>;
    const event = await t.ctx.storage.db.selectFrom('events').select('data_json').where('subject_id', '=', String(body.decision_id)).where('type', '=', 'decision.finalized').executeTakeFirstOrThrow();
    return { body, engineVersion: String((JSON.parse(event.data_json) as { engine_version: string }).engine_version) };
  }

  it('signs up and decides on the bundled default policy', async () => {
    apiKey = await signUpInPortal(page, t.baseUrl, { company: 'Harbor Credit', name: 'Priya Admin', email: 'priya.admin@harbor-credit.example.com', password: 'a long sandbox passphrase' });

    // 400.00 on the monthly plan (soft KYC tier, 3 months): priced at grade A's monthly rate.
    const before = await decide('400.00');
    expect(before.body).toMatchObject({ outcome: 'approved', approved_amount: '400.00', apr: expect.stringMatching(/^(9|10)\.\d\d$/) });
    bundledApr = String(before.body.apr);
    expect(before.engineVersion).toBe('engine-1.0.0+bnpl-sc-2026.11.1+bnpl-policy-2026.11.1');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Credit policy' }).click();
    await heading(page, 'Credit policy');
    await page.getByText('Bundled default').first().waitFor();
    await bnplSection().getByText('No versions yet').waitFor();
    await autoSection().getByText('auto-policy-2026.11.1').first().waitFor();
    await shots.screen(page, 'overview-bundled');
  });

  it('edits grade A pricing in the structured editor: validation errors listed, then a valid change', async () => {
    await bnplSection().getByRole('button', { name: 'Edit policy' }).click();
    await heading(page, 'New policy version');
    expect(await page.getByLabel('Grade A limit').inputValue()).toBe('30000.00');
    await shots.screen(page, 'editor-structured');

    await page.getByLabel('Grade A Monthly rate').fill('40.00');
    await page.getByLabel('Grade B minimum score').fill('730');
    await page.getByRole('button', { name: 'Validate' }).click();
    const problems = page.getByRole('list', { name: 'Validation problems' });
    await problems.waitFor();
    await problems.getByText('rate_range').waitFor();
    await problems.getByText('cutoffs_ordered').waitFor();
    await shots.screen(page, 'editor-validation-errors');
    // Saving an invalid version is refused too, with the same list.
    await page.getByRole('button', { name: 'Save draft' }).click();
    await problems.getByText('rate_range').waitFor();
    expect(await t.ctx.creditPolicy.listVersions({ tenantId: await tenantId(), environment: 'sandbox' }, 'bnpl', { limit: 5, offset: 0 })).toMatchObject({ total: 0 });

    await page.getByLabel('Grade B minimum score').fill('660');
    await page.getByLabel('Grade A Monthly rate').fill('11.99');
    await page.getByLabel('Note (optional)').fill('Grade A monthly rate 9.99% to 11.99%');
    await page.getByRole('button', { name: 'Validate' }).click();
    await page.getByText('The document passed every check').waitFor();
    await shots.screen(page, 'editor-valid');

    await page.getByRole('tab', { name: 'Raw JSON (JDM)' }).click();
    const json = await page.getByLabel('JDM decision graph').inputValue();
    expect(JSON.parse(json)).toMatchObject({ nodes: expect.any(Array), edges: expect.any(Array) });
    await shots.screen(page, 'editor-raw-json');
    await page.getByRole('tab', { name: 'Structured' }).click();
    expect(await page.getByLabel('Grade A Monthly rate').inputValue()).toBe('11.99');

    await page.getByRole('button', { name: 'Save draft' }).click();
    await heading(page, 'bnpl-policy-sandbox-v1');
    await page.getByText('Draft saved').waitFor();
    await shots.screen(page, 'draft-saved');
  });

  it('tests the draft against the sandbox: a side-by-side table of what changes, nothing stored', async () => {
    const decisions = async () => Number((await t.ctx.storage.db.selectFrom('decisions').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    const before = await decisions();
    await page.getByRole('button', { name: 'Test against sandbox' }).click();
    const results = page.getByRole('region', { name: 'Sandbox test' });
    await results.waitFor();
    // Harper (seeded, hard tier) borrows 7,500.00 on the monthly plan at grade A.
    const hard = results.locator('tr[data-case="seeded-hard"]');
    await hard.locator('del', { hasText: '9.99%' }).waitFor();
    await hard.locator('ins', { hasText: '11.99%' }).waitFor();
    // Riley (seeded, soft tier) borrows 150.00 on pay in 4 at 0%: unchanged.
    expect(await results.locator('tr[data-case="seeded-soft"]').getAttribute('class')).toBeNull();
    expect(await results.locator('tr.is-changed').count()).toBeGreaterThan(0);
    expect(await decisions()).toBe(before);
    await shots.screen(page, 'sandbox-test');
  });

  it('promotes with a confirmation, and the next decision uses the new version and names it', async () => {
    await page.getByRole('button', { name: 'Promote' }).click();
    const dialog = page.getByRole('dialog', { name: 'Promote bnpl-policy-sandbox-v1?' });
    await dialog.waitFor();
    await shots.screen(page, 'promote-confirm');
    await dialog.getByRole('button', { name: 'Promote' }).click();
    await page.getByText('now decides every sandbox application').waitFor();
    await shots.screen(page, 'promoted');

    const after = await decide('400.00');
    expect(after.body).toMatchObject({ outcome: 'approved', approved_amount: '400.00', apr: expect.stringMatching(/^1[12]\.\d\d$/) });
    expect(Number(after.body.apr)).toBeGreaterThan(Number(bundledApr));
    expect(after.engineVersion).toBe('engine-1.0.0+bnpl-sc-2026.11.1+bnpl-policy-sandbox-v1');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Credit policy' }).click();
    await heading(page, 'Credit policy');
    const history = bnplSection().getByRole('region', { name: 'Version history' });
    await history.getByRole('link', { name: 'bnpl-policy-sandbox-v1' }).waitFor();
    await page.getByText('engine-1.0.0+bnpl-sc-2026.11.1+bnpl-policy-sandbox-v1').waitFor();
    await shots.screen(page, 'overview-promoted');
  });

  it('edits, tests and promotes an auto-loan version; the next auto-loan decision uses its buy rate and names it', async () => {
    const decideAuto = async () => {
      const r = await fetch(`${t.baseUrl}/v1/decisions/auto-loan`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          consumer: { first_name: applicant.firstName, last_name: applicant.lastName, email: 'p@example.com', phone: '+14155550177', dob: applicant.dob, ssn_last4: '4821', address: { line1: '9 Elm Street', city: 'Dayton', state: 'OH', zip: '45402' } },
          vehicle: { vin: '1HGCM8262RA004352', year: 2024, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00' },
          loan: { amount: '16000.00', down_payment: '2000.00', trade_in_value: '1000.00', term_months: 60, currency: 'USD' },
          channel: 'direct',
        }),
      });
      expect(r.status).toBe(200);
      const body = (await r.json()) as Record<string, unknown>;
      const event = await t.ctx.storage.db.selectFrom('events').select('data_json').where('subject_id', '=', String(body.decision_id)).where('type', '=', 'decision.finalized').executeTakeFirstOrThrow();
      return { body, engineVersion: String((JSON.parse(event.data_json) as { engine_version: string }).engine_version) };
    };
    // Grade A, 60 months, used: 5.99 + 1.00 used-vehicle adder.
    expect((await decideAuto()).body).toMatchObject({ outcome: 'approved', buy_rate: '6.99' });

    await autoSection().getByRole('button', { name: 'Edit policy' }).click();
    await heading(page, 'New policy version');
    expect(await page.getByLabel('Grade A 60 mo buy rate').inputValue()).toBe('5.99');
    expect(await page.getByLabel('Grade A maximum LTV').inputValue()).toBe('130');
    expect(await page.getByLabel('Dealer reserve share').inputValue()).toBe('75');
    await shots.screen(page, 'auto-editor-structured');

    await page.getByLabel('Grade A 60 mo buy rate').fill('36.50');
    await page.getByLabel('Markup cap above 60 months').fill('1.50');
    await page.getByRole('button', { name: 'Validate' }).click();
    const problems = page.getByRole('list', { name: 'Validation problems' });
    await problems.getByText('rate_range').waitFor();
    await problems.getByText('markup_caps_ordered').waitFor();
    await shots.screen(page, 'auto-editor-validation-errors');

    await page.getByLabel('Grade A 60 mo buy rate').fill('4.75');
    await page.getByLabel('Markup cap above 60 months').fill('1.00');
    await page.getByRole('button', { name: 'Validate' }).click();
    await page.getByText('The document passed every check').waitFor();
    await page.getByRole('button', { name: 'Save draft' }).click();
    await heading(page, 'auto_loan-policy-sandbox-v1');
    await page.getByText('Draft saved').waitFor();
    expect(await page.getByText('4.75%').count()).toBeGreaterThan(0);

    await page.getByRole('button', { name: 'Test against sandbox' }).click();
    const results = page.getByRole('region', { name: 'Sandbox test' });
    const prime = results.locator('tr[data-case="prime-direct-new-60-1"]');
    await prime.locator('del', { hasText: 'buy rate 5.99%' }).waitFor();
    await prime.locator('ins', { hasText: 'buy rate 4.75%' }).waitFor();
    await shots.screen(page, 'auto-sandbox-test');

    await page.getByRole('button', { name: 'Promote' }).click();
    const dialog = page.getByRole('dialog', { name: 'Promote auto_loan-policy-sandbox-v1?' });
    await dialog.getByRole('button', { name: 'Promote' }).click();
    await page.getByText('now decides every sandbox application').waitFor();

    const after = await decideAuto();
    expect(after.body).toMatchObject({ outcome: 'approved', buy_rate: '5.75' });
    expect(after.engineVersion).toBe('engine-1.0.0+auto-sc-2026.11.1+auto_loan-policy-sandbox-v1');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Credit policy' }).click();
    await heading(page, 'Credit policy');
    await autoSection().getByRole('region', { name: 'Version history' }).getByRole('link', { name: 'auto_loan-policy-sandbox-v1' }).waitFor();
    await shots.screen(page, 'auto-overview-promoted');
  });

  async function tenantId(): Promise<string> {
    const row = await t.ctx.storage.db.selectFrom('users').select('tenant_id').where('email', '=', 'priya.admin@harbor-credit.example.com').executeTakeFirstOrThrow();
    return row.tenant_id;
  }
});
