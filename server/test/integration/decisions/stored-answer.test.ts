/**
 * The poll answer stored with a final decision (ADR 0051, migration 0029), on SQLite and
 * PostgreSQL. What must hold: the statement that makes a decision final stores the bytes a poll
 * answers with (a soft-tier create, a verification passed or failed, an expiry); a pending decision stores none; a
 * poll answers with the stored bytes when they are in this build's format, and renders from the
 * columns otherwise, the same bytes either way; an update by anyone else (an operator's SQL) of a
 * column the answer is made from clears it, so the next poll shows the change; an update of
 * other columns keeps it; the scope is checked on a stored answer as on a row.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { ANSWER_FORMAT } from '../../../src/modules/decisions/decision.presenter.js';
import { PENDING_TTL_MS } from '../../../src/modules/decisions/decisions.service.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { bearer, createTestApp, type TestApp } from '../../support/test-app.js';

const json = { 'content-type': 'application/json' };
const txn = (amount: string) => ({ amount, currency: 'USD', merchant_name: 'Acme Furniture', merchant_category: 'furniture' });

describe.each(await dialectMatrix())('the answer stored with a final decision [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  const clock = new ManualClock('2026-12-04T10:00:00.000Z');
  let key: string;
  let soft: string;
  let enhanced: string;

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock, env: { RATE_LIMIT_SANDBOX_PER_S: '100000' } });
    await t.ctx.apiKeys.startCache();
    key = t.tenant.sandbox.apiKey;
    [soft, enhanced] = t.tenant.sandbox.consumers.map((c) => c.consumerId) as [string, string];
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const create = async (body: unknown) => {
    const r = await t.app.inject({ method: 'POST', url: '/v1/decisions/bnpl', headers: { ...bearer(key), ...json }, payload: JSON.stringify(body) });
    expect(r.statusCode, r.body).toBe(200);
    return r;
  };
  const poll = async (id: string, k = key) => t.app.inject({ method: 'GET', url: `/v1/decisions/bnpl/${id}`, headers: bearer(k) });
  const stored = (id: string) =>
    t.ctx.storage.db.selectFrom('decisions').select(['answer_json', 'answer_format']).where('id', '=', id).executeTakeFirstOrThrow();
  /** An operator's SQL, not the service's: what the migration's trigger is for. */
  const operatorSql = (statement: ReturnType<typeof sql>) => statement.execute(t.ctx.storage.db);
  /** The poll's bytes rendered from the columns: the stored answer made unusable (another format) for one poll, then restored. */
  const renderedFromColumns = async (id: string) => {
    await operatorSql(sql`update decisions set answer_format = ${ANSWER_FORMAT + 1} where id = ${id}`);
    const body = (await poll(id)).body;
    await operatorSql(sql`update decisions set answer_format = ${ANSWER_FORMAT} where id = ${id}`);
    return body;
  };

  it('a soft-tier create stores the bytes it answers with; a poll answers with them, the same bytes as rendered from the columns', async () => {
    const created = await create({ consumer: { consumer_id: soft }, transaction: txn('149.97') });
    const id = created.json<{ decision_id: string; outcome: string }>().decision_id;
    expect(created.json<{ outcome: string }>().outcome).toBe('approved');
    expect(await stored(id)).toEqual({ answer_json: created.body, answer_format: ANSWER_FORMAT });
    const polled = await poll(id);
    expect(polled.statusCode).toBe(200);
    expect(polled.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(polled.body).toBe(created.body);
    expect(await renderedFromColumns(id)).toBe(created.body);
  });

  it('a poll answers with the stored text when it is in this format, and ignores it in any other', async () => {
    const id = (await create({ consumer: { consumer_id: soft }, transaction: txn('88.00') })).json<{ decision_id: string }>().decision_id;
    const real = (await poll(id)).body;
    // Not a column the answer is made from, so the trigger leaves it: what a poll sends shows where it came from.
    const marker = JSON.stringify({ decision_id: id, stored: 'marker' });
    await operatorSql(sql`update decisions set answer_json = ${marker} where id = ${id}`);
    expect((await poll(id)).body).toBe(marker);
    await operatorSql(sql`update decisions set answer_format = ${ANSWER_FORMAT - 1} where id = ${id}`);
    expect((await poll(id)).body).toBe(real);
    await operatorSql(sql`update decisions set answer_format = null where id = ${id}`);
    expect((await poll(id)).body).toBe(real);
  });

  it("an operator's change to a column the answer is made from clears it, and the next poll shows the change; other columns keep it", async () => {
    const created = await create({ consumer: { consumer_id: soft }, transaction: txn('120.00') });
    const id = created.json<{ decision_id: string }>().decision_id;
    await operatorSql(sql`update decisions set updated_at = updated_at + 1, score = score where id = ${id}`);
    expect((await stored(id)).answer_json).toBe(created.body);
    await operatorSql(sql`update decisions set apr = '9.99' where id = ${id}`);
    expect(await stored(id)).toEqual({ answer_json: null, answer_format: null });
    const after = await poll(id);
    expect(after.json<{ apr: string }>().apr).toBe('9.99');
    expect(after.body).toBe(created.body.replace(/"apr":"[^"]*"/, '"apr":"9.99"'));
  });

  it('a pending decision stores none; the verification that makes it final stores the answer its poll then gives', async () => {
    const created = await create({ consumer: { consumer_id: enhanced }, transaction: txn('1500.00') });
    const id = created.json<{ decision_id: string; status: string }>().decision_id;
    expect(created.json<{ status: string }>().status).toBe('needs_consumer_action');
    expect(await stored(id)).toEqual({ answer_json: null, answer_format: null });
    expect((await poll(id)).body).toBe(created.body);
    const helper = await t.app.inject({ method: 'POST', url: `/v1/sandbox/decisions/${id}/verification`, headers: { ...bearer(key), ...json }, payload: '{"result":"pass"}' });
    expect(helper.statusCode, helper.body).toBe(200);
    const final = await poll(id);
    expect(final.json<{ status: string; outcome: string }>()).toMatchObject({ status: 'complete', outcome: 'approved' });
    expect(await stored(id)).toEqual({ answer_json: final.body, answer_format: ANSWER_FORMAT });
    expect(await renderedFromColumns(id)).toBe(final.body);
  });

  it('a referred decision stores its answer; the previous release, which writes no answer, declining it on the migrated schema (ADR 0033) clears it', async () => {
    const id = (await create({ consumer: { consumer_id: enhanced }, transaction: txn('1500.00') })).json<{ decision_id: string }>().decision_id;
    await t.app.inject({ method: 'POST', url: `/v1/sandbox/decisions/${id}/verification`, headers: { ...bearer(key), ...json }, payload: '{"result":"fail"}' });
    const referred = await poll(id);
    expect(referred.json<{ outcome: string }>().outcome).toBe('referred');
    expect(await stored(id)).toEqual({ answer_json: referred.body, answer_format: ANSWER_FORMAT });
    // underwriting.service.ts bumpVersion as it was before this release: the change and the version, no answer.
    const reasons = JSON.stringify([{ code: 'AA-01', reason: 'Insufficient credit history' }]);
    await operatorSql(sql`update decisions set outcome = 'declined', reasons_json = ${reasons}, version = version + 1 where id = ${id} and outcome = 'referred'`);
    expect(await stored(id)).toEqual({ answer_json: null, answer_format: null });
    const declined = await poll(id);
    expect(declined.json()).toEqual({ decision_id: id, application_id: id, status: 'complete', outcome: 'declined', decline_reasons: JSON.parse(reasons) });
  });

  it("a stored answer is checked against the key's scope as a row is: another environment's key gets 404", async () => {
    const id = (await create({ consumer: { consumer_id: soft }, transaction: txn('60.00') })).json<{ decision_id: string }>().decision_id;
    expect((await stored(id)).answer_json).not.toBeNull();
    const live = await poll(id, t.tenant.live.apiKey);
    expect(live.statusCode).toBe(404);
    expect(live.body).not.toContain(id.slice(0, 8) + '","application_id');
    const auto = await t.app.inject({ method: 'GET', url: `/v1/decisions/auto-loan/${id}`, headers: bearer(key) });
    expect(auto.statusCode).toBe(404);
  });

  // Last: it moves this file's clock past every pending deadline.
  it("a pending decision the sweeper expires (declined, AA-01) stores the answer its poll then gives", async () => {
    const id = (await create({ consumer: { consumer_id: enhanced }, transaction: txn('1500.00') })).json<{ decision_id: string }>().decision_id;
    clock.advance(PENDING_TTL_MS.enhanced);
    expect(await t.ctx.decisions.expireOverdue()).toBeGreaterThanOrEqual(1);
    const expired = await poll(id);
    expect(expired.json<{ outcome: string; decline_reasons: Array<{ code: string }> }>()).toMatchObject({ outcome: 'declined', decline_reasons: [{ code: 'AA-01' }] });
    expect(await stored(id)).toEqual({ answer_json: expired.body, answer_format: ANSWER_FORMAT });
    expect(await renderedFromColumns(id)).toBe(expired.body);
  });
});
