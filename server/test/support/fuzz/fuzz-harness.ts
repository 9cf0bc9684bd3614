/**
 * Runs generated requests against a target (the in-process app through inject(), or a real
 * `cds serve` over HTTP) and checks the properties every answer must have:
 *
 *   1. never a 5xx;
 *   2. every response has a Request-Id; every JSON 4xx is exactly {error, message, request_id},
 *      its code is in the error registry with that status, and request_id equals the header;
 *      a non-JSON 4xx exists only on the hosted pages and static surfaces;
 *   3. an HTML page never shows generated input unescaped and no answer carries a stack trace;
 *   4. nothing is written for a refused request: the row count of every table, read directly, is
 *      the same before and after, except for 2xx (a mutated request that is still valid succeeds)
 *      and the documented stored 422 of a request with an Idempotency-Key (idempotency_keys only);
 *   5. Object.prototype is untouched (in-process targets);
 *   6. after the run the process still answers /healthz, and no log line holds generated PII.
 *
 * The environment every generator starts from (keys, decisions, a hosted-page token and its CSRF
 * pair, a portal session) is built over HTTP, so both targets share it.
 */
import fc from 'fast-check';
import http from 'node:http';
import { sql, type Kysely } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { ERROR_REGISTRY } from '../../../src/http/errors/error-registry.js';
import { REFLECTION_MARKER, type FuzzRequest } from './hostile-arbitraries.js';
import { ROUTE_CATALOGUE, surfaceOf, type FuzzEnv } from './route-catalogue.js';

export interface FuzzResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface FuzzTarget {
  send(request: FuzzRequest): Promise<FuzzResponse>;
}

export function injectTarget(app: FastifyInstance, remoteAddress = '127.0.0.1'): FuzzTarget {
  return {
    async send(r) {
      const res = await app.inject({ method: r.method as 'GET', url: r.url, headers: r.headers, remoteAddress, ...(r.body !== undefined ? { payload: r.body } : {}) });
      return { status: res.statusCode, headers: res.headers as FuzzResponse['headers'], body: res.rawPayload };
    },
  };
}

/** A real server over HTTP/1.1 keep-alive. Header values travel as their UTF-8 bytes. */
export function httpTarget(baseUrl: string): FuzzTarget & { close(): void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  return {
    send(r) {
      return new Promise((resolve, reject) => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(r.headers)) {
          // Node's client refuses control bytes in a header (DEL, NUL...); the raw-socket cases send those.
          headers[k] = Buffer.from(v, 'utf8').toString('latin1').replace(/[^\t\x20-\x7e\x80-\xff]/g, '?');
        }
        if (r.body !== undefined) headers['content-length'] = String(r.body.length);
        // HEAD: a request the server's HTTP parser refuses (headers over 16 KiB) on a reused connection is
        // answered with a body, since the parser never learnt the method; lenient parsing reads past it.
        const lenient = r.method === 'HEAD';
        const req = http.request(baseUrl + r.url, { method: r.method, headers, agent, timeout: 30_000, insecureHTTPParser: lenient }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        });
        req.on('timeout', () => req.destroy(new Error(`timed out: ${r.method} ${r.url.slice(0, 200)}`)));
        req.on('error', reject);
        req.end(r.body);
      });
    },
    close: () => agent.destroy(),
  };
}

// ---------------------------------------------------------------------------------------------
// The starting environment, over HTTP

const json = (r: FuzzResponse) => JSON.parse(r.body.toString('utf8')) as Record<string, unknown>;
function expectStatus(r: FuzzResponse, status: number, what: string): FuzzResponse {
  if (r.status !== status) throw new Error(`fuzz setup: ${what} answered ${r.status}: ${r.body.toString('utf8').slice(0, 500)}`);
  return r;
}
function cookieValue(r: FuzzResponse, name: string): string {
  const set = ([] as string[]).concat(r.headers['set-cookie'] ?? []);
  for (const c of set) if (c.startsWith(`${name}=`)) return c.slice(name.length + 1).split(';')[0]!;
  throw new Error(`fuzz setup: no ${name} cookie`);
}

export const FUZZ_PII = {
  firstName: 'Fuzzinaqx', lastName: 'Piipersonzz', email: 'fuzz.pii.applicant@example.com', phone: '+14155550142', dob: '1979-11-23', line1: '77 Fuzzwood Terrace', ssnLast4: '6071',
};

export async function buildFuzzEnv(target: FuzzTarget): Promise<FuzzEnv> {
  const send = (method: string, url: string, headers: Record<string, string> = {}, body?: unknown) =>
    target.send({ method, url, headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { body: Buffer.from(JSON.stringify(body)) } : {}), note: 'setup' });

  // A portal owner through sign-up: it also hands out the sandbox key.
  const anon = expectStatus(await send('GET', '/portal/api/session'), 200, 'session probe');
  const anonCsrf = cookieValue(anon, 'cds_csrf');
  const email = 'fuzz.owner@example.com';
  const password = 'fuzz owner password 1';
  const signup = expectStatus(
    await send('POST', '/portal/api/signup', { cookie: `cds_csrf=${anonCsrf}`, 'x-csrf-token': anonCsrf }, { company_name: 'Fuzz Lender', name: 'Fuzz Owner', email, password }),
    201,
    'sign-up',
  );
  const sessionCookie = `cds_session=${cookieValue(signup, 'cds_session')}; cds_csrf=${cookieValue(signup, 'cds_csrf')}`;
  const csrf = cookieValue(signup, 'cds_csrf');
  const portal = (method: string, url: string, body?: unknown) => send(method, `/portal/api${url}`, { cookie: sessionCookie, 'x-csrf-token': csrf }, body);
  const sandbox = json(signup).sandbox_api_key as string;
  const live = (json(expectStatus(await portal('POST', '/api-keys', { environment: 'live' }), 201, 'live key')).secret as string);
  const doomed = json(expectStatus(await portal('POST', '/api-keys', { environment: 'sandbox' }), 201, 'key to revoke'));
  expectStatus(await portal('POST', `/api-keys/${(doomed.key as { id: string }).id}/revoke`), 200, 'revoke');

  const consumers = json(expectStatus(await portal('GET', '/sandbox/consumers'), 200, 'consumers')).data as Array<{ id: string; tier: string }>;
  const byTier = (tier: string) => consumers.find((c) => c.tier === tier)!.id;
  const dealer = json(expectStatus(await portal('POST', '/dealers/sandbox/dealers', { name: 'Fuzz Motors' }), 201, 'dealer'));

  const v1 = (method: string, url: string, body?: unknown) => send(method, `/v1${url}`, { authorization: `Bearer ${sandbox}` }, body);
  const txn = (amount: string) => ({ amount, currency: 'USD', merchant_name: 'Acme Furniture', merchant_category: 'furniture' });
  const approved = json(expectStatus(await v1('POST', '/decisions/bnpl', { consumer: { consumer_id: byTier('soft') }, transaction: txn('149.97') }), 200, 'bnpl'));
  const enhanced = json(expectStatus(await v1('POST', '/decisions/bnpl', { consumer: { consumer_id: byTier('enhanced') }, transaction: txn('1500.00') }), 200, 'pending bnpl'));
  const hard = json(expectStatus(await v1('POST', '/decisions/bnpl', { consumer: { consumer_id: byTier('hard') }, transaction: txn('6000.00') }), 200, 'hard bnpl'));
  const vehicle = { vin: '1HGCM8262RA004352', year: 2024, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00' };
  const auto = json(
    expectStatus(
      await v1('POST', '/decisions/auto-loan', { consumer: { consumer_id: byTier('soft') }, vehicle, loan: { amount: '16000.00', down_payment: '2000.00', term_months: 60, currency: 'USD' }, channel: 'direct' }),
      200,
      'auto loan',
    ),
  );
  const events = json(expectStatus(await v1('GET', '/events'), 200, 'events')).data as Array<{ id: string }>;

  const tokens = [enhanced, hard].map((d) => new URL(d.consumer_complete_url as string).pathname.split('/')[2]!);
  const page = expectStatus(await send('GET', `/verify/${tokens[0]}`), 200, 'verification page');
  const formCsrf = /name="csrf" value="([^"]+)"/.exec(page.body.toString('utf8'))?.[1];
  if (!formCsrf) throw new Error('fuzz setup: no csrf field on the verification page');

  return {
    keys: { sandbox, live, revoked: doomed.secret as string },
    softConsumerId: byTier('soft'),
    bnplDecisionIds: [approved.decision_id as string, enhanced.decision_id as string],
    autoLoanDecisionIds: [auto.decision_id as string],
    pendingDecisionIds: [enhanced.decision_id as string, hard.decision_id as string],
    eventIds: events.map((e) => e.id).slice(0, 3),
    dealerIds: [dealer.id as string],
    verify: { tokens, cookie: cookieValue(page, 'cds_verify'), csrf: formCsrf },
    portal: { sessionCookie, csrf, anonymousCookie: `cds_csrf=${anonCsrf}`, anonymousCsrf: anonCsrf, email, password },
    pii: FUZZ_PII,
  };
}

// ---------------------------------------------------------------------------------------------
// Row counts

/** Row counts of every table, in one statement (cheap enough to take around every request). */
export async function tableCounter(db: Kysely<unknown>, dialect: 'sqlite' | 'postgres'): Promise<() => Promise<Record<string, number>>> {
  const names =
    dialect === 'sqlite'
      ? (await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`.execute(db)).rows.map((r) => r.name)
      : (await sql<{ name: string }>`select tablename as name from pg_tables where schemaname = current_schema()`.execute(db)).rows.map((r) => r.name);
  if (names.length < 10) throw new Error(`only ${names.length} tables found`);
  const query = sql.raw(`select ${names.map((n) => `(select count(*) from "${n}") as "${n}"`).join(', ')}`);
  return async () => {
    const row = (await sql<Record<string, number | string>>`${query}`.execute(db)).rows[0]!;
    return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)]));
  };
}

function changedTables(before: Record<string, number>, after: Record<string, number>): string[] {
  return Object.keys(after).filter((k) => before[k] !== after[k]);
}

// ---------------------------------------------------------------------------------------------
// Properties

const STACK_TRACE = /\n\s+at \S.*[\\/].*:\d+:\d+|node_modules[\\/]|\.ts:\d+:\d+|\.js:\d+:\d+/;
const PROTOTYPE_NAMES = Object.getOwnPropertyNames(Object.prototype).sort().join(',');

function header(res: FuzzResponse, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** Every property of one answer; returns what is wrong (empty when all hold). */
export function responseProblems(req: FuzzRequest, res: FuzzResponse): string[] {
  const problems: string[] = [];
  const requestId = header(res, 'request-id');
  const type = header(res, 'content-type') ?? '';
  const text = res.body.toString('utf8');
  const surface = surfaceOf(req.url);
  if (res.status >= 500) problems.push(`status ${res.status}`);
  if (!requestId || !/^req_[A-Za-z0-9]{20}$/.test(requestId)) problems.push(`Request-Id header missing or malformed: ${String(requestId)}`);
  if (res.status >= 400 && req.method !== 'HEAD') {
    if (type.startsWith('application/json')) {
      let body: Record<string, unknown> | null = null;
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        problems.push('a JSON error body that does not parse');
      }
      if (body) {
        if (Object.keys(body).join(',') !== 'error,message,request_id') problems.push(`not the stable error body: keys ${Object.keys(body).join(',')}`);
        const entry = ERROR_REGISTRY[body.error as keyof typeof ERROR_REGISTRY] as { status: number } | undefined;
        if (!entry) problems.push(`error code not in the registry: ${String(body.error)}`);
        else if (entry.status !== res.status) problems.push(`error ${String(body.error)} has status ${entry.status} in the registry but ${res.status} on the wire`);
        if (typeof body.message !== 'string' || body.message.length === 0) problems.push('empty message');
        if (body.request_id !== requestId) problems.push(`request_id ${String(body.request_id)} differs from the Request-Id header ${String(requestId)}`);
      }
    } else if (surface === 'api') {
      problems.push(`a ${res.status} that is not JSON (${type}) on an API path`);
    } else if (surface === 'hosted' && !type.startsWith('text/html')) {
      problems.push(`a hosted-page ${res.status} that is neither JSON nor HTML (${type})`);
    }
  }
  if (type.startsWith('text/html') && text.includes(REFLECTION_MARKER)) problems.push('generated markup reflected unescaped in an HTML page');
  if (res.status >= 400 && STACK_TRACE.test(text)) problems.push('a stack trace in the body');
  return problems;
}

/** Whether the answer may have written, and where. */
function allowedWrites(req: FuzzRequest, res: FuzzResponse): 'any' | 'idempotency' | 'none' {
  if (res.status >= 200 && res.status < 400) return 'any';
  if (res.status === 422 && req.url.startsWith('/v1/') && req.method === 'POST' && req.headers['idempotency-key'] !== undefined) return 'idempotency';
  return 'none';
}

export interface FuzzRunOptions {
  target: FuzzTarget;
  env: FuzzEnv;
  /** Routes to run (default all). */
  routes?: string[];
  runsPerRoute: number;
  seed: number;
  countRows?: () => Promise<Record<string, number>>;
  /** In-process targets: Object.prototype is the server's. */
  checkPrototype?: boolean;
  /** Called with each result (statistics). */
  onResult?: (route: string, req: FuzzRequest, res: FuzzResponse) => void;
}

export interface FuzzRunReport {
  requests: number;
  byStatus: Record<string, number>;
  writesByStatus: Record<string, number>;
}

/**
 * Runs each route's arbitrary `runsPerRoute` times under fc.assert (seeded per route: seed + its
 * index) and throws fast-check's report, with the seed and the failing request, on the first
 * broken property.
 */
export async function runFuzz(options: FuzzRunOptions): Promise<FuzzRunReport> {
  const report: FuzzRunReport = { requests: 0, byStatus: {}, writesByStatus: {} };
  const routes = options.routes ?? Object.keys(ROUTE_CATALOGUE);
  for (const [i, route] of routes.entries()) {
    const entry = ROUTE_CATALOGUE[route];
    if (!entry) throw new Error(`no catalogue entry for ${route}`);
    await fc.assert(
      fc.asyncProperty(entry.request(options.env), async (req) => {
        const before = options.countRows ? await options.countRows() : null;
        const res = await answered(options.target.send(req), req);
        report.requests += 1;
        report.byStatus[res.status] = (report.byStatus[res.status] ?? 0) + 1;
        options.onResult?.(route, req, res);
        const problems = responseProblems(req, res);
        if (before && options.countRows) {
          const changed = changedTables(before, await options.countRows());
          if (changed.length > 0) report.writesByStatus[res.status] = (report.writesByStatus[res.status] ?? 0) + 1;
          const allowed = allowedWrites(req, res);
          if (allowed === 'none' && changed.length > 0) problems.push(`a refused request (${res.status}) wrote rows in ${changed.join(', ')}`);
          if (allowed === 'idempotency' && changed.some((t) => t !== 'idempotency_keys')) problems.push(`a stored 422 wrote rows outside idempotency_keys: ${changed.join(', ')}`);
        }
        if (options.checkPrototype) {
          const probe = {} as Record<string, unknown>;
          if (probe.polluted !== undefined || probe.isAdmin !== undefined || Object.getOwnPropertyNames(Object.prototype).sort().join(',') !== PROTOTYPE_NAMES) problems.push('Object.prototype was polluted');
        }
        if (problems.length > 0) {
          throw new Error(`${problems.join('; ')}\n  request: ${describeRequest(req)}\n  response: ${res.status} ${res.body.toString('utf8').slice(0, 600)}`);
        }
      }),
      { numRuns: options.runsPerRoute, seed: options.seed + i, endOnFailure: true, verbose: 0 },
    );
  }
  return report;
}

/** A request the server never answers is a finding (a held connection), not a test timeout. */
async function answered(pending: Promise<FuzzResponse>, req: FuzzRequest): Promise<FuzzResponse> {
  let timer: NodeJS.Timeout | undefined;
  const never = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${NO_ANSWER_MS / 1000} s\n  request: ${describeRequest(req)}`)), NO_ANSWER_MS);
  });
  try {
    return await Promise.race([pending, never]);
  } finally {
    clearTimeout(timer);
  }
}
const NO_ANSWER_MS = 30_000;

export function describeRequest(req: FuzzRequest): string {
  const body = req.body === undefined ? '(none)' : `${req.body.length} bytes: ${JSON.stringify(req.body.subarray(0, 300).toString('latin1'))}`;
  return `${req.method} ${req.url.slice(0, 300)} headers=${JSON.stringify(req.headers).slice(0, 400)} body=${body} [${req.note}]`;
}

/** Generated PII values found in a log text (must be none). */
export function piiInLogs(logText: string, pii: FuzzEnv['pii']): string[] {
  return Object.entries(pii)
    .filter(([k]) => k !== 'ssnLast4')
    .filter(([, v]) => logText.includes(v))
    .map(([k]) => k);
}

/** FUZZ_SEED when given (to reproduce a run), else a fresh one; printed either way. */
export function fuzzSeed(): number {
  const given = process.env.FUZZ_SEED;
  const seed = given !== undefined && given !== '' ? Number(given) : Math.floor(Math.random() * 2 ** 31);
  if (!Number.isInteger(seed)) throw new Error(`FUZZ_SEED must be an integer, got ${given}`);
  console.log(`hostile-input fuzz seed: ${seed} (reproduce with FUZZ_SEED=${seed})`);
  return seed;
}
