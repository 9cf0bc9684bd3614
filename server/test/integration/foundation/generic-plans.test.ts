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
 * tenant with many consumers and no statistics; and count the pages the applicant read touches
 * for a consumer with many decisions (its history through migration 0020's function, ADR 0038).
 * The poll's read and the idempotency record's are checked the same way.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registeredStatements } from '../../../src/db/statements.js';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';

const CONSUMERS = 2_000;

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

  /** The generic plan of a registered text, with these values for EXPLAIN EXECUTE. */
  async function genericPlan(text: string, values: readonly string[]): Promise<string> {
    const name = `plan_${Math.random().toString(36).slice(2)}`;
    await client.query(`prepare ${name} as ${text}`);
    await client.query('set plan_cache_mode = force_generic_plan');
    try {
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(`explain execute ${name}(${values.map((v) => `'${v}'`).join(', ')})`);
      return rows.map((row) => row['QUERY PLAN']).join('\n');
    } finally {
      await client.query('reset plan_cache_mode');
      await client.query(`deallocate ${name}`);
    }
  }

  const registered = (pattern: RegExp) => {
    const texts = registeredStatements().filter((text) => pattern.test(text));
    expect(texts, `registered statements matching ${pattern}`).toHaveLength(1);
    return texts[0]!;
  };

  it('reads a returning applicant by the primary key of consumers, whatever the tenant holds', async () => {
    const text = registered(/history_counts[\s\S]*from "consumers" as "c" where c.id in \(select unnest\(\$1::text\[\]\)\)/);
    const plan = await genericPlan(text, [`{${consumerId}}`]);
    // The consumer row by its key, no filter over other rows.
    expect(plan).toMatch(/Index Scan using consumers_pkey on consumers c/);
    expect(plan).not.toMatch(/consumers_tenant/);
    expect(plan).not.toMatch(/Seq Scan on consumers/);
  });

  it("reads a consumer's history through as few pages at 2,000 decisions as at three, planned with or without the values", async () => {
    const text = registered(/history_counts[\s\S]*from "consumers" as "c" where c.id in \(select unnest\(\$1::text\[\]\)\)/);
    const pagesRead = async (mode: string) => {
      await client.query(`set plan_cache_mode = ${mode}`);
      try {
        const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: Record<string, number> }> }>(`explain (analyze, buffers, format json) ${text}`.replace('$1', `'{${consumerId}}'`));
        const plan = rows[0]!['QUERY PLAN'][0]!.Plan;
        return (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
      } finally {
        await client.query('reset plan_cache_mode');
      }
    };
    const few = await pagesRead('force_custom_plan');
    // The applicant's decisions become many: copies of one under new ids, each a millisecond older.
    await client.query(
      `insert into decisions
         select (jsonb_populate_record(null::decisions, to_jsonb(d) || jsonb_build_object('id', 'copy-' || g, 'application_id', 'copy-' || g, 'created_at', d.created_at - g))).*
         from decisions d, generate_series(1, 2000) g where d.id = (select id from decisions where consumer_id = $1 limit 1)`,
      [consumerId],
    );
    // The history window is 50 decisions: the newest 50 are read, not all 2,003 (about 220 heap
    // pages here when a bitmap scan and a sort read them all).
    for (const mode of ['force_custom_plan', 'force_generic_plan']) {
      const many = await pagesRead(mode);
      expect(many, `${mode}: ${many} pages with 2,003 decisions, ${few} with 3`).toBeLessThan(few + 80);
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
    const plan = await genericPlan(text, [`{${rows.map((row) => row.id).join(',')}}`]);
    expect(plan).toMatch(/decisions_pkey/);
    expect(plan).not.toMatch(/Seq Scan/);
  });

  it("finds a keyed request's record by the idempotency key's primary key", async () => {
    const text = registered(/^select "fingerprint", "status_code", "response_body", "request_id" from "idempotency_keys"/);
    const plan = await genericPlan(text, [t.tenant.tenantId, 'sandbox', 'generic-plan-0', '0']);
    expect(plan).toMatch(/idempotency_keys_pk/);
    expect(plan).not.toMatch(/Seq Scan|idempotency_keys_expiry/);
  });
});
