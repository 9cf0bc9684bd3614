/**
 * The real service for end-to-end tests: the compiled `cds` CLI (server/dist, built by `npm test`)
 * creates a tenant, optionally registers a webhook endpoint, then `cds serve` runs on a free
 * loopback port with its own temporary data folder. Webhooks go to a real HTTPS receiver on
 * 127.0.0.1 whose certificate comes from a CA made here and trusted by the service through
 * NODE_EXTRA_CA_CERTS (loopback delivery needs WEBHOOK_ALLOW_PRIVATE_NETWORKS=1).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate } from 'selfsigned';

export const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
export const SDK_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI_PATH = path.join(REPO_ROOT, 'server', 'dist', 'cli', 'main.js');

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ']) if (process.env[name] !== undefined) env[name] = process.env[name];
  return { ...env, ...extra };
}

function runCli(args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CLI_PATH, ...args], { env, cwd, timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`cds ${args.join(' ')} failed: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

export interface ReceivedWebhook {
  path: string;
  headers: Record<string, string>;
  /** The body bytes exactly as received. */
  body: Buffer;
}

export interface WebhookReceiver {
  url: string;
  caFile: string;
  requests: ReceivedWebhook[];
  waitFor(predicate: (r: ReceivedWebhook) => boolean, timeoutMs?: number): Promise<ReceivedWebhook>;
  /** The status every request is answered with from now on (204 at start); a 5xx simulates an outage. */
  setStatus(status: number): void;
  stop(): Promise<void>;
}

/** An HTTPS receiver on 127.0.0.1 that answers 204 (or the status set) and records every request raw. */
export async function startWebhookReceiver(dir: string): Promise<WebhookReceiver> {
  const days = new Date(Date.now() + 2 * 24 * 3600_000);
  const ca = await generate([{ name: 'commonName', value: 'cds sdk test CA' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notAfterDate: days,
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  const leaf = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notAfterDate: days,
    ca: { cert: ca.cert, key: ca.private },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] },
    ],
  });
  const caFile = path.join(dir, 'webhook-ca.pem');
  writeFileSync(caFile, ca.cert);
  const requests: ReceivedWebhook[] = [];
  let status = 204;
  const server: Server = createHttpsServer({ cert: leaf.cert, key: leaf.private }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      requests.push({ path: req.url ?? '/', headers, body: Buffer.concat(chunks) });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `https://127.0.0.1:${port}/hooks/cds`,
    caFile,
    requests,
    async waitFor(predicate, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const hit = requests.find(predicate);
        if (hit) return hit;
        if (Date.now() > deadline) throw new Error(`no matching webhook within ${timeoutMs} ms (got ${requests.length} requests)`);
        await sleep(50);
      }
    },
    setStatus: (s: number) => {
      status = s;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface Service {
  baseUrl: string;
  tenantId: string;
  sandboxKey: string;
  liveKey: string;
  consumers: { soft: string; enhanced: string; hard: string };
  /** Set when started with `webhooks: true`. */
  webhook?: { secret: string; receiver: WebhookReceiver };
  stderr(): string;
  stop(): Promise<void>;
}

interface TenantJson {
  tenant_id: string;
  sandbox: { api_key: string; consumers: Array<{ consumer_id: string; tier: 'soft' | 'enhanced' | 'hard' }> };
  live: { api_key: string };
}

export async function startService(options: { webhooks?: boolean } = {}): Promise<Service> {
  if (!existsSync(CLI_PATH)) throw new Error(`${CLI_PATH} is missing: run "npm run build" first (npm test does).`);
  const dir = mkdtempSync(path.join(tmpdir(), 'cds-sdk-'));
  const port = await freePort();
  const receiver = options.webhooks ? await startWebhookReceiver(dir) : undefined;
  const env = baseEnv({
    PORT: String(port),
    HOST: '127.0.0.1',
    CDS_DATA_DIR: dir,
    DATA_ENCRYPTION_KEY: '5a'.repeat(32),
    RATE_LIMIT_SANDBOX_PER_S: '1000',
    RATE_LIMIT_LIVE_PER_S: '1000',
    LOG_LEVEL: 'warn',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1',
    ...(receiver ? { NODE_EXTRA_CA_CERTS: receiver.caFile } : {}),
  });

  const tenant = JSON.parse(await runCli(['tenants', 'create', '--name', 'SDK Test Shop', '--json'], env, dir)) as TenantJson;
  const consumer = (tier: string) => tenant.sandbox.consumers.find((c) => c.tier === tier)!.consumer_id;
  let webhook: Service['webhook'];
  if (receiver) {
    const out = await runCli(['webhooks', 'create', '--tenant', tenant.tenant_id, '--env', 'sandbox', '--url', receiver.url, '--json'], env, dir);
    webhook = { secret: (JSON.parse(out) as { secret: string }).secret, receiver };
  }

  const child: ChildProcess = spawn(process.execPath, [CLI_PATH, 'serve'], { env, cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`cds serve exited (${child.exitCode}):\n${stderr}`);
    try {
      const r = await fetch(`${baseUrl}/healthz`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`cds serve not healthy within 20 s:\n${stderr}`);
    }
    await sleep(50);
  }

  return {
    baseUrl,
    tenantId: tenant.tenant_id,
    sandboxKey: tenant.sandbox.api_key,
    liveKey: tenant.live.api_key,
    consumers: { soft: consumer('soft'), enhanced: consumer('enhanced'), hard: consumer('hard') },
    ...(webhook ? { webhook } : {}),
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('close', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      await receiver?.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A new consumer (all identity fields) with the given SSN last four. */
export function newConsumer(ssnLast4: string, firstName = 'Ada') {
  return {
    first_name: firstName,
    last_name: 'Lovelace',
    email: `${firstName.toLowerCase()}@example.com`,
    dob: '1990-12-10',
    ssn_last4: ssnLast4,
    address: { line1: '1 Main St', city: 'Austin', state: 'TX', zip: '73301' },
  };
}

export const furniture = (amount: string) => ({ amount, currency: 'USD', merchant_name: 'Acme Furniture', merchant_category: 'furniture' as const });
