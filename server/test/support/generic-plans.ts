/**
 * The generic plan PostgreSQL would keep for a statement: prepared on `client` under
 * `plan_cache_mode = force_generic_plan` and EXPLAINed with `values` (given as text literals; the
 * statement's casts type them). What the plan-stability suites read (generic-plans.test.ts for
 * the create path, delivery-pipelined-cycle.test.ts for the delivery worker's cycle): a plan made
 * without the values must still reach its rows through an index.
 */
import type pg from 'pg';

let prepared = 0;

export async function genericPlan(client: pg.Client, text: string, values: readonly string[]): Promise<string> {
  const name = `generic_plan_${++prepared}`;
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
