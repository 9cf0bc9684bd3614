/**
 * Headless Chromium for the browser suites: Debian's /usr/bin/chromium driven by playwright-core
 * (no bundled browser download), a phone-size page, full-page screenshots kept under
 * test-artifacts/screenshots/ (git-ignored), a basic accessibility check, and a real test server
 * listening on a loopback port whose PUBLIC_BASE_URL is its own address.
 *
 * Without Chromium a local run skips the browser suites with a loud warning; with CI=true it fails.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { PORTAL_DIST_DIR } from '../../src/modules/portal/portal-static.js';
import type { TestDatabase } from './databases.js';
import { createTestApp, type TestApp } from './test-app.js';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
export const PHONE_VIEWPORT = { width: 390, height: 844 } as const;
export const SCREENSHOT_DIR = fileURLToPath(new URL('../../../test-artifacts/screenshots/', import.meta.url));

/** True when Chromium is there. Missing: a loud warning locally, an error with CI=true. */
export function chromiumAvailable(): boolean {
  if (existsSync(CHROMIUM_PATH)) return true;
  const message = `Chromium not found at ${CHROMIUM_PATH} (install Debian's "chromium" package or set CHROMIUM_PATH)`;
  if (process.env.CI === 'true') throw new Error(`${message}: the browser suites are required in CI.`);
  console.warn(`\n!!! ${message}: browser suites are SKIPPED in this local run !!!\n`);
  return false;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true, timeout: 30_000 });
}

/** A fresh phone-size context (no shared cookies between journeys). */
export async function phoneContext(browser: Browser): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: PHONE_VIEWPORT, deviceScaleFactor: 2, isMobile: true, hasTouch: true, locale: 'en-US', timezoneId: 'UTC' });
  context.setDefaultTimeout(10_000);
  context.setDefaultNavigationTimeout(10_000);
  return context;
}

/** Pages in fresh contexts of one browser (each its own cookies: another device or person), closed together. */
export class BrowserPages {
  private readonly contexts: BrowserContext[] = [];
  constructor(
    private readonly browser: Browser,
    private readonly timeoutMs = 10_000,
  ) {}
  /** A page of `viewport` size, in English and UTC; `options` adds to or overrides the context's. */
  async open(viewport: { width: number; height: number }, options: BrowserContextOptions = {}): Promise<Page> {
    const context = await this.browser.newContext({ viewport, locale: 'en-US', timezoneId: 'UTC', ...options });
    context.setDefaultTimeout(this.timeoutMs);
    this.contexts.push(context);
    return context.newPage();
  }
  /** A phone-size page (`phoneContext`). */
  async phone(): Promise<Page> {
    const context = await phoneContext(this.browser);
    this.contexts.push(context);
    return context.newPage();
  }
  /** Closes every context opened so far (a failure to close is not the test's concern). */
  async closeAll(): Promise<void> {
    for (const c of this.contexts.splice(0)) await c.close().catch(() => undefined);
  }
}

/** Full-page screenshots of one journey: `<journey>-<nn>-<step>.png`, numbered in order. */
export class Screenshots {
  readonly files: string[] = [];
  private n = 0;
  constructor(private readonly journey: string) {
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
  }
  async take(page: Page, step: string): Promise<string> {
    const file = path.join(SCREENSHOT_DIR, `${this.journey}-${String(++this.n).padStart(2, '0')}-${step}.png`);
    await page.screenshot({ path: file, fullPage: true });
    this.files.push(file);
    return file;
  }
  /** Once the page settles: no `pageProblems` (but those it legitimately has, per `ignore`), then the screenshot. */
  async screen(page: Page, step: string, options: { ignore?: (problem: string) => boolean } = {}): Promise<string> {
    await page.waitForLoadState('networkidle').catch(() => undefined);
    const { ignore } = options;
    const problems = await pageProblems(page);
    expect(ignore ? problems.filter((p) => !ignore(p)) : problems, step).toEqual([]);
    // From the top: a sticky header drawn mid-page in a full-page capture looks like a bug.
    await page.evaluate('window.scrollTo(0, 0)');
    return this.take(page, step);
  }
}

/** Waits until the page's level-1 heading is named `text` (its accessible name, not just its text). */
export function heading(page: Page, text: string | RegExp): Promise<void> {
  return page.getByRole('heading', { level: 1, name: text }).waitFor();
}

/**
 * Basic accessibility and phone-fitness problems of the current page (empty when fine): every
 * visible input has a label, the document has a language and a title, there is exactly one h1,
 * every button has a name, and nothing overflows the viewport sideways.
 */
export async function pageProblems(page: Page): Promise<string[]> {
  // A string, so this Node-typed project needs no DOM typings; it runs in the page.
  return page.evaluate<string[]>(`(() => {
    const problems = [];
    if (!document.documentElement.lang) problems.push('<html> has no lang');
    if (!document.title.trim()) problems.push('no <title>');
    const h1 = document.querySelectorAll('h1').length;
    if (h1 !== 1) problems.push(h1 + ' h1 elements');
    for (const input of document.querySelectorAll('input:not([type=hidden])')) {
      if (!input.labels || input.labels.length === 0) problems.push('input ' + (input.name || input.id) + ' has no label');
    }
    for (const button of document.querySelectorAll('button')) if (!button.textContent.trim()) problems.push('a button has no text');
    if (document.documentElement.scrollWidth > window.innerWidth) problems.push('page is ' + document.documentElement.scrollWidth + 'px wide in a ' + window.innerWidth + 'px viewport');
    return problems;
  })()`);
}

/** How many visible inputs the page has (so a label check is known to have looked at something). */
export async function visibleInputCount(page: Page): Promise<number> {
  return page.locator('input:not([type=hidden])').count();
}

/** Wait until the page's h1 reads `text` (after a form submission navigates). */
export async function waitForHeading(page: Page, text: string): Promise<void> {
  await page.locator('h1', { hasText: text }).waitFor({ state: 'visible' });
}

/** A real, small, valid PNG (RGB, one colour), generated here. */
export function makePng(width: number, height: number, rgb: [number, number, number] = [29, 78, 216]): Buffer {
  const row = Buffer.alloc(1 + width * 3);
  for (let x = 0; x < width; x++) row.set(rgb, 1 + x * 3);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A loopback port nobody listens on right now. */
async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface ListeningTestApp extends TestApp {
  /** `http://127.0.0.1:<port>`, also the app's PUBLIC_BASE_URL. */
  baseUrl: string;
}

/**
 * createTestApp, listening on a loopback port, with PUBLIC_BASE_URL set to that address so the
 * `consumer_complete_url` it hands out is the one the browser opens.
 */
export async function startListeningTestApp(db: TestDatabase, options: Parameters<typeof createTestApp>[1] = {}): Promise<ListeningTestApp> {
  for (let attempt = 1; ; attempt++) {
    const port = await freeLoopbackPort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const t = await createTestApp(db, { ...options, env: { ...options.env, PUBLIC_BASE_URL: baseUrl } });
    try {
      await t.app.listen({ port, host: '127.0.0.1' });
      return Object.assign(t, { baseUrl });
    } catch (err) {
      await t.close();
      // Someone took the port between the probe and the listen: try another one.
      if (attempt >= 3 || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    }
  }
}

/** A portal account to sign up with (`signUpInPortal`). */
export interface PortalSignUp {
  company: string;
  name: string;
  email: string;
  password: string;
}

/**
 * Signs up through the portal's own form, as a new lender does, and goes on to the overview.
 * Returns the sandbox API key the page shows once. (portal.browser.test.ts walks the same form step
 * by step, with screenshots: that is the test of the page itself.)
 */
export async function signUpInPortal(page: Page, baseUrl: string, account: PortalSignUp): Promise<string> {
  await page.goto(`${baseUrl}/portal/signup`);
  await heading(page, 'Create your account');
  await page.getByLabel('Company name').fill(account.company);
  await page.getByLabel('Your name').fill(account.name);
  await page.getByLabel('Work email').fill(account.email);
  await page.getByLabel('Password').fill(account.password);
  await page.getByRole('button', { name: 'Create account' }).click();
  await heading(page, 'Your sandbox is ready');
  const key = await page.getByLabel('Sandbox API key').inputValue();
  await page.getByRole('button', { name: 'Continue to the portal' }).click();
  await heading(page, /Welcome/);
  return key;
}

/**
 * Opens an invitation link and joins as the invited member, as a new team member does, up to the
 * welcome. (portal.browser.test.ts walks the same page with screenshots: the test of the page.)
 */
export async function acceptInvitationInPortal(page: Page, inviteUrl: string, member: { name: string; password: string }): Promise<void> {
  await page.goto(inviteUrl);
  await heading(page, 'Join your team');
  await page.getByLabel('Your name').fill(member.name);
  await page.getByLabel('Choose a password').fill(member.password);
  await page.getByRole('button', { name: 'Accept invitation' }).click();
  await heading(page, new RegExp(`Welcome, ${member.name.split(' ')[0]}`));
}

/** A fetch from inside the page, as the web app makes it (its cookies, the CSRF header from the cookie). */
export async function pageFetch(page: Page, method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  // A string, so this Node-typed project needs no DOM typings; it runs in the page.
  return page.evaluate<{ status: number; body: Record<string, unknown> }>(`(async () => {
    const csrf = (document.cookie.split('; ').find((c) => c.startsWith('cds_csrf=')) || '').slice('cds_csrf='.length);
    const body = ${JSON.stringify(body === undefined ? null : JSON.stringify(body))};
    const headers = { 'x-csrf-token': csrf };
    if (body !== null) headers['content-type'] = 'application/json';
    const r = await fetch(${JSON.stringify(path)}, { method: ${JSON.stringify(method)}, headers, body: body === null ? undefined : body });
    return { status: r.status, body: await r.json() };
  })()`);
}

/**
 * The portal is built by `npm run build` (and so by `npm test`); build it here if a run skipped that.
 * A build older than the app's sources stops the run instead: the pages would test yesterday's app.
 * It is not rebuilt here, since browser test files run in parallel workers that would all build
 * into one folder at once.
 */
export function ensurePortalBuilt(): void {
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const built = `${PORTAL_DIST_DIR}index.html`;
  if (!existsSync(built)) {
    execFileSync('npm', ['run', 'build', '--workspace', 'portal'], { cwd: root, stdio: 'ignore' });
    return;
  }
  const builtAt = statSync(built).mtimeMs;
  const files = ['index.html', 'vite.config.ts', 'package.json', 'tsconfig.json'].map((f) => path.join(root, 'portal', f)).filter((f) => existsSync(f));
  const sources = [...files, ...filesUnder(path.join(root, 'portal/src')), ...(existsSync(path.join(root, 'portal/public')) ? filesUnder(path.join(root, 'portal/public')) : [])];
  const newer = sources.find((file) => statSync(file).mtimeMs > builtAt);
  if (newer) throw new Error(`portal/dist is older than ${path.relative(root, newer)}: run \`npm run build -w portal\` (or \`npm run build\`) before the browser tests.`);
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? filesUnder(path.join(dir, entry.name)) : [path.join(dir, entry.name)]));
}
