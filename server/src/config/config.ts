/**
 * Configuration: the only module that reads `process.env`.
 *
 * Every variable of decisions.md section 12 (plus the few later issues add) is parsed here once,
 * validated with a message that names the variable and what was wrong, frozen, and passed down.
 * A bad value stops the process at boot instead of surprising a request hours later.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import path from 'node:path';

export type Environment = 'sandbox' | 'live';

export interface Config {
  port: number;
  host: string;
  /** Unset: embedded SQLite under dataDir. */
  databaseUrl: string | null;
  /** Folder of the embedded database and, when generated, the encryption key. */
  dataDir: string;
  redisUrl: string | null;
  publicBaseUrl: string;
  /** 32-byte AES-256-GCM key for data at rest (ssn_last4, signing secrets, documents). */
  dataEncryptionKey: Buffer;
  /** Where the key came from, for the boot log (never the key itself). */
  dataEncryptionKeySource: 'environment' | 'generated-file';
  webhookAllowPrivateNetworks: boolean;
  /**
   * Waits between webhook attempts (ms), replacing the spec's 1 min ... 72 h schedule; null = the
   * spec's. For soaks and tests that must see retries finish within minutes; refused in production.
   */
  webhookRetryDelaysMs: readonly number[] | null;
  tls: { certFile: string; keyFile: string } | null;
  rateLimits: { livePerSecond: number; sandboxPerSecond: number };
  /** Successful API-key lookups cached per process (api-keys.service.ts); 0 = no cache. */
  apiKeyCacheSize: number;
  /** PostgreSQL: the poll cache's bound in MiB per API process (modules/decisions/decision-cache.ts, ADR 0050); 0 = no cache. */
  decisionCacheMb: number;
  logLevel: string;
  production: boolean;
  /** Live credit data: the lender's credit-data gateway (docs/credit-gateway.md); null = none configured. */
  creditGateway: { url: string; token: string; timeoutMs: number } | null;
  /** One-time codes by email (live): nodemailer SMTP URL and sender; null = not configured. */
  smtp: { url: string; from: string } | null;
  /** One-time codes by SMS (live): the HTTP SMS gateway (docs/verification.md); null = not configured. */
  smsGateway: { url: string; token: string | null } | null;
  /** PostgreSQL connections per process (each process has its own pool; docs/deployment.md). */
  databasePoolSize: number;
  /**
   * SQLite: when a create's writes run in the writer thread instead of the event loop (ADR 0030):
   * `auto` (default) while the event loop is saturated, `always`, or `off`.
   */
  sqliteWriterThread: 'auto' | 'always' | 'off';
  /**
   * PostgreSQL: a statement running longer is cancelled by the server, and a query with no answer
   * at all a second after that ends its connection (a silent partition); 0 = neither (database.ts).
   */
  databaseStatementTimeoutMs: number;
  /**
   * The whole of a request (headers and body) must arrive within this, or it is answered 400 and
   * its connection closed (http/build-app.ts); bounds what a slow or stalled client holds.
   */
  httpRequestTimeoutMs: number;
  /** Webhook sends in flight per worker process, and per endpoint across every worker. */
  webhookDelivery: { concurrency: number; perEndpointConcurrency: number };
  /**
   * On SIGTERM, how long /readyz answers 503 while requests are still served, so a load balancer
   * takes the process out of rotation before it stops listening (0: stop at once).
   */
  shutdownDrainMs: number;
  /**
   * Which peers' X-Forwarded-For to believe for the client address (per-address limits, logs):
   * false = none (the socket's address), a hop count, or addresses/CIDRs of the load balancers.
   */
  trustProxy: false | number | string[];
}

export class ConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Parse and validate. `env` defaults to the process environment; tests pass their own. */
export function loadConfig(env: Env = process.env, cwd: string = process.cwd()): Readonly<Config> {
  const problems: string[] = [];
  const get = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = get(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return Number(raw);
  };
  const flag = (name: string): boolean => {
    const raw = get(name);
    if (raw === undefined) return false;
    if (raw !== '0' && raw !== '1') problems.push(`${name} must be 0 or 1, got "${raw}"`);
    return raw === '1';
  };

  const port = integer('PORT', 3000, 0, 65535);
  const host = get('HOST') ?? '127.0.0.1';
  const production = get('NODE_ENV') === 'production';

  const databaseUrl = get('DATABASE_URL') ?? null;
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must start with postgres:// (or be unset for the embedded SQLite database)');
  }
  const dataDir = path.resolve(cwd, get('CDS_DATA_DIR') ?? 'data');

  const redisUrl = get('REDIS_URL') ?? null;
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) problems.push('REDIS_URL must start with redis:// or rediss://');

  const publicBaseUrl = (get('PUBLIC_BASE_URL') ?? `http://localhost:${port}`).replace(/\/+$/, '');
  try {
    const u = new URL(publicBaseUrl);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
  } catch {
    problems.push(`PUBLIC_BASE_URL must be an absolute http(s) URL, got "${publicBaseUrl}"`);
  }

  const certFile = get('TLS_CERT_FILE');
  const keyFile = get('TLS_KEY_FILE');
  let tls: Config['tls'] = null;
  if ((certFile === undefined) !== (keyFile === undefined)) {
    problems.push('TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  } else if (certFile !== undefined && keyFile !== undefined) {
    for (const [name, file] of [['TLS_CERT_FILE', certFile], ['TLS_KEY_FILE', keyFile]] as const) {
      if (!existsSync(file)) problems.push(`${name} points to "${file}", which does not exist`);
    }
    tls = { certFile, keyFile };
  }

  const rateLimits = {
    livePerSecond: integer('RATE_LIMIT_LIVE_PER_S', 100, 1, 1_000_000),
    sandboxPerSecond: integer('RATE_LIMIT_SANDBOX_PER_S', 25, 1, 1_000_000),
  };
  const apiKeyCacheSize = integer('API_KEY_CACHE_SIZE', 10_000, 0, 1_000_000);
  const decisionCacheMb = integer('DECISION_CACHE_MB', 32, 0, 65_536);
  const webhookAllowPrivateNetworks = flag('WEBHOOK_ALLOW_PRIVATE_NETWORKS');
  const webhookRetryDelaysMs = retryDelays(get('WEBHOOK_RETRY_DELAYS_MS'), production, problems);
  const gatewayUrl = get('CREDIT_GATEWAY_URL');
  const gatewayToken = get('CREDIT_GATEWAY_TOKEN');
  const gatewayTimeoutMs = integer('CREDIT_GATEWAY_TIMEOUT_MS', 1_500, 50, 30_000);
  let creditGateway: Config['creditGateway'] = null;
  const smtpUrl = get('SMTP_URL');
  if (smtpUrl !== undefined && !/^smtps?:\/\//.test(smtpUrl)) problems.push('SMTP_URL must start with smtp:// or smtps://');
  const smtp = smtpUrl === undefined ? null : { url: smtpUrl, from: get('SMTP_FROM') ?? 'Identity verification <no-reply@localhost>' };
  const smsUrl = get('SMS_GATEWAY_URL');
  if (smsUrl !== undefined && !/^https?:\/\//.test(smsUrl)) problems.push('SMS_GATEWAY_URL must be an http(s) URL');
  const smsGateway = smsUrl === undefined ? null : { url: smsUrl, token: get('SMS_GATEWAY_TOKEN') ?? null };
  if (gatewayUrl !== undefined) {
    if (!/^https:\/\/[^/@\s]+/.test(gatewayUrl)) problems.push('CREDIT_GATEWAY_URL must be an https:// URL without user-info');
    if (gatewayToken === undefined) problems.push('CREDIT_GATEWAY_TOKEN is required when CREDIT_GATEWAY_URL is set');
    creditGateway = { url: gatewayUrl, token: gatewayToken ?? '', timeoutMs: gatewayTimeoutMs };
  }
  const databasePoolSize = integer('DATABASE_POOL_SIZE', 10, 1, 1_000);
  const sqliteWriterThread = (get('CDS_SQLITE_WRITER_THREAD') ?? 'auto') as Config['sqliteWriterThread'];
  if (!['auto', 'always', 'off'].includes(sqliteWriterThread)) problems.push(`CDS_SQLITE_WRITER_THREAD must be auto, always or off, got "${sqliteWriterThread}"`);
  const databaseStatementTimeoutMs = integer('DATABASE_STATEMENT_TIMEOUT_MS', 15_000, 0, 3_600_000);
  const httpRequestTimeoutMs = integer('HTTP_REQUEST_TIMEOUT_MS', 300_000, 1_000, 3_600_000);
  const webhookDelivery = {
    concurrency: integer('WEBHOOK_CONCURRENCY', 64, 1, 4_096),
    perEndpointConcurrency: integer('WEBHOOK_ENDPOINT_CONCURRENCY', 8, 1, 1_024),
  };
  const shutdownDrainMs = integer('SHUTDOWN_DRAIN_MS', 0, 0, 600_000);
  const trustProxy = parseTrustProxy(get('TRUST_PROXY'), problems);
  const logLevel = get('LOG_LEVEL') ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    problems.push(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "${logLevel}"`);
  }

  // The encryption key: required in production; otherwise generated once into the data folder
  // so the zero-setup embedded service encrypts at rest from its first start.
  let dataEncryptionKey: Buffer = Buffer.alloc(0);
  let dataEncryptionKeySource: Config['dataEncryptionKeySource'] = 'environment';
  const rawKey = get('DATA_ENCRYPTION_KEY');
  if (rawKey !== undefined) {
    const decoded = decodeKey(rawKey);
    if (decoded === null) problems.push('DATA_ENCRYPTION_KEY must be 32 bytes as 64 hex characters or base64');
    else dataEncryptionKey = decoded;
  } else if (production) {
    problems.push('DATA_ENCRYPTION_KEY is required when NODE_ENV=production (32 bytes, hex or base64)');
  } else if (problems.length === 0) {
    dataEncryptionKey = loadOrCreateKeyFile(path.join(dataDir, 'encryption.key'));
    dataEncryptionKeySource = 'generated-file';
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({
    port, host, databaseUrl, dataDir, redisUrl, publicBaseUrl, dataEncryptionKey, dataEncryptionKeySource,
    webhookAllowPrivateNetworks, webhookRetryDelaysMs, tls, rateLimits: Object.freeze(rateLimits), apiKeyCacheSize, decisionCacheMb, logLevel, production, creditGateway, smtp, smsGateway,
    databasePoolSize, sqliteWriterThread, databaseStatementTimeoutMs, httpRequestTimeoutMs, webhookDelivery: Object.freeze(webhookDelivery), shutdownDrainMs, trustProxy: Array.isArray(trustProxy) ? Object.freeze(trustProxy) as string[] : trustProxy,
  });
}

/**
 * TRUST_PROXY: unset = trust no X-Forwarded-For (behind no proxy, a client could forge it); a whole
 * number = that many proxy hops; else a comma-separated list of addresses or CIDR ranges (or
 * `loopback`, `linklocal`, `uniquelocal`) of the load balancers whose X-Forwarded-For is believed.
 */
function parseTrustProxy(raw: string | undefined, problems: string[]): false | number | string[] {
  if (raw === undefined) return false;
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops >= 1 && hops <= 10) return hops;
  }
  const entries = raw.split(',').map((e) => e.trim()).filter((e) => e !== '');
  const valid = (entry: string): boolean => {
    if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true;
    const [address, prefix, ...rest] = entry.split('/');
    const family = isIP(address ?? '');
    if (family === 0 || rest.length > 0) return false;
    return prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
  };
  if (entries.length === 0 || !entries.every(valid)) {
    problems.push(`TRUST_PROXY must be a hop count from 1 to 10 or a comma-separated list of addresses or CIDR ranges (or loopback, linklocal, uniquelocal), got "${raw}"`);
    return false;
  }
  return entries;
}

/** WEBHOOK_RETRY_DELAYS_MS: 1 to 20 comma-separated waits of 100 ms to 30 days; attempts = waits + 1. */
function retryDelays(raw: string | undefined, production: boolean, problems: string[]): readonly number[] | null {
  if (raw === undefined) return null;
  if (production) {
    // The spec fixes the schedule for lenders; a shortened one would give up on a receiver within minutes.
    problems.push('WEBHOOK_RETRY_DELAYS_MS is for tests and soaks and cannot be set when NODE_ENV=production');
    return null;
  }
  const parts = raw.split(',').map((p) => p.trim());
  const max = 30 * 24 * 3600_000;
  if (parts.length > 20 || parts.some((p) => !/^\d+$/.test(p) || Number(p) < 100 || Number(p) > max)) {
    problems.push(`WEBHOOK_RETRY_DELAYS_MS must be 1 to 20 comma-separated whole milliseconds from 100 to ${max}, got "${raw}"`);
    return null;
  }
  return Object.freeze(parts.map(Number));
}

function decodeKey(raw: string): Buffer | null {
  // Typed as plain Buffer: the generic form differs between @types/node versions.
  if (/^[0-9a-fA-F]{64}$/.test(raw)) return Buffer.from(raw, 'hex');
  const b = Buffer.from(raw, 'base64');
  return b.length === 32 ? b : null;
}

function loadOrCreateKeyFile(file: string): Buffer {
  if (existsSync(file)) {
    const key = decodeKey(readFileSync(file, 'utf8').trim());
    if (key === null) throw new ConfigError([`${file} does not hold a 32-byte key; restore it or set DATA_ENCRYPTION_KEY`]);
    return key;
  }
  mkdirSync(path.dirname(file), { recursive: true });
  const key = randomBytes(32);
  // 'wx' fails if another process created it first; then we read theirs so both agree.
  try {
    writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    return key;
  } catch {
    return loadOrCreateKeyFile(file);
  }
}

/**
 * What `cds listen` takes from the environment (it runs on a lender's laptop, far from the
 * service's own configuration): `CDS_API_KEY` when `--api-key` is not given, and the service's
 * address (`CDS_API_BASE`, else `PUBLIC_BASE_URL`) when `--api-base` is not given.
 */
export function loadListenEnvironment(env: Env = process.env): { apiKey: string | undefined; apiBase: string | undefined } {
  const get = (name: string) => (env[name] === undefined || env[name]!.trim() === '' ? undefined : env[name]!.trim());
  return { apiKey: get('CDS_API_KEY'), apiBase: get('CDS_API_BASE') ?? get('PUBLIC_BASE_URL') };
}
