/**
 * PostgreSQL: the create path's reads by key keep their index whatever the table statistics.
 *
 * Its statements are named prepared statements (db/statements.ts), and after five executions
 * PostgreSQL may keep a generic plan, made without the values. On a table without statistics (a
 * new deployment before autovacuum's first ANALYZE, or the bench's database) such a plan once read
 * a returning applicant through `consumers_tenant` (tenant, environment) and filtered the tenant's
 * every consumer for the id: 1,242 index entries per create in the bench, growing with the tenant.
 * The applicant is now read by its primary key alone and its tenant and environment checked in code
 * (consumers.service.ts), as the poll's read is. These tests prepare the registered texts on a
 * connection of their own and EXPLAIN them under `plan_cache_mode = force_generic_plan`, on a
 * tenant with many consumers and no statistics; and count the rows the applicant read takes from
 * decisions for a consumer with many (its history through migration 0020's function, ADR 0038).
 * The poll's read and the idempotency records' (several keys at once) are checked the same way.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registeredStatements } from '../../../src/db/statements.js';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';
import { genericPlan } from '../../support/generic-plans.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';

const CONSUMERS = 2_000;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}
/** A plan's node and every node under it. */
const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

describe.runIf(await isPostgresReachable())('generic plans of the create path (PostgreSQL)', () => {
  let db: TestDatabase;
  let t: TestApp;
  let client: pg.Client;
  let consumerId: string;

  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    t = await createTestApp(db);
    client = new pg.Client({ connectionString: db.databaseUrl! });
    await client.connect();
    // No ANALYZE, whatever autovacuum does meanwhile: the plans below are made without statistics.
    for (const table of ['consumers', 'decisions', 'idempotency_keys']) await client.query(`alter table ${table} set (autovacuum_enabled = false)`);
    consumerId = t.tenant.sandbox.consumers[0]!.consumerId;
    // Many consumers of the same tenant and environment: copies of the seeded one under new ids.
    await client.query(
      `insert into consumers
         select (jsonb_populate_record(null::consumers, to_jsonb(c) || jsonb_build_object('id', 'copy-' || g))).*
         from consumers c, generate_series(1, $2::int) g where c.id = $1`,
      [consumerId, CONSUMERS],
    );
    // Creates for the returning applicant, keyed: every statement below has run.
    for (let i = 0; i < 3; i++) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/v1/decisions/bnpl',
        headers: { ...bearer(t.tenant.sandbox.apiKey), 'idempotency-key': `generic-plan-${i}` },
        payload: { consumer: { consumer_id: consumerId }, order: { amount: '100.00', currency: 'USD', installment_count: 4 } },
      });
      expect(response.statusCode).toBe(200);
    }
  }, 60_000);
  afterAll(async () => {
    await client?.end();
    await t?.close();
    await db?.drop();
  });

  // PostgreSQL's texts only (numbered placeholders): the registry is the process's, and the files
  // that ran before this one in the same test worker (vitest.config.ts) registered SQLite's too.
  const registered = (pattern: RegExp) => {
    const texts = registeredStatements().filter((text) => /\$1\b/.test(text) && pattern.test(text));
    expect(texts, `registered statements matching ${pattern}`).toHaveLength(1);
    return texts[0]!;
  };

  it('reads a returning applicant by the primary key of consumers, whatever the tenant holds', async () => {
    const text = registered(/history_counts[\s\S]*from "consumers" as "c" where c.id in \(select unnest\(\$1::text\[\]\)\)/);
    const plan = await genericPlan(client, text, [`{${consumerId}}`]);
    // The consumer row by its key, no filter over other rows.
    expect(plan).toMatch(/Index Scan using consumers_pkey on consumers c/);
    expect(plan).not.toMatch(/consumers_tenant/);
    expect(plan).not.toMatch(/Seq Scan on consumers/);
  });

  it("reads a consumer's history through the newest 50 of 2,003 decisions, planned with or without the values", async () => {
    const text = registered(/history_counts[\s\S]*from "consumers" as "c" where c.id in \(select unnest\(\$1::text\[\]\)\)/);
    // The applicant's decisions become many: copies of one under new ids, each a millisecond older.
    await client.query(
      `insert into decisions
         select (jsonb_populate_record(null::decisions, to_jsonb(d) || jsonb_build_object('id', 'copy-' || g, 'application_id', 'copy-' || g, 'created_at', d.created_at - g))).*
         from decisions d, generate_series(1, 2000) g where d.id = (select id from decisions where consumer_id = $1 limit 1)`,
      [consumerId],
    );
    // Every plan the read runs, the statement's own and those of statements inside the functions
    // it calls, as PostgreSQL executed them (auto_explain, to this session only, as notices).
    const notices: string[] = [];
    const onNotice = (notice: { message?: string }) => notices.push(notice.message ?? '');
    client.on('notice', onNotice);
    await client.query("load 'auto_explain'");
    for (const setting of ['log_min_duration = 0', 'log_nested_statements = on', 'log_analyze = on', "log_format = 'json'", "log_level = 'notice'"]) {
      await client.query(`set auto_explain.${setting}`);
    }
    try {
      for (const mode of ['force_custom_plan', 'force_generic_plan']) {
        await client.query(`set plan_cache_mode = ${mode}`);
        notices.length = 0;
        await client.query(text.replace('$1', `'{${consumerId}}'`));
        const scans = notices.flatMap((notice) => nodesOf(JSON.parse(notice.slice(notice.indexOf('{'))).Plan)).filter((node) => node['Relation Name'] === 'decisions');
        // Counted by the rows the executor took from decisions, not by pages: a session's
        // catalog reads (compiling the function, a cache reset while other tests create
        // databases) would blur a page count.
        expect(scans.length, `${mode}: a scan of decisions among ${notices.length} plans`).toBeGreaterThan(0);
        for (const scan of scans) {
          expect(scan['Node Type'], `${mode}: ${JSON.stringify(scan)}`).not.toMatch(/Bitmap|Seq Scan/);
          expect(scan['Actual Rows'] * scan['Actual Loops'], `${mode}: rows read from decisions`).toBeLessThanOrEqual(50);
        }
      }
    } finally {
      client.off('notice', onNotice);
      await client.query('reset plan_cache_mode');
      await client.query('reset auto_explain.log_min_duration');
    }
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: bearer(t.tenant.sandbox.apiKey),
      payload: { consumer: { consumer_id: consumerId }, order: { amount: '100.00', currency: 'USD', installment_count: 4 } },
    });
    expect(response.statusCode).toBe(200);
  });

  it('reads polled decisions by the primary key of decisions', async () => {
    const text = registered(/^select "id", [^]* from "decisions" where "id" = any\(\$1::text\[\]\)$/);
    const { rows } = await client.query<{ id: string }>('select id from decisions limit 2');
    const plan = await genericPlan(client, text, [`{${rows.map((row) => row.id).join(',')}}`]);
    expect(plan).toMatch(/decisions_pkey/);
    expect(plan).not.toMatch(/Seq Scan/);
  });

  it("finds keyed requests' records, several at once, each by the idempotency key's primary key", async () => {
    const text = registered(/unnest\(\$1::text\[\], \$2::text\[\], \$3::text\[\]\)[\s\S]*from "idempotency_keys" as "i"/);
    // Many records of the same tenant and environment, and still no statistics.
    await client.query(
      `insert into idempotency_keys
         select tenant_id, environment, idempotency_key || '-copy-' || g, fingerprint, status_code, response_body, request_id, created_at, expires_at
         from idempotency_keys, generate_series(1, 2000) g where idempotency_key = 'generic-plan-0'`,
    );
    const tenant = t.tenant.tenantId;
    const values = [`{${tenant},${tenant},${tenant}}`, '{sandbox,sandbox,live}', '{generic-plan-0,generic-plan-2,generic-plan-0}', '0'];
    const plan = await genericPlan(client, text, values);
    expect(plan).toMatch(/Index Scan using idempotency_keys_pk on idempotency_keys i/);
    expect(plan).not.toMatch(/Seq Scan on idempotency_keys|idempotency_keys_expiry/);
    // Each key with its scope: the live one was never stored.
    const { rows } = await client.query<{ environment: string; idempotency_key: string }>(text, values);
    expect(rows.map((row) => `${row.environment} ${row.idempotency_key}`).sort()).toEqual(['sandbox generic-plan-0', 'sandbox generic-plan-2']);
  });
});
