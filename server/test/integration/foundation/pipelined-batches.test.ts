/**
 * PostgreSQL: the group commit's planned units as pipelined batches (group-commit.ts, ADR 0037).
 * A real PostgreSQL; the storage's pipelined pool is wrapped to record every statement a batch
 * sends and how many answers its connection had received when it went out, so round trips can be
 * counted (statements sent before any new answer arrived share one).
 *
 * What must hold: a batch's BEGIN and every unit's statements go out before any answer comes back,
 * and its COMMIT once they are all in; a unit whose statement fails, or finds other than its plan
 * expects, gets its failure (or runs as its function, when the plan is out of date) and writes
 * nothing, while its batch-mates run again and commit; a function unit in line keeps its place;
 * a COMMIT that fails fails the batch and writes nothing; and through the HTTP API, creates (keyed
 * or not) run as plans, and a webhook endpoint created after the fan-out last looked still gets
 * every event of the next create.
 */
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openStorage, type PipelinedPool, type Storage } from '../../../src/db/database.js';
import { createTransactionRunner, PlannedUnitFailed, RUN_AS_FUNCTION, type PlannableUnit } from '../../../src/db/group-commit.js';
import type { Database } from '../../../src/db/schema.js';
import type { PlannedStatement } from '../../../src/db/sqlite-writer-thread.js';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const SCHEMA = [
  'create table pb_rows (name varchar(100) primary key)',
  'create table pb_parents (id integer primary key)',
  'create table pb_children (parent_id integer not null references pb_parents (id) deferrable initially deferred)',
];

const insertRow = (name: string): PlannedStatement => ({ sql: 'insert into pb_rows (name) values ($1)', parameters: [name] });

/** A unit that exists only as a plan: its function fails the test if the runner ever calls it. */
function planOnly<T>(value: T, statements: PlannedStatement[], outdated?: () => void): PlannableUnit<T> {
  const unit: PlannableUnit<T> = () => Promise.reject(new Error('the function of a planned unit ran'));
  unit.planned = outdated ? { statements, value, outdated } : { statements, value };
  return unit;
}

interface Sent {
  text: string;
  /** Answers this connection had received when the statement went out. */
  answered: number;
}

/** The storage's pipelined pool, recording what each connection sends. */
function recording(inner: PipelinedPool): { pool: PipelinedPool; sent: Sent[][] } {
  const sent: Sent[][] = [];
  const pool: PipelinedPool = {
    connect: async () => {
      const connection = await inner.connect();
      const mine: Sent[] = [];
      sent.push(mine);
      let answered = 0;
      return {
        query: <R>(text: string, values?: readonly unknown[]) => {
          mine.push({ text, answered });
          const answer = connection.query<R>(text, values);
          answer.then(
            () => (answered += 1),
            () => (answered += 1),
          );
          return answer;
        },
        corked: (send: () => void) => connection.corked(send),
        release: (destroy?: boolean) => connection.release(destroy),
      };
    },
  };
  return { pool, sent };
}

/** One connection's statements as transactions (from each BEGIN), each as its round trips. */
function roundTrips(statements: Sent[]): string[][][] {
  const transactions: Sent[][] = [];
  for (const s of statements) {
    if (s.text.startsWith('begin') || transactions.length === 0) transactions.push([]);
    transactions[transactions.length - 1]!.push(s);
  }
  return transactions.map((tx) => {
    const trips: string[][] = [];
    let last = -1;
    for (const s of tx) {
      if (s.answered !== last) trips.push([]);
      last = s.answered;
      trips[trips.length - 1]!.push(s.text.startsWith('begin') ? 'begin' : s.text.startsWith('insert') ? 'insert' : s.text);
    }
    return trips;
  });
}

describe.skipIf(!(await isPostgresReachable()))('planned units as pipelined batches [postgres]', () => {
  let testDb: TestDatabase;
  let storage: Storage;

  beforeAll(async () => {
    testDb = await createTestDatabase('postgres');
    storage = openStorage({ databaseUrl: testDb.databaseUrl, dataDir: testDb.dataDir, poolSize: 6 });
    await migrateToLatest(storage.db);
    for (const statement of SCHEMA) await sql.raw(statement).execute(storage.db);
  });
  afterAll(async () => {
    await storage?.close();
    await testDb?.drop();
  });

  /** Read on the main pool, not a batch's connection: only committed rows show. */
  const present = async (...names: string[]) => {
    const { rows } = await sql<{ name: string }>`select name from pb_rows`.execute(storage.readDb);
    const have = new Set(rows.map((r) => r.name));
    return names.filter((n) => have.has(n));
  };

  it('sends the BEGIN and every unit of a batch before any answer, then the COMMIT: two round trips for the batch', async () => {
    const { pool, sent } = recording(storage.pipelined!);
    const runner = createTransactionRunner({ ...storage, pipelined: pool }, { maxBatches: 1 });
    expect(runner.plansWanted()).toBe(true);
    const names = Array.from({ length: 12 }, (_, i) => `trips-${i}`);
    const results = await Promise.all(names.map((n) => runner.run(planOnly(n, [insertRow(n)]))));
    expect(results).toEqual(names);
    expect(await present(...names)).toEqual(names);
    expect(runner.stats()).toMatchObject({ batches: 1, units: 12, failedUnits: 0, largestBatch: 12 });
    expect(sent.flatMap(roundTrips)).toEqual([[['begin', ...names.map(() => 'insert')], ['commit']]]);
  });

  it('runs planned units as functions when pipelined batches are turned off, and then wants no plans', async () => {
    const runner = createTransactionRunner(storage, { pipelined: false });
    expect(runner.plansWanted()).toBe(false);
    const unit: PlannableUnit<string> = async (trx) => {
      await sql`insert into pb_rows (name) values ('off-function')`.execute(trx);
      return 'function';
    };
    unit.planned = { statements: [insertRow('off-plan')], value: 'plan' };
    expect(await runner.run(unit)).toBe('function');
    expect(await present('off-function', 'off-plan')).toEqual(['off-function']);
  });

  it('fails a unit whose statement fails with PostgreSQL\'s error and writes none of it; its batch-mates run again and commit', async () => {
    const runner = createTransactionRunner(storage, { maxBatches: 1 });
    await runner.run(planOnly('taken', [insertRow('pb-taken')]));
    const before = runner.run(planOnly('before', [insertRow('fails-before')]));
    const failing = runner.run(planOnly('failing', [insertRow('fails-first-write'), insertRow('pb-taken')]));
    const after = runner.run(planOnly('after', [insertRow('fails-after')]));
    await expect(failing).rejects.toMatchObject({ code: '23505' });
    expect(await Promise.all([before, after])).toEqual(['before', 'after']);
    expect(await present('fails-before', 'fails-after', 'fails-first-write')).toEqual(['fails-before', 'fails-after']);
    expect(runner.stats()).toMatchObject({ failedUnits: 1, failedBatches: 0, rerunUnits: 2 });
  });

  it('fails a unit whose statement does not find what its plan expects, with that failure, and writes none of it', async () => {
    const runner = createTransactionRunner(storage, { maxBatches: 1 });
    const noRow = runner.run(planOnly('x', [insertRow('no-row-write'), { sql: "select name from pb_rows where name = 'absent'", parameters: [], expect: { kind: 'row', failure: 'no-such-row' } }]));
    const wrongValue = runner.run(
      planOnly('y', [insertRow('wrong-value-write'), { sql: 'select count(*)::text from pb_rows where name = $1', parameters: ['pb-taken'], expect: { kind: 'equals', value: '2', failure: 'not-two' } }]),
    );
    const rightRow = runner.run(planOnly('z', [insertRow('right-row-write'), { sql: 'select name from pb_rows where name = $1', parameters: ['pb-taken'], expect: { kind: 'row', failure: 'unexpected' } }]));
    const rightValue = runner.run(
      planOnly('w', [insertRow('right-value-write'), { sql: 'select count(*)::text from pb_rows where name = $1', parameters: ['pb-taken'], expect: { kind: 'equals', value: '1', failure: 'unexpected' } }]),
    );
    await expect(noRow).rejects.toBeInstanceOf(PlannedUnitFailed);
    await expect(noRow).rejects.toMatchObject({ failure: 'no-such-row' });
    await expect(wrongValue).rejects.toMatchObject({ failure: 'not-two' });
    expect(await Promise.all([rightRow, rightValue])).toEqual(['z', 'w']);
    expect(await present('no-row-write', 'wrong-value-write', 'right-row-write', 'right-value-write')).toEqual(['right-row-write', 'right-value-write']);
  });

  it('runs the function of a unit whose plan is out of date instead, and says so to the plan', async () => {
    const runner = createTransactionRunner(storage, { maxBatches: 1 });
    let outdated = 0;
    const unit: PlannableUnit<string> = async (trx) => {
      await sql`insert into pb_rows (name) values ('function-write')`.execute(trx);
      return 'from the function';
    };
    unit.planned = {
      statements: [insertRow('plan-write'), { sql: 'select count(*)::text from pb_rows', parameters: [], expect: { kind: 'equals', value: 'never', failure: RUN_AS_FUNCTION } }],
      value: 'from the plan',
      outdated: () => outdated++,
    };
    const mate = runner.run(planOnly('mate', [insertRow('outdated-mate')]));
    expect(await runner.run(unit)).toBe('from the function');
    expect(await mate).toBe('mate');
    expect(outdated).toBe(1);
    expect(await present('plan-write', 'function-write', 'outdated-mate')).toEqual(['function-write', 'outdated-mate']);
  });

  it('runs every unit of a batch whose plan is out of date as its function after one rollback, not one batch per stale plan', async () => {
    const runner = createTransactionRunner(storage, { maxBatches: 1 });
    let outdated = 0;
    const stale = (name: string): PlannableUnit<string> => {
      const unit: PlannableUnit<string> = async (trx) => {
        await sql`insert into pb_rows (name) values (${`${name}-function`})`.execute(trx);
        return `${name} from the function`;
      };
      unit.planned = {
        statements: [insertRow(`${name}-plan`), { sql: "select 'now'", parameters: [], expect: { kind: 'equals', value: 'then', failure: RUN_AS_FUNCTION } }],
        value: `${name} from the plan`,
        outdated: () => outdated++,
      };
      return unit;
    };
    const results = await Promise.all([runner.run(planOnly('fresh', [insertRow('stale-fresh')])), runner.run(stale('stale-1')), runner.run(stale('stale-2')), runner.run(stale('stale-3'))]);
    expect(results).toEqual(['fresh', 'stale-1 from the function', 'stale-2 from the function', 'stale-3 from the function']);
    expect(outdated).toBe(3);
    // The rolled-back batch, the fresh plan again, and the three functions together.
    expect(runner.stats()).toMatchObject({ batches: 3, rerunUnits: 1, failedUnits: 0 });
    expect(await present('stale-fresh', 'stale-1-function', 'stale-2-function', 'stale-3-function', 'stale-1-plan')).toEqual([
      'stale-fresh',
      'stale-1-function',
      'stale-2-function',
      'stale-3-function',
    ]);
  });

  it('keeps the order of the queue across pipelined and function batches: a function unit sees the planned writes before it, not those after', async () => {
    const runner = createTransactionRunner(storage, { maxBatches: 1 });
    const seen = async (trx: Kysely<Database>) =>
      Number((await sql<{ n: string }>`select count(*) as n from pb_rows where name in ('order-1', 'order-3')`.execute(trx)).rows[0]!.n);
    const [, middle, , last] = await Promise.all([
      runner.run(planOnly('1', [insertRow('order-1')])),
      runner.run(seen),
      runner.run(planOnly('3', [insertRow('order-3')])),
      runner.run(seen),
    ]);
    expect([middle, last]).toEqual([1, 2]);
  });

  it('fails every unit of a batch whose COMMIT fails, writes nothing, and serves the next batch', async () => {
    const runner = createTransactionRunner(storage, { maxBatches: 1, maxBatch: 8 });
    const orphan: PlannedStatement = { sql: 'insert into pb_children (parent_id) values ($1)', parameters: [424242] };
    const batch = [
      runner.run(planOnly('a', [insertRow('commit-fails-a')])),
      runner.run(planOnly('orphan', [orphan])),
      runner.run(planOnly('b', [insertRow('commit-fails-b')])),
    ];
    // The deferred foreign key is checked at COMMIT: PostgreSQL refuses it there.
    for (const unit of batch) await expect(unit).rejects.toMatchObject({ code: '23503' });
    expect(await present('commit-fails-a', 'commit-fails-b')).toEqual([]);
    expect(runner.stats().failedBatches).toBe(1);
    expect(await runner.run(planOnly('next', [insertRow('after-failed-commit')]))).toBe('next');
    expect(await present('after-failed-commit')).toEqual(['after-failed-commit']);
  });

  it('fails the units of a batch whose connection is lost, and ends that connection instead of reusing it', async () => {
    let destroyed = 0;
    let rollbacks = 0;
    // The storage's pipelined pool, but the connection is lost when the COMMIT goes out (and the
    // ROLLBACK after it fails the same way).
    const losing: PipelinedPool = {
      connect: async () => {
        const inner = await storage.pipelined!.connect();
        return {
          query: async <R>(text: string, values?: readonly unknown[]) => {
            if (text === 'rollback') rollbacks++;
            if (text === 'commit' || text === 'rollback') throw new Error('Connection terminated unexpectedly');
            return inner.query<R>(text, values);
          },
          corked: (send: () => void) => inner.corked(send),
          release: (destroy?: boolean) => {
            if (destroy) destroyed++;
            // Ended either way: its transaction is still open (PostgreSQL undoes it as the connection closes).
            inner.release(true);
          },
        };
      },
    };
    const runner = createTransactionRunner({ ...storage, pipelined: losing }, { maxBatches: 1 });
    const units = [runner.run(planOnly('lost-a', [insertRow('lost-a')])), runner.run(planOnly('lost-b', [insertRow('lost-b')]))];
    for (const unit of units) await expect(unit).rejects.toThrow('Connection terminated unexpectedly');
    expect(rollbacks).toBe(1);
    expect(destroyed).toBe(1);
    expect(await present('lost-a', 'lost-b')).toEqual([]);
    expect(runner.stats()).toMatchObject({ failedBatches: 1, failedUnits: 2 });
  });
});

describe.skipIf(!(await isPostgresReachable()))('creates as pipelined plans through the API [postgres]', () => {
  let db: TestDatabase;
  let t: TestApp;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    db = await createTestDatabase('postgres');
    t = await createTestApp(db, { env: { RATE_LIMIT_SANDBOX_PER_S: '100000' } });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await receiver?.stop();
  });

  const create = (headers: Record<string, string> = {}) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/decisions/bnpl',
      headers: { ...bearer(t.tenant.sandbox.apiKey), 'content-type': 'application/json', ...headers },
      payload: JSON.stringify({
        consumer: { consumer_id: t.tenant.sandbox.consumers.find((c) => c.tier === 'soft')!.consumerId },
        transaction: { amount: '150.00', currency: 'USD', merchant_name: 'Acme', merchant_category: 'electronics' },
      }),
    });
  const deliveriesOf = async (decisionId: string) => {
    const events = await t.ctx.storage.readDb.selectFrom('events').select('id').where('subject_id', '=', decisionId).execute();
    if (events.length === 0) return { events: 0, deliveries: 0 };
    const deliveries = await t.ctx.storage.readDb
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('event_id', 'in', events.map((e) => e.id))
      .execute();
    return { events: events.length, deliveries: deliveries.length };
  };

  it('gives an endpoint created just after the fan-out last looked every event of the next create', async () => {
    const first = await create();
    expect(first.statusCode, first.body).toBe(200);
    // The scope's endpoints were read for the first create's plan (none); one appears now.
    const scope = { tenantId: t.tenant.tenantId, environment: 'sandbox' as const };
    await t.ctx.webhooks.createEndpoint(scope, { url: receiver.url('/just-created'), events: '*', description: 'just created' });
    const before = t.ctx.transactions.stats();
    const second = await create();
    expect(second.statusCode, second.body).toBe(200);
    const { events, deliveries } = await deliveriesOf(second.json<{ decision_id: string }>().decision_id);
    expect(events).toBeGreaterThan(0);
    expect(deliveries).toBe(events);
    // The plan's guard found the new endpoint: its unit ran again, as its function.
    expect(t.ctx.transactions.stats().batches - before.batches).toBe(2);
    // And the plans that follow are made for it (read afresh after the guard failed).
    const third = await create();
    const after = await deliveriesOf(third.json<{ decision_id: string }>().decision_id);
    expect(after.deliveries).toBe(after.events);
  });

  it('stores concurrent creates, keyed and not, each once with its events, and a keyed one sent again replays', async () => {
    const before = t.ctx.transactions.stats();
    const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => create(i % 2 === 0 ? { 'idempotency-key': `pipelined-${i}` } : {})));
    for (const answer of answers) expect(answer.statusCode, answer.body).toBe(200);
    const ids = answers.map((a) => a.json<{ decision_id: string }>().decision_id);
    expect(new Set(ids).size).toBe(24);
    const stats = t.ctx.transactions.stats();
    expect(stats.units - before.units).toBeGreaterThanOrEqual(24);
    expect(stats.batches - before.batches).toBeLessThan(24);
    for (const id of ids) {
      const { events, deliveries } = await deliveriesOf(id);
      expect(events).toBe(4);
      expect(deliveries).toBe(4);
    }
    const again = await create({ 'idempotency-key': 'pipelined-0' });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json<{ decision_id: string }>().decision_id).toBe(ids[0]);
  });
});
