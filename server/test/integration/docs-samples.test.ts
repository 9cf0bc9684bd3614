/**
 * Every code sample in docs/ that is tagged to run (ADR 0010, `server/src/modules/docs-site/
 * code-samples.ts`) runs here as written, against the real built service (`cds serve` on a free
 * loopback port), in the order of its page, the way a reader follows the page:
 *
 * - each page gets a fresh working folder that looks like the repository root to its samples:
 *   `npm run cds` runs the built CLI, `@cds/node` resolves to sdks/node, `sdks/python/src` is there
 *   for PYTHONPATH;
 * - `file name=x` blocks are saved as x; `run` blocks run with bash (`set -euo pipefail`); what a
 *   block exports stays exported for the next blocks of the page (a reader's terminal);
 * - the only substitution is the address: `http://127.0.0.1:3000` becomes the test server's;
 * - an `output` block must match what the run block before it printed (`…` matches anything);
 * - `run background` blocks are webhook receivers: started, sent one real signed delivery through
 *   an HTTPS front (receivers listen on plain HTTP behind TLS, as the page says), checked, sent a
 *   forged request (must be refused with 400), stopped.
 * The quickstart starts from nothing (it creates its own tenant); other pages start with the
 * variables the quickstart exports (CDS_BASE_URL, CDS_TENANT_ID, CDS_API_KEY, the consumer ids),
 * plus DECISION_ID (a fresh sandbox decision waiting for verification, as in the quickstart's step
 * 4), CDS_WEBHOOK_URL (the HTTPS front), PORT (where receivers listen), and, once a delivery was
 * received, that delivery as `body.json` and `SVC_SIGNATURE`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractCodeSamples, outputMatches, sampleRunner, type CodeSample } from '../../src/modules/docs-site/code-samples.js';
import { DOCS_DIR, readDocsFiles } from '../../src/modules/docs-site/docs-site.routes.js';
import { CLI_PATH, cleanupProcesses, freePort, makeTempDir, pollUntil, runCli, startServer, TEST_ENCRYPTION_KEY, type ServerProcess } from '../support/server-process.js';
import { leafFrom, testCa, writeCaFile } from '../support/webhook-receiver.js';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DOCUMENTED_BASE_URL = 'http://127.0.0.1:3000';

interface Delivery {
  headers: Record<string, string>;
  body: Buffer;
}

/** Pages with at least one runnable sample, the quickstart first (it creates the tenant the others reuse). */
const pages = readDocsFiles(DOCS_DIR)
  .map((f) => ({ file: f.path, samples: extractCodeSamples(f.markdown) }))
  .filter((p) => p.samples.some((s) => s.tag?.kind === 'run'))
  .sort((a, b) => (a.file === 'quickstart.md' ? -1 : b.file === 'quickstart.md' ? 1 : a.file.localeCompare(b.file)));

let server: ServerProcess;
let dataDir: string;
let front: { url: string; deliveries: Delivery[]; close(): Promise<void> };
let receiverPort: number;
let sharedEnv: Record<string, string>;

/** An HTTPS front for receivers on plain HTTP (a TLS-terminating proxy), recording what it forwards. */
async function startHttpsFront(targetPort: () => number): Promise<typeof front> {
  const leaf = await leafFrom(await testCa());
  const deliveries: Delivery[] = [];
  const tls = https.createServer({ cert: leaf.cert, key: leaf.key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      deliveries.push({ headers, body });
      const upstream = http.request({ host: '127.0.0.1', port: targetPort(), method: req.method, path: req.url, headers: { ...headers, connection: 'close' }, agent: false }, (up) => {
        res.writeHead(up.statusCode ?? 502);
        up.pipe(res);
      });
      upstream.on('error', () => res.writeHead(502).end());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', () => resolve()));
  const { port } = tls.address() as { port: number };
  return {
    url: `https://127.0.0.1:${port}/cds`,
    deliveries,
    close: () =>
      new Promise<void>((resolve) => {
        tls.closeAllConnections();
        tls.close(() => resolve());
      }),
  };
}

/** A folder that looks like the repository root to the samples. */
function makeWorkspace(): string {
  const dir = makeTempDir('cds-docs-samples-');
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ private: true, scripts: { cds: `node ${CLI_PATH}` } }));
  mkdirSync(path.join(dir, 'node_modules', '@cds'), { recursive: true });
  symlinkSync(path.join(REPO_ROOT, 'sdks', 'node'), path.join(dir, 'node_modules', '@cds', 'node'), 'dir');
  symlinkSync(path.join(REPO_ROOT, 'sdks'), path.join(dir, 'sdks'), 'dir');
  return dir;
}

function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR']) if (process.env[name] !== undefined) env[name] = process.env[name]!;
  // The CLI runs with the server's configuration (same data, same key; loopback webhooks allowed
  // because the test's HTTPS front is on 127.0.0.1).
  return { ...env, CDS_DATA_DIR: dataDir, DATA_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1', LOG_LEVEL: 'warn', PYTHONDONTWRITEBYTECODE: '1', npm_config_update_notifier: 'false', npm_config_fund: 'false' };
}

const STATE_FILE = '.sample-env';

/** The bash program for one run block: restore the page's exports, run, save the exports. */
function bashProgram(code: string, saveExports: boolean): string {
  return [
    'set -euo pipefail',
    `if [ -f ${STATE_FILE} ]; then source ${STATE_FILE}; fi`,
    code.split(DOCUMENTED_BASE_URL).join(server.baseUrl),
    ...(saveExports ? [`for v in $(compgen -e); do case "$v" in PWD|OLDPWD|SHLVL|_) ;; *) declare -p "$v" ;; esac; done > ${STATE_FILE}`] : []),
  ].join('\n');
}

/** A js or python run block becomes a file run by its interpreter (the same thing a reader does). */
function asShell(sample: CodeSample, index: number, cwd: string): string {
  const runner = sampleRunner(sample.lang);
  if (runner === 'bash') return sample.code;
  const file = `sample-${index}.${runner === 'node' ? 'mjs' : 'py'}`;
  writeFileSync(path.join(cwd, file), sample.code.split(DOCUMENTED_BASE_URL).join(server.baseUrl));
  return runner === 'node' ? `node ${file}` : `PYTHONPATH=sdks/python/src python3 ${file}`;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runBash(program: string, cwd: string, env: Record<string, string>, timeoutMs = 90_000): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', program], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Reads the page's exported variables (what a reader's terminal holds now). */
async function pageVariables(cwd: string, env: Record<string, string>): Promise<Record<string, string>> {
  const r = await runBash(`if [ -f ${STATE_FILE} ]; then source ${STATE_FILE}; fi; env -0`, cwd, env);
  return Object.fromEntries(r.stdout.split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
}

/** A background block (a webhook receiver): start, one real delivery, one forgery, stop. */
async function runReceiver(program: string, cwd: string, env: Record<string, string>): Promise<Run> {
  const child: ChildProcess = spawn('bash', ['-c', program], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const describeState = () => `stdout:\n${stdout}\nstderr:\n${stderr}`;
  try {
    await pollUntil(async () => stdout.includes('\n'), { timeoutMs: 20_000, describe: describeState });
    const vars = await pageVariables(cwd, env);
    const decision = await fetch(`${vars.CDS_BASE_URL}/v1/decisions/bnpl`, {
      method: 'POST',
      headers: { authorization: `Bearer ${vars.CDS_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ consumer: { consumer_id: vars.CDS_SOFT_CONSUMER_ID }, transaction: { amount: '149.97', currency: 'USD', merchant_name: 'Acme Furniture', merchant_category: 'furniture' } }),
    });
    const { decision_id: decisionId } = (await decision.json()) as { decision_id: string };
    await pollUntil(async () => stdout.includes(decisionId), { timeoutMs: 30_000, describe: describeState });
    // A forged delivery (right shape, wrong signature) is refused.
    const forged = await fetch(`http://127.0.0.1:${receiverPort}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'svc-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` },
      body: JSON.stringify({ id: 'forged', type: 'decision.finalized', created: 0, attempt: 1, data: { decision_id: 'forged', outcome: 'approved' } }),
    });
    expect(forged.status, 'a forged delivery must be refused').toBe(400);
    return { code: 0, stdout, stderr };
  } finally {
    if (child.exitCode === null && child.pid) {
      const closed = new Promise((resolve) => child.once('close', resolve));
      process.kill(-child.pid, 'SIGTERM');
      await closed;
    }
  }
}

/** A new sandbox decision waiting for the consumer's verification (the enhanced consumer, 1,500.00). */
async function pendingDecision(): Promise<string> {
  const res = await fetch(`${server.baseUrl}/v1/decisions/bnpl`, {
    method: 'POST',
    headers: { authorization: `Bearer ${sharedEnv.CDS_API_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ consumer: { consumer_id: sharedEnv.CDS_ENHANCED_CONSUMER_ID }, transaction: { amount: '1500.00', currency: 'USD', merchant_name: 'Acme Furniture', merchant_category: 'furniture' } }),
  });
  const body = (await res.json()) as { decision_id: string; status: string };
  expect(body.status).toBe('needs_consumer_action');
  return body.decision_id;
}

beforeAll(async () => {
  dataDir = makeTempDir('cds-docs-data-');
  receiverPort = await freePort();
  front = await startHttpsFront(() => receiverPort);
  server = await startServer({
    env: {
      CDS_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_SANDBOX_PER_S: '1000',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1',
      NODE_EXTRA_CA_CERTS: await writeCaFile(),
    },
  });
  // The tenant the pages after the quickstart start from (as if the reader had done it).
  const created = await runCli(['tenants', 'create', '--name', 'Docs Reader', '--json'], { CDS_DATA_DIR: dataDir });
  expect(created.code, created.stderr).toBe(0);
  const tenant = JSON.parse(created.stdout) as { tenant_id: string; sandbox: { api_key: string; consumers: Array<{ consumer_id: string; tier: string }> } };
  const consumer = (tier: string) => tenant.sandbox.consumers.find((c) => c.tier === tier)!.consumer_id;
  sharedEnv = {
    CDS_BASE_URL: server.baseUrl,
    CDS_TENANT_ID: tenant.tenant_id,
    CDS_API_KEY: tenant.sandbox.api_key,
    CDS_SOFT_CONSUMER_ID: consumer('soft'),
    CDS_ENHANCED_CONSUMER_ID: consumer('enhanced'),
    CDS_WEBHOOK_URL: front.url,
  };
}, 90_000);

afterAll(async () => {
  await server?.stop();
  await front?.close();
  await cleanupProcesses();
});

describe('docs code samples against a live service', () => {
  it('finds the pages with runnable samples, the quickstart and the webhooks page among them', () => {
    expect(pages.map((p) => p.file)).toEqual(expect.arrayContaining(['quickstart.md', 'webhooks.md']));
    expect(pages[0]!.file).toBe('quickstart.md');
  });

  it.each(pages.map((p) => [p.file, p] as const))('%s: every sample runs as written', async (_name, page) => {
    const cwd = makeWorkspace();
    const env = { ...baseEnv(), PORT: String(receiverPort), ...(page.file === 'quickstart.md' ? {} : { ...sharedEnv, DECISION_ID: await pendingDecision() }) };
    let last: { sample: CodeSample; run: Run } | null = null;
    let ran = 0;
    for (const [index, sample] of page.samples.entries()) {
      const where = `docs/${page.file}:${sample.line}`;
      const kind = sample.tag?.kind;
      if (kind === 'file') {
        writeFileSync(path.join(cwd, String(sample.tag!.options.name)), sample.code.split(DOCUMENTED_BASE_URL).join(server.baseUrl));
      } else if (kind === 'output') {
        expect(last, `${where}: an output block needs a run block before it`).not.toBeNull();
        expect(outputMatches(sample.code, last!.run.stdout), `${where}: the output of docs/${page.file}:${last!.sample.line} differs from the page.\nExpected:\n${sample.code}\nActual:\n${last!.run.stdout}\nstderr:\n${last!.run.stderr}`).toBe(true);
      } else if (kind === 'run') {
        // The latest delivery, for samples that check one by hand.
        const delivery = front.deliveries.at(-1);
        const runEnv = { ...env, ...(delivery ? { SVC_SIGNATURE: delivery.headers['svc-signature'] ?? '' } : {}) };
        if (delivery) writeFileSync(path.join(cwd, 'body.json'), delivery.body);
        const shell = asShell(sample, index, cwd);
        const run = sample.tag!.options.background ? await runReceiver(bashProgram(shell, false), cwd, runEnv) : await runBash(bashProgram(shell, true), cwd, runEnv);
        expect(run.code, `${where} failed (exit ${run.code}):\n${sample.code}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`).toBe(0);
        last = { sample, run };
        ran++;
      }
    }
    expect(ran).toBeGreaterThan(0);
    if (page.file === 'quickstart.md') {
      // The reader really made a tenant of their own, and the files the page told them to save exist.
      expect(existsSync(path.join(cwd, 'tenant.json'))).toBe(true);
      expect(JSON.parse(readFileSync(path.join(cwd, 'tenant.json'), 'utf8')).tenant_id).not.toBe(sharedEnv.CDS_TENANT_ID);
    }
  }, 240_000);
});
