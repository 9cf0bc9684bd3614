/**
 * The package as a user gets it: the README's examples run as written (installed the way a user
 * installs it: node_modules/@cds/node pointing at this folder) against a freshly started service,
 * the published type definitions compile for ESM and CommonJS users, and package.json describes
 * the builds that exist.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhooks } from '../src/index.js';
import { VERSION } from '../src/version.js';
import { autoLoanTenant } from './support/portal.js';
import { freePort, SDK_ROOT, sleep, startService, type Service } from './support/service.js';

const readme = readFileSync(path.join(SDK_ROOT, 'README.md'), 'utf8');

/** The code blocks fenced as ```js title="<file>". */
function examples(): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of readme.matchAll(/```js title="([^"]+)"\n([\s\S]*?)```/g)) out.set(m[1]!, m[2]!);
  return out;
}

function runNode(file: string, env: Record<string, string>, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [file], { cwd, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 30_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let service: Service;
let project: string;

beforeAll(async () => {
  service = await startService();
  // A user's project with the library installed from the repository (npm links a folder install).
  project = mkdtempSync(path.join(tmpdir(), 'cds-node-user-'));
  mkdirSync(path.join(project, 'node_modules', '@cds'), { recursive: true });
  symlinkSync(SDK_ROOT, path.join(project, 'node_modules', '@cds', 'node'), 'dir');
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'my-shop', private: true, type: 'module' }));
  for (const [file, code] of examples()) writeFileSync(path.join(project, file), code);
});
afterAll(async () => {
  await service?.stop();
  if (project) rmSync(project, { recursive: true, force: true });
});

describe('README', () => {
  it('has the runnable examples', () => {
    expect([...examples().keys()]).toEqual(['quickstart.mjs', 'auto-loan.mjs', 'webhook-receiver.mjs', 'send-test-webhook.mjs', 'recover-missed-events.mjs']);
  });

  it('quickstart runs as written: approved, declined, pending -> completed, an error, a verified webhook', async () => {
    const result = await runNode(
      'quickstart.mjs',
      {
        CDS_BASE_URL: service.baseUrl,
        CDS_API_KEY: service.sandboxKey,
        CDS_SOFT_CONSUMER_ID: service.consumers.soft,
        CDS_ENHANCED_CONSUMER_ID: service.consumers.enhanced,
      },
      project,
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).toMatch(/^1\. approved: true 149\.97 APR \d+\.\d{2}%$/m);
    expect(out.match(/^ {3}payment \d: /gm)).toHaveLength(4);
    expect(out).toMatch(/^2\. declined: true AA-21 Bankruptcy/m);
    expect(out).toMatch(/^3\. pending: true send the consumer to https?:\/\/\S+\/verify\/\S+$/m);
    expect(out).toMatch(/^ {3}completed: approved 1500\.00 \d+ months$/m);
    expect(out).toMatch(/^4\. error: UnprocessableEntityError 422 unprocessable_entity req_\w+$/m);
    expect(out).toMatch(/^5\. webhook verified: decision\.finalized true$/m);
  });

  it('the auto-loan example runs as written with a portal tenant and its dealer: direct, indirect, pending -> completed, the 422', async () => {
    const tenant = await autoLoanTenant(service.baseUrl, 'README');
    const result = await runNode(
      'auto-loan.mjs',
      {
        CDS_BASE_URL: service.baseUrl,
        CDS_API_KEY: tenant.sandboxKey,
        CDS_SOFT_CONSUMER_ID: tenant.consumers.soft,
        CDS_ENHANCED_CONSUMER_ID: tenant.consumers.enhanced,
        CDS_DEALER_ID: tenant.activeDealer.id,
      },
      project,
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const out = result.stdout;
    const direct = /^1\. direct: approved 13000\.00 buy (\d+\.\d{2})% contract (\d+\.\d{2})% APR \d+\.\d{2}% LTV 86\.67%$/m.exec(out);
    expect(direct, out).not.toBeNull();
    expect(direct![2]).toBe(direct![1]);
    const indirect = /^2\. indirect: approved buy (\d+\.\d{2})% contract (\d+\.\d{2})% dealer reserve (\d+\.\d{2})$/m.exec(out);
    expect(indirect, out).not.toBeNull();
    expect(indirect![1]).toBe(direct![1]);
    expect(Math.round(Number(indirect![2]) * 100)).toBe(Math.round(Number(indirect![1]) * 100) + 100);
    expect(Number(indirect![3])).toBeGreaterThan(0);
    expect(out).toMatch(/^ {3}60 payments of \d+\.\d{2}, first due \d{4}-\d{2}-\d{2}$/m);
    expect(out).toMatch(/^ {3}total sale price \d+\.\d{2}, including 3000\.00 down$/m);
    expect(out).toMatch(/^3\. pending: true send the consumer to https?:\/\/\S+\/verify\/\S+$/m);
    expect(out).toMatch(/^ {3}completed: approved 20000\.00 48 months at \d+\.\d{2}%$/m);
    expect(out).toMatch(/^4\. refused: 422 unprocessable_entity dealer\.markup_rate_pct 1\.50 is above the cap of 1\.25/m);
  });

  it('recover-missed-events runs as written: every decision.finalized of the last hour, all pages', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 23; i++) {
      const r = await fetch(`${service.baseUrl}/v1/decisions/bnpl`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${service.sandboxKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ consumer: { consumer_id: service.consumers.soft }, transaction: { amount: `${30 + i}.00`, currency: 'USD', merchant_name: 'Acme', merchant_category: 'furniture' } }),
      });
      expect(r.status).toBe(200);
      ids.push(((await r.json()) as { decision_id: string }).decision_id);
    }
    const result = await runNode('recover-missed-events.mjs', { CDS_BASE_URL: service.baseUrl, CDS_API_KEY: service.sandboxKey }, project);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    // More than one page (20 by default): auto-pagination found them all.
    for (const id of ids) expect(result.stdout).toMatch(new RegExp(`^decision\\.finalized [0-9a-f-]{36} ${id}$`, 'm'));
    const count = Number(/^recovered (\d+) events$/m.exec(result.stdout)?.[1]);
    expect(count).toBeGreaterThanOrEqual(ids.length);
  });

  it('the webhook receiver accepts a signed request, refuses a forged one and deduplicates', async () => {
    const port = await freePort();
    const secret = 'whsec_readme_receiver_secret';
    const child = spawn(process.execPath, ['webhook-receiver.mjs'], { cwd: project, env: { PATH: process.env.PATH ?? '', PORT: String(port), CDS_WEBHOOK_SECRET: secret } });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    try {
      for (let i = 0; !stdout.includes('listening'); i++) {
        if (i > 200) throw new Error('receiver did not start');
        await sleep(25);
      }
      const sent = await runNode('send-test-webhook.mjs', { PORT: String(port), CDS_WEBHOOK_SECRET: secret }, project);
      expect(sent.stdout.trim()).toBe('204');
      const again = await runNode('send-test-webhook.mjs', { PORT: String(port), CDS_WEBHOOK_SECRET: secret }, project);
      expect(again.stdout.trim()).toBe('204');
      const forged = await runNode('send-test-webhook.mjs', { PORT: String(port), CDS_WEBHOOK_SECRET: 'whsec_not_the_secret' }, project);
      expect(forged.stdout.trim()).toBe('400');
      const body = JSON.stringify({ id: 'evt-2', type: 'decision.finalized', created: Math.floor(Date.now() / 1000) - 301, attempt: 1, data: { decision_id: 'd-2' } });
      const stale = await fetch(`http://127.0.0.1:${port}/`, {
        method: 'POST',
        headers: { 'Svc-Signature': webhooks.generateTestHeader({ payload: body, secret, timestamp: Math.floor(Date.now() / 1000) - 301 }) },
        body,
      });
      expect(stale.status).toBe(400);
      // Count what the receiver printed once it has exited: every line it wrote is then in stdout.
      const exited = new Promise((resolve) => child.once('close', resolve));
      child.kill('SIGTERM');
      await exited;
      expect(stdout.match(/^received webhook\.test $/gm)).toHaveLength(1);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe('package', () => {
  it('package.json: exports map, engines, zero dependencies, version', () => {
    const pkg = JSON.parse(readFileSync(path.join(SDK_ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(pkg.name).toBe('@cds/node');
    expect(pkg.version).toBe(VERSION);
    expect(pkg.engines).toEqual({ node: '>=18' });
    expect(pkg.dependencies).toBeUndefined();
    const exp = (pkg.exports as Record<string, Record<string, Record<string, string>>>)['.']!;
    for (const file of [exp.import!.types!, exp.import!.default!, exp.require!.types!, exp.require!.default!, pkg.main as string, pkg.types as string]) {
      expect(existsSync(path.join(SDK_ROOT, file)), file).toBe(true);
    }
    expect(JSON.parse(readFileSync(path.join(SDK_ROOT, 'dist/cjs/package.json'), 'utf8'))).toEqual({ type: 'commonjs' });
  });

  it('the built code uses nothing but Node built-ins', () => {
    const require = createRequire(import.meta.url);
    const sources = ['esm', 'cjs'].flatMap((format) =>
      ['index.js', 'client.js', 'core/http.js', 'core/errors.js', 'core/retry.js', 'lib/webhooks.js', 'lib/polling.js', 'lib/decision.js'].map((f) =>
        readFileSync(path.join(SDK_ROOT, 'dist', format, f), 'utf8'),
      ),
    );
    const imported = new Set(sources.flatMap((s) => [...s.matchAll(/(?:from |require\()['"]([^'"]+)['"]/g)].map((m) => m[1]!)));
    for (const spec of imported) expect(spec.startsWith('.') || spec.startsWith('node:'), spec).toBe(true);
    expect(require.resolve(path.join(SDK_ROOT, 'dist/cjs/index.js'))).toBeTruthy();
  });

  // tsc over the fixtures takes seconds, and more on a busy machine: the exec's own limit rules.
  it('the published .d.ts compile for ESM and CommonJS users (and reject wrong params)', { timeout: 90_000 }, async () => {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const result = await new Promise<{ code: number; out: string }>((resolve) =>
      execFile(process.execPath, [tsc, '-p', path.join(SDK_ROOT, 'test/fixtures/types/tsconfig.json')], { timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? 1 : 0, out: stdout + stderr }),
      ),
    );
    expect(result.out).toBe('');
    expect(result.code).toBe(0);
  });
});
