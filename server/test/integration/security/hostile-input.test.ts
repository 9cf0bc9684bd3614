/**
 * Hostile input, in process (issue 11, item 3): every route of the app, enumerated from Fastify
 * itself, gets generated requests (fast-check, seeded: FUZZ_SEED reproduces a run) that start
 * from valid requests and mutate them, checked against the properties in fuzz-harness.ts: never a
 * 5xx, the stable error body with a registry code, no reflected markup or stack trace on pages,
 * nothing written for a refused request, no prototype pollution, no PII in the logs, and the app
 * still healthy afterwards. SQLite takes the bulk; PostgreSQL a smaller run of the same.
 * FUZZ_RUNS scales the count (per dialect, spread over the routes).
 */
import type { RouteOptions } from 'fastify';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { buildFuzzEnv, fuzzSeed, injectTarget, piiInLogs, runFuzz, tableCounter, type FuzzRunReport } from '../../support/fuzz/fuzz-harness.js';
import { ROUTE_CATALOGUE, type FuzzEnv } from '../../support/fuzz/route-catalogue.js';
import { createTestApp, type TestApp } from '../../support/test-app.js';

const SEED = fuzzSeed();
const ROUTES = Object.keys(ROUTE_CATALOGUE);
/** Requests per dialect: a few thousand on SQLite, a smaller run on PostgreSQL. */
const TOTAL = { sqlite: Number(process.env.FUZZ_RUNS ?? 3_200), postgres: Number(process.env.FUZZ_RUNS ?? 640) };

describe.each(await dialectMatrix())('hostile input [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  let env: FuzzEnv;
  let countRows: () => Promise<Record<string, number>>;
  const declared = new Map<string, Set<string>>();
  const report: FuzzRunReport = { requests: 0, byStatus: {}, writesByStatus: {} };

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, {
      env: { RATE_LIMIT_SANDBOX_PER_S: '1000000', RATE_LIMIT_LIVE_PER_S: '1000000' },
      build: {
        onRoute: (route: RouteOptions) => {
          // The 405 answers for a path's other methods are declared as one route with a method list.
          if (Array.isArray(route.method)) return;
          const set = declared.get(route.url) ?? new Set<string>();
          set.add(route.method);
          declared.set(route.url, set);
        },
      },
    });
    env = await buildFuzzEnv(injectTarget(t.app));
    countRows = await tableCounter(t.ctx.storage.db as unknown as Kysely<unknown>, dialect);
  });
  afterAll(async () => {
    console.log(`hostile input [${dialect}]: ${report.requests} requests; statuses ${JSON.stringify(report.byStatus)}; writes by status ${JSON.stringify(report.writesByStatus)}`);
    await t?.close();
    await db?.drop();
  });

  it('has a generator for every route the app declares, and no generator for a route that is gone', () => {
    const routes = [...declared.keys()].sort();
    expect(routes.length).toBeGreaterThan(50);
    expect(routes.filter((r) => !ROUTES.includes(r)), 'routes without a fuzz generator (add them to route-catalogue.ts)').toEqual([]);
    expect(ROUTES.filter((r) => !declared.has(r)), 'fuzz generators for routes that no longer exist').toEqual([]);
    for (const r of routes) expect([...declared.get(r)!].sort(), r).toEqual([...ROUTE_CATALOGUE[r]!.methods].sort());
  });

  it.each(ROUTES)('%s: generated requests keep every property', async (route) => {
    const runs = Math.max(2, Math.round(TOTAL[dialect] / ROUTES.length));
    const r = await runFuzz({ target: injectTarget(t.app), env, routes: [route], runsPerRoute: runs, seed: SEED + ROUTES.indexOf(route) * 7919, countRows, checkPrototype: true });
    report.requests += r.requests;
    for (const [s, n] of Object.entries(r.byStatus)) report.byStatus[s] = (report.byStatus[s] ?? 0) + n;
    for (const [s, n] of Object.entries(r.writesByStatus)) report.writesByStatus[s] = (report.writesByStatus[s] ?? 0) + n;
  }, 120_000);

  it('is still healthy afterwards, with Object.prototype untouched and no generated PII in any log line', async () => {
    expect(report.requests).toBeGreaterThan(0);
    const health = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(t.logs.lines.length).toBeGreaterThan(0);
    expect(piiInLogs(t.logs.text, env.pii)).toEqual([]);
  });
});
