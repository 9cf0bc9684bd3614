/**
 * kill -9 leaves no half-written state. Creating a tenant is one transaction (tenant, two API keys,
 * three sandbox consumers); processes creating tenants are SIGKILLed at random moments, then SQL
 * checks that every tenant is whole, nothing is orphaned and every tenant reported as created is
 * there. A SIGKILLed server starts again on the same storage and the schema is still up to date.
 */
import Sqlite from 'better-sqlite3';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import {
  cleanupProcesses, databaseEnv, DIST_URL, pollUntil, runCli, sleep, startCli, startNodeScript, startServer, type CliResult, type RunningCli,
} from '../../support/server-process.js';

type Row = Record<string, unknown>;

/** Run read-only checks with the dialect's own driver (not the application's code). */
async function query(db: TestDatabase, text: string): Promise<Row[]> {
  if (db.databaseUrl === null) {
    const sqlite = new Sqlite(path.join(db.dataDir, 'cds.sqlite'));
    try {
      return sqlite.prepare(text).all() as Row[];
    } finally {
      sqlite.close();
    }
  }
  const client = new pg.Client({ connectionString: db.databaseUrl });
  await client.connect();
  try {
    return (await client.query(text)).rows as Row[];
  } finally {
    await client.end();
  }
}

/** Every tenant whole, nothing orphaned; returns the tenant ids. */
async function expectOnlyWholeTenants(db: TestDatabase): Promise<Set<string>> {
  const tenants = await query(
    db,
    `select t.id,
       (select count(*) from api_keys k where k.tenant_id = t.id and k.environment = 'sandbox') as sandbox_keys,
       (select count(*) from api_keys k where k.tenant_id = t.id and k.environment = 'live') as live_keys,
       (select count(*) from consumers c where c.tenant_id = t.id) as consumers,
       (select count(*) from consumers c where c.tenant_id = t.id and c.environment = 'sandbox'
          and c.sandbox_profile in ('soft', 'enhanced', 'hard')) as seeded,
       (select count(distinct c.sandbox_profile) from consumers c where c.tenant_id = t.id) as tiers
     from tenants t`,
  );
  const broken = tenants.filter(
    (t) => Number(t.sandbox_keys) !== 1 || Number(t.live_keys) !== 1 || Number(t.consumers) !== 3 || Number(t.seeded) !== 3 || Number(t.tiers) !== 3,
  );
  expect(broken, 'half-provisioned tenants').toEqual([]);
  const [orphans] = await query(
    db,
    `select
       (select count(*) from api_keys where tenant_id not in (select id from tenants)) as keys,
       (select count(*) from consumers where tenant_id not in (select id from tenants)) as consumers`,
  );
  expect({ keys: Number(orphans!.keys), consumers: Number(orphans!.consumers) }, 'orphaned rows').toEqual({ keys: 0, consumers: 0 });
  if (db.dialect === 'sqlite') {
    expect(await query(db, 'pragma integrity_check')).toEqual([{ integrity_check: 'ok' }]);
    expect(await query(db, 'pragma foreign_key_check')).toEqual([]);
  }
  return new Set(tenants.map((t) => String(t.id)));
}

/** Creates tenants through the compiled service in a tight loop, printing each id once committed. */
const TIGHT_LOOP = `
import { loadConfig } from '${DIST_URL}config/config.js';
import { createContext } from '${DIST_URL}app/context.js';
import { createLogger } from '${DIST_URL}lib/logger.js';
const ctx = createContext(loadConfig(), { logger: createLogger('silent') });
process.stdout.write('ready\\n');
for (let i = 0; ; i++) {
  const t = await ctx.tenants.createTenant({ name: 'tight-' + i });
  process.stdout.write(t.tenantId + '\\n');
}
`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const randomBetween = (min: number, max: number) => min + Math.floor(Math.random() * (max - min));

/** Wait for the process up to `ms`, else SIGKILL it. */
async function killAfter(run: RunningCli, ms: number): Promise<CliResult> {
  const finished = await Promise.race([run.result, sleep(ms).then(() => null)]);
  return finished ?? run.kill9();
}

afterAll(cleanupProcesses);

describe.each(await dialectMatrix())('crash safety [%s]', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    const migrated = await runCli(['migrate'], databaseEnv(db));
    expect(migrated.code, migrated.stderr).toBe(0);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('SIGKILL during `cds tenants create` (several processes at once) leaves only whole tenants', async () => {
    const env = databaseEnv(db);
    const reported = new Set<string>();
    const outcomes = { completed: 0, killed: 0 };
    const unexpected: CliResult[] = [];

    // How long one run takes on this machine now (the bundled CLI starts in a fraction of what it
    // used to): the kills below are drawn across that span and a little past it, so most runs are
    // killed at a random moment and some finish, however fast or loaded the machine is.
    const startedAt = performance.now();
    const probe = await runCli(['tenants', 'create', '--name', 'crash-probe', '--json'], env);
    expect(probe.code, probe.stderr).toBe(0);
    reported.add((JSON.parse(probe.stdout) as { tenant_id: string }).tenant_id);
    const runMs = performance.now() - startedAt;

    // Several concurrent loops of the real CLI, each run killed at a random moment (or finishing).
    const cliLoop = async (worker: number) => {
      for (let i = 0; i < 5; i++) {
        const run = startCli(['tenants', 'create', '--name', `crash-${worker}-${i}`, '--json'], env);
        const r = await killAfter(run, randomBetween(50, Math.max(300, Math.round(runMs * 1.5))));
        if (r.signal === 'SIGKILL') outcomes.killed += 1;
        else if (r.code === 0) {
          outcomes.completed += 1;
          reported.add((JSON.parse(r.stdout) as { tenant_id: string }).tenant_id);
        } else unexpected.push(r);
      }
    };
    // And drivers creating tenants back to back, so kills land inside transactions.
    const tightLoop = async () => {
      for (let i = 0; i < 3; i++) {
        const run = startNodeScript(TIGHT_LOOP, env);
        // Once it is committing tenants back to back, kill it at a random moment.
        const exited = () => run.child.exitCode !== null || run.child.signalCode !== null;
        await pollUntil(async () => run.stdoutLines.some((l) => UUID.test(l)) || exited(), { timeoutMs: 20_000, intervalMs: 20 });
        const r = await killAfter(run, randomBetween(0, 400));
        if (r.signal !== 'SIGKILL' && r.code !== 0) unexpected.push(r);
        for (const line of r.stdout.split('\n')) if (UUID.test(line)) reported.add(line);
      }
    };
    await Promise.all([cliLoop(1), cliLoop(2), cliLoop(3), tightLoop()]);

    expect(unexpected.map((r) => `code ${r.code}: ${r.stderr}`)).toEqual([]);
    const tenantIds = await expectOnlyWholeTenants(db);
    // Durable: every tenant a process reported as created is there, whole.
    expect([...reported].filter((id) => !tenantIds.has(id)), 'reported but missing').toEqual([]);
    expect(reported.size).toBeGreaterThan(0);
    expect(outcomes.killed, 'no CLI run was killed: the random delays are too long').toBeGreaterThan(0);

    // The storage is still fully usable afterwards.
    const after = await runCli(['tenants', 'create', '--name', 'After the crashes', '--json'], env);
    expect(after.code, after.stderr).toBe(0);
    await expectOnlyWholeTenants(db);
  }, 60_000);

  it('a SIGKILLed server starts again on the same storage; migrate reports up to date', async () => {
    const env = databaseEnv(db);
    const created = await runCli(['tenants', 'create', '--name', 'Restart Lender', '--json'], env);
    expect(created.code, created.stderr).toBe(0);
    const key = (JSON.parse(created.stdout) as { sandbox: { api_key: string } }).sandbox.api_key;
    const authed = { headers: { authorization: `Bearer ${key}` } };

    const first = await startServer({ env });
    expect((await first.request('/v1/x', authed)).status).toBe(404);
    // Kill it in the middle of traffic.
    const inFlight = Array.from({ length: 20 }, () => first.request('/v1/x', authed).catch(() => null));
    await sleep(randomBetween(0, 30));
    const exit = await first.kill9();
    expect(exit.signal).toBe('SIGKILL');
    await Promise.all(inFlight);

    const second = await startServer({ env });
    try {
      expect((await second.request('/healthz')).status).toBe(200);
      expect((await second.request('/readyz')).status).toBe(200);
      expect((await second.request('/v1/x', authed)).status).toBe(404);
      expect(second.logs().some((l) => l.msg === 'credit decisioning service ready')).toBe(true);
    } finally {
      const stopped = await second.stop();
      expect(stopped.code).toBe(0);
    }

    const migrate = await runCli(['migrate'], env);
    expect(migrate.code, migrate.stderr).toBe(0);
    expect(migrate.stderr).toMatch(/up to date/i);
    await expectOnlyWholeTenants(db);
  }, 60_000);
});
