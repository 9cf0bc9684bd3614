#!/usr/bin/env node
/**
 * `node bench/portal-reads.mjs`: what the portal's reads of a long history cost on the embedded
 * default, and whether they hold up the API (docs/performance.md, "eleventh session"; ADR 0027,
 * ADR 0029).
 *
 * Starts `cds serve --role api` (no delivery worker: the synthetic queue stays as written) on a
 * fresh data folder, signs up a portal account, then writes a synthetic history straight into the
 * SQLite file for that tenant's sandbox: `--deliveries` deliveries of one endpoint (newest
 * delivered, a few failed spread through, `--pending` pending at the oldest end, as when a
 * receiver was down for days) and `--decisions` decisions of the last 24 hours with their
 * latencies. Then, per portal read (the endpoint's delivery list by filter, the dashboard, the
 * decision explorer with a filter nothing matches), it measures the read's own latency, and the
 * latency of `/healthz` requests sent at a steady `--rate` while that read is repeated: a read that
 * runs on the event loop shows up there as the API's p99 and max. A baseline of `/healthz` alone
 * comes first. Prints a table; nothing is written. `--dist server/dist-old` serves another build
 * (A/B against the code before a change).
 */
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, log, percentile, round, runCli, serverEnv, startServer, useDist } from './run.mjs';

const { values } = parseArgs({
  options: {
    deliveries: { type: 'string', default: '100000' },
    pending: { type: 'string', default: '200' },
    decisions: { type: 'string', default: '100000' },
    repeats: { type: 'string', default: '10' },
    rate: { type: 'string', default: '500' },
    // Another build's dist folder (under server/, so its packages resolve), for A/B runs.
    dist: { type: 'string' },
  },
});
if (values.dist) useDist(values.dist);
const DELIVERIES = Number(values.deliveries);
const PENDING = Number(values.pending);
const DECISIONS = Number(values.decisions);
const REPEATS = Number(values.repeats);
const RATE = Number(values.rate);
const HOUR = 3600_000;

/** A portal session: cookies and the CSRF token, as the web app keeps them. */
function portalClient(base) {
  const cookies = new Map();
  let csrf = '';
  return async function request(method, url, body) {
    const headers = { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
    if (method !== 'GET') headers['x-csrf-token'] = csrf;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(base + url, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair.indexOf('=');
      cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    const json = (res.headers.get('content-type') ?? '').includes('json') ? await res.json() : null;
    if (json && typeof json.csrf_token === 'string') csrf = json.csrf_token;
    if (res.status >= 400) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
}

/** The synthetic history, written in one transaction while the server idles (WAL: it keeps serving). */
function writeHistory(file, tenantId) {
  const db = new Database(file);
  db.pragma('busy_timeout = 10000');
  const now = Date.now();
  const endpointId = '00000000-0000-4000-8000-00000000e001';
  // One of the sandbox consumers sign-up seeded: the decisions' applicant.
  const consumer = db.prepare(`select id from consumers where tenant_id = ? and environment = 'sandbox' limit 1`).get(tenantId);
  if (!consumer) throw new Error('sign-up seeded no sandbox consumer');
  db.transaction(() => {
    db.prepare(`insert into webhook_endpoints (id, tenant_id, environment, url, description, event_types_json, secret_sealed, state, consecutive_failures, created_at, updated_at)
                values (?, ?, 'sandbox', 'https://receiver.example/hooks', 'bench', '["*"]', 'unused', 'active', 0, ?, ?)`).run(endpointId, tenantId, now - 30 * 24 * HOUR, now);
    const event = db.prepare(`insert into events (id, tenant_id, environment, type, subject_id, data_json, created_at) values (?, ?, 'sandbox', ?, ?, '{}', ?)`);
    const delivery = db.prepare(`insert into webhook_deliveries (id, endpoint_id, event_id, tenant_id, environment, event_type, state, attempts, next_attempt_at, created_at, updated_at, finished_at)
                                 values (?, ?, ?, ?, 'sandbox', ?, ?, 1, ?, ?, ?, ?)`);
    for (let i = 0; i < DELIVERIES; i++) {
      const created = now - 29 * 24 * HOUR + Math.floor((i / DELIVERIES) * 29 * 24 * HOUR);
      const state = i < PENDING ? 'pending' : i % 333 === 7 ? 'failed' : 'delivered';
      const type = i % 4 === 0 ? 'decision.finalized' : 'decision.created';
      const id = `b${String(i).padStart(9, '0')}`;
      event.run(`e${id}`, tenantId, type, `s${id}`, created);
      delivery.run(`d${id}`, endpointId, `e${id}`, tenantId, type, state, state === 'pending' ? created + HOUR : null, created, created, state === 'pending' ? null : created);
    }
    const decision = db.prepare(`insert into decisions (id, application_id, tenant_id, environment, consumer_id, product, status, kyc_tier, kyc_status, outcome, currency,
                                   requested_amount_cents, merchant_name, merchant_category, expires_at, created_at, updated_at, completed_at, latency_ms)
                                 values (?, ?, ?, 'sandbox', ?, 'bnpl', 'complete', 'soft', 'skipped', ?, 'USD', 10000, 'Bench', 'electronics', ?, ?, ?, ?, ?)`);
    for (let i = 0; i < DECISIONS; i++) {
      const created = now - 24 * HOUR + Math.floor((i / DECISIONS) * 24 * HOUR);
      const id = `c${String(i).padStart(9, '0')}`;
      decision.run(id, id, tenantId, consumer.id, i % 10 < 7 ? 'approved' : i % 10 < 9 ? 'declined' : 'referred', created + HOUR, created, created, created + 5, 2 + (i % 97) / 10);
    }
  })();
  db.close();
  return endpointId;
}

/** `/healthz` at a steady rate for `seconds`, while `during` (if any) repeats a portal read. */
async function apiLatencyDuring(url, seconds, during) {
  let stop = false;
  const reads = [];
  const loop = during
    ? (async () => {
        while (!stop) {
          const started = performance.now();
          await during();
          reads.push(performance.now() - started);
        }
      })()
    : null;
  const result = await autocannon({ url: `${url}/healthz`, connections: 10, overallRate: RATE, duration: seconds });
  stop = true;
  await loop;
  return { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max, reads };
}

async function main() {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cds-portal-reads-'));
  const env = serverEnv({ port: await freePort(), dataDir });
  await runCli(['migrate'], env);
  const server = await startServer({ env, dataDir, cpuProfDir: null, sqlTiming: false, role: 'api' });
  try {
    const portal = portalClient(server.url);
    await portal('GET', '/portal/api/session');
    await portal('POST', '/portal/api/signup', { company_name: 'Bench Lending', name: 'Alex Admin', email: 'bench@example.com', password: 'correct horse battery' });
    const session = await portal('GET', '/portal/api/session');
    const tenantId = session.tenant?.id ?? session.user?.tenant_id;
    if (typeof tenantId !== 'string') throw new Error(`no tenant in the portal session: ${JSON.stringify(session)}`);
    log(`writing ${DELIVERIES} deliveries and ${DECISIONS} decisions into ${dataDir}`);
    const endpointId = writeHistory(path.join(dataDir, 'cds.sqlite'), tenantId);

    const list = (query) => `/portal/api/webhooks/sandbox/endpoints/${endpointId}/deliveries?${query}`;
    const reads = [
      ['delivery list, newest page', list('page=1')],
      ['delivery list, page 50', list('page=50')],
      ['delivery list, delivered', list('state=delivered')],
      ['delivery list, failed', list('state=failed')],
      ['delivery list, pending (the oldest rows)', list('state=pending')],
      ['delivery list, an event type', list('event_type=decision.finalized')],
      ['dashboard, the last 24 h', '/portal/api/dashboard/sandbox'],
      ['decision explorer, a product with no decisions', '/portal/api/decisions/sandbox?product=auto_loan'],
    ];
    const rows = [];
    const baseline = await apiLatencyDuring(server.url, 5, null);
    rows.push(['`/healthz` alone (baseline)', '–', baseline]);
    for (const [name, url] of reads) {
      for (let i = 0; i < 2; i++) await portal('GET', url); // warm: statements prepared, thread started
      const alone = [];
      for (let i = 0; i < REPEATS; i++) {
        const started = performance.now();
        await portal('GET', url);
        alone.push(performance.now() - started);
      }
      alone.sort((a, b) => a - b);
      rows.push([name, round(percentile(alone, 0.5), 2), await apiLatencyDuring(server.url, 5, () => portal('GET', url))]);
    }
    console.log(`\n${DELIVERIES.toLocaleString('en-US')} deliveries of one endpoint, ${DECISIONS.toLocaleString('en-US')} decisions in 24 h; /healthz at ${RATE}/s (10 connections) meanwhile\n`);
    console.log('| Portal read | read ms (median, alone) | reads meanwhile | /healthz p50 / p99 / max ms meanwhile |');
    console.log('|---|--:|--:|--:|');
    for (const [name, median, api] of rows) console.log(`| ${name} | ${median} | ${api.reads.length || '–'} | ${api.p50} / ${api.p99} / ${api.max} |`);
  } finally {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  log(`portal-reads: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
