/**
 * Two people editing the same webhook endpoint or dealer, through the real app on SQLite and
 * PostgreSQL (docs/portal.md, "Two people editing at once"; migration 0024). An edit names the
 * `version` it loaded: with the current one it is saved and the version goes up by one; with an
 * older one it is 409 `endpoint_version_conflict` / `dealer_version_conflict` and nothing changes
 * (not the values, not `updated_at`, not the version); without one, or with one no row has, the
 * schema refuses it (400). Two edits sent together from one version: exactly one wins. Rotating a
 * secret, re-enabling, disabling and enabling change nothing the edit forms show and leave the
 * version alone, so an edit loaded before them still goes through.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import * as m0024 from '../../../src/db/migrations/0024-edit-versions.js';
import * as m0025 from '../../../src/db/migrations/0025-edit-authors.js';
import * as m0027 from '../../../src/db/migrations/0027-edit-times.js';
import { ManualClock } from '../../../src/lib/clock.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { PortalClient, type PortalResponse } from '../../support/portal-client.js';
import { createTestApp, errorOf, type TestApp } from '../../support/test-app.js';

let counter = 0;
const uniqueEmail = (who: string) => `${who}.edits${++counter}@lender.example.com`;

describe.each(await dialectMatrix())('edits of endpoints and dealers name the version they loaded [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  const clock = new ManualClock('2026-06-01T10:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock, env: { RATE_LIMIT_SANDBOX_PER_S: '100000', RATE_LIMIT_LIVE_PER_S: '100000' } });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  /** A tenant with two people who may edit (an admin and a developer), each with a session of their own. */
  async function team(company: string) {
    const admin = new PortalClient(t.app);
    const ip = `10.19.${++counter % 250}.${counter % 200}`;
    const signed = await admin.signUp({ company, name: 'Ada Admin', email: uniqueEmail('admin'), ip });
    expect(signed.status, JSON.stringify(signed.body)).toBe(201);
    const { member: developer, accepted } = await admin.invite('developer', uniqueEmail('developer'), { name: 'Dev Developer', ip });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
    return { tenantId: (signed.body.tenant as { id: string }).id, admin, developer };
  }

  /** The 409 of a stale edit, as the message states it: who made the last edit, when (if on record), the versions. */
  const staleEdit = (subject: 'endpoint' | 'dealer', editor: string, at: string | null, sent: number, current: number) =>
    `${subject === 'endpoint' ? 'This webhook endpoint' : 'This dealer'} was changed by ${editor}${at === null ? '' : ` at ${at}`} since you loaded it ` +
    `(version ${sent}; it is now at ${current}); reload to see ${subject === 'endpoint' ? 'its current settings' : 'its current details'}, then make your change again.`;

  /** The 400 the schema answers, with its message. */
  const refusedBySchema = (r: PortalResponse) => {
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    const e = errorOf(r.raw);
    expect(e.error).toBe('invalid_request');
    return e.message;
  };

  describe('webhook endpoints', () => {
    it('an edit at the current version is saved and bumps it; an older one is 409 and changes nothing; the body must name a version', async () => {
      const { admin, developer } = await team('Endpoint Edits');
      const created = await admin.post('/portal/api/webhooks/sandbox/endpoints', { url: 'https://hooks.example.com/one', description: 'Orders', events: ['decision.finalized'] });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = (created.body.endpoint as { id: string; version: number }).id;
      expect(created.body.endpoint).toMatchObject({ version: 1 });
      const url = `/portal/api/webhooks/sandbox/endpoints/${id}`;
      // The list and the detail carry the version the edit form sends back.
      expect((await developer.get('/portal/api/webhooks/sandbox/endpoints')).body.data).toEqual([expect.objectContaining({ id, version: 1 })]);
      expect((await developer.get(url)).body.endpoint).toMatchObject({ id, version: 1 });

      // Both load version 1; the admin saves first.
      clock.advance(60_000);
      const saved = await admin.patch(url, { expected_version: 1, url: 'https://hooks.example.com/two', description: 'Orders and refunds', events: '*' });
      expect(saved.status, JSON.stringify(saved.body)).toBe(200);
      expect(saved.body.endpoint).toMatchObject({ url: 'https://hooks.example.com/two', description: 'Orders and refunds', events: ['*'], version: 2, updated_at: clock.now().toISOString() });
      const afterSave = (await developer.get(url)).body;
      expect(afterSave.endpoint).toMatchObject({ version: 2 });

      // The developer's save of what it loaded before that is refused, and writes nothing.
      clock.advance(60_000);
      const stale = await developer.patch(url, { expected_version: 1, url: 'https://hooks.example.com/stale', description: 'Stale', events: ['decision.created'] });
      expect(stale.status, JSON.stringify(stale.body)).toBe(409);
      expect(errorOf(stale.raw)).toMatchObject({
        error: 'endpoint_version_conflict',
        message: 'This webhook endpoint was changed by Ada Admin at 2026-06-01T10:01:00.000Z since you loaded it (version 1; it is now at 2); reload to see its current settings, then make your change again.',
      });
      expect((await developer.get(url)).body).toEqual(afterSave);

      // After a reload, the developer's edit names version 2 and goes through.
      const retried = await developer.patch(url, { expected_version: 2, description: 'Refunds only' });
      expect(retried.status, JSON.stringify(retried.body)).toBe(200);
      expect(retried.body.endpoint).toMatchObject({ url: 'https://hooks.example.com/two', description: 'Refunds only', events: ['*'], version: 3 });
      // The 409 names whoever made the last edit: now the developer.
      const staleAdmin = await admin.patch(url, { expected_version: 2, description: 'Late' });
      expect(errorOf(staleAdmin.raw).message).toBe('This webhook endpoint was changed by Dev Developer at 2026-06-01T10:02:00.000Z since you loaded it (version 2; it is now at 3); reload to see its current settings, then make your change again.');

      // A version it never had (a made-up one) is refused as well, saying so.
      const future = await admin.patch(url, { expected_version: 9, description: 'From the future' });
      expect(errorOf(future.raw)).toMatchObject({ error: 'endpoint_version_conflict', message: 'This webhook endpoint is at version 3; expected_version 9 is not one it has had: send the version its GET answered.' });

      // Without a version, or with one no endpoint has, or with nothing to change: the schema's 400, nothing written.
      const before = (await admin.get(url)).body;
      expect(refusedBySchema(await admin.patch(url, { description: 'No version' }))).toBe('expected_version is required.');
      expect(refusedBySchema(await admin.patch(url, { expected_version: 0, description: 'Zero' }))).toMatch(/^expected_version must be/);
      expect(refusedBySchema(await admin.patch(url, { expected_version: 2_147_483_647, description: 'Too big' }))).toMatch(/^expected_version must be/);
      expect(refusedBySchema(await admin.patch(url, { expected_version: '3', description: 'A string' }))).toMatch(/^expected_version/);
      expect(refusedBySchema(await admin.patch(url, { expected_version: 3 }))).toBe('The request body must give at least one of url, description and events besides expected_version.');
      // A stale version with a bad value: the value's 400 (checked first), and nothing written either way.
      expect(refusedBySchema(await admin.patch(url, { expected_version: 1, url: 'http://hooks.example.com/plain' }))).toMatch(/https/);
      expect((await admin.get(url)).body).toEqual(before);

      // Another environment's path, another tenant, an unknown id: not found, whatever the version.
      expect((await admin.patch(`/portal/api/webhooks/live/endpoints/${id}`, { expected_version: 3, description: 'Live' })).status).toBe(404);
      expect((await admin.patch(`/portal/api/webhooks/sandbox/endpoints/${randomUUID()}`, { expected_version: 1, description: 'Nobody' })).status).toBe(404);
      const other = await team('Nosy Endpoints');
      const nosy = await other.admin.patch(url, { expected_version: 3, description: 'Taken over' });
      expect([nosy.status, errorOf(nosy.raw).error]).toEqual([404, 'not_found']);
      expect((await admin.get(url)).body).toEqual(before);
      // A deleted endpoint is gone for edits too.
      expect((await admin.delete(url)).status).toBe(204);
      expect((await admin.patch(url, { expected_version: 3, description: 'Too late' })).status).toBe(404);
    });

    it('two edits sent together from the same version: exactly one wins, and the endpoint holds its values', async () => {
      const { admin, developer } = await team('Endpoint Race');
      const id = ((await admin.post('/portal/api/webhooks/sandbox/endpoints', { url: 'https://hooks.example.com/race' })).body.endpoint as { id: string }).id;
      const url = `/portal/api/webhooks/sandbox/endpoints/${id}`;
      for (let round = 1; round <= 3; round++) {
        const race = await Promise.all(
          [admin, developer].map((client, i) => client.patch(url, { expected_version: round, url: `https://hooks.example.com/r${round}-${i}`, description: `Round ${round} by ${i}` })),
        );
        expect(race.map((r) => r.status).sort(), JSON.stringify(race.map((r) => r.body))).toEqual([200, 409]);
        expect(errorOf(race.find((r) => r.status === 409)!.raw).error).toBe('endpoint_version_conflict');
        const winner = race.find((r) => r.status === 200)!.body.endpoint as { url: string; description: string };
        expect((await developer.get(url)).body.endpoint).toMatchObject({ url: winner.url, description: winner.description, version: round + 1 });
      }
    });

    it('rotating the secret and re-enabling change nothing the edit form shows: the version stays, and an edit loaded before them is saved', async () => {
      const { tenantId, admin, developer } = await team('Endpoint Lifecycle');
      const id = ((await admin.post('/portal/api/webhooks/sandbox/endpoints', { url: 'https://hooks.example.com/life' })).body.endpoint as { id: string }).id;
      const url = `/portal/api/webhooks/sandbox/endpoints/${id}`;
      expect((await admin.post(`${url}/rotate-secret`, { overlap_hours: 1 })).status).toBe(200);
      // Auto-disabled as the delivery worker leaves it, then re-enabled.
      await t.ctx.storage.db.updateTable('webhook_endpoints').set({ state: 'disabled', disabled_reason: '50 consecutive failed deliveries', disabled_at: clock.now().getTime() }).where('id', '=', id).where('tenant_id', '=', tenantId).execute();
      const reenabled = await admin.post(`${url}/reenable`, {});
      expect(reenabled.body).toMatchObject({ endpoint: { state: 'active', version: 1 } });
      const edited = await developer.patch(url, { expected_version: 1, description: 'Loaded before the rotation' });
      expect(edited.status, JSON.stringify(edited.body)).toBe(200);
      expect(edited.body.endpoint).toMatchObject({ description: 'Loaded before the rotation', state: 'active', version: 2, previous_secret_expires_at: expect.any(String) });
      // A rotation and a re-enable after the edit move updated_at, not the time the 409 gives (migration 0027).
      const editedAt = clock.now().toISOString();
      clock.advance(60_000);
      expect((await admin.post(`${url}/rotate-secret`, { overlap_hours: 1 })).status).toBe(200);
      await t.ctx.storage.db.updateTable('webhook_endpoints').set({ state: 'disabled', disabled_reason: '50 consecutive failed deliveries', disabled_at: clock.now().getTime() }).where('id', '=', id).execute();
      expect((await admin.post(`${url}/reenable`, {})).status).toBe(200);
      expect((await admin.get(url)).body.endpoint).toMatchObject({ updated_at: clock.now().toISOString(), version: 2 });
      expect(errorOf((await admin.patch(url, { expected_version: 1, description: 'Stale' })).raw).message).toBe(staleEdit('endpoint', 'Dev Developer', editedAt, 1, 2));
    });
  });

  describe('dealers', () => {
    const base = '/portal/api/dealers/sandbox/dealers';

    it('an edit at the current version is saved and bumps it; an older one is 409 and changes nothing; the body must name a version', async () => {
      const { admin, developer } = await team('Dealer Edits');
      const created = await admin.post(base, { name: 'Riverside Honda', license_number: 'OH-D-1001', state: 'OH' });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body).toMatchObject({ version: 1 });
      const id = created.body.id as string;
      const url = `${base}/${id}`;
      expect((await developer.get(base)).body.data).toEqual([expect.objectContaining({ id, version: 1 })]);
      expect((await developer.get(url)).body).toMatchObject({ id, version: 1 });

      clock.advance(60_000);
      const saved = await admin.patch(url, { expected_version: 1, name: 'Riverside Honda of Dayton', license_number: null });
      expect(saved.status, JSON.stringify(saved.body)).toBe(200);
      const savedAt = clock.now().toISOString();
      expect(saved.body).toMatchObject({ name: 'Riverside Honda of Dayton', license_number: null, state: 'OH', version: 2, updated_at: savedAt });
      const afterSave = (await developer.get(url)).body;

      clock.advance(60_000);
      const stale = await developer.patch(url, { expected_version: 1, name: 'Riverside Motors', state: 'KY' });
      expect(stale.status, JSON.stringify(stale.body)).toBe(409);
      expect(errorOf(stale.raw)).toMatchObject({
        error: 'dealer_version_conflict',
        message: `This dealer was changed by Ada Admin at ${savedAt} since you loaded it (version 1; it is now at 2); reload to see its current details, then make your change again.`,
      });
      expect((await developer.get(url)).body).toEqual(afterSave);

      const retried = await developer.patch(url, { expected_version: 2, state: 'KY' });
      expect(retried.status, JSON.stringify(retried.body)).toBe(200);
      expect(retried.body).toMatchObject({ name: 'Riverside Honda of Dayton', state: 'KY', version: 3 });
      // The 409 names whoever made the last edit: now the developer.
      const staleAdmin = await admin.patch(url, { expected_version: 2, name: 'Late Motors' });
      expect(errorOf(staleAdmin.raw).message).toBe(`This dealer was changed by Dev Developer at ${clock.now().toISOString()} since you loaded it (version 2; it is now at 3); reload to see its current details, then make your change again.`);

      const future = await admin.patch(url, { expected_version: 7, name: 'Future Motors' });
      expect(errorOf(future.raw)).toMatchObject({ error: 'dealer_version_conflict', message: 'This dealer is at version 3; expected_version 7 is not one it has had: send the version its GET answered.' });

      const before = (await admin.get(url)).body;
      expect(refusedBySchema(await admin.patch(url, { name: 'No version' }))).toBe('expected_version is required.');
      expect(refusedBySchema(await admin.patch(url, { expected_version: 0, name: 'Zero' }))).toMatch(/^expected_version must be/);
      expect(refusedBySchema(await admin.patch(url, { expected_version: 1.5, name: 'Half' }))).toMatch(/^expected_version/);
      expect(refusedBySchema(await admin.patch(url, { expected_version: 3 }))).toBe('The request body must give at least one of name, license_number and state besides expected_version.');
      expect(refusedBySchema(await admin.patch(url, {}))).toBe('expected_version is required.');
      // A name of spaces only: the service's 400, before anything is written.
      expect(refusedBySchema(await admin.patch(url, { expected_version: 3, name: '   ' }))).toMatch(/^name must be 1 to 200 characters/);
      expect((await admin.get(url)).body).toEqual(before);

      expect((await admin.patch(`/portal/api/dealers/live/dealers/${id}`, { expected_version: 3, name: 'Live' })).status).toBe(404);
      expect((await admin.patch(`${base}/${randomUUID()}`, { expected_version: 1, name: 'Nobody' })).status).toBe(404);
      const other = await team('Nosy Dealers');
      const nosy = await other.admin.patch(url, { expected_version: 3, name: 'Stolen' });
      expect([nosy.status, errorOf(nosy.raw).error]).toEqual([404, 'not_found']);
      // The id in capitals is the same dealer (the path takes any UUID spelling).
      expect((await admin.patch(`${base}/${id.toUpperCase()}`, { expected_version: 3, name: 'Riverside Honda' })).body).toMatchObject({ id, name: 'Riverside Honda', version: 4 });
    });

    it('two edits sent together from the same version: exactly one wins, and the dealer holds its values', async () => {
      const { admin, developer } = await team('Dealer Race');
      const id = (await admin.post(base, { name: 'Race Motors' })).body.id as string;
      for (let round = 1; round <= 3; round++) {
        const race = await Promise.all([admin, developer].map((client, i) => client.patch(`${base}/${id}`, { expected_version: round, name: `Round ${round} by ${i}`, license_number: `L-${round}-${i}` })));
        expect(race.map((r) => r.status).sort(), JSON.stringify(race.map((r) => r.body))).toEqual([200, 409]);
        expect(errorOf(race.find((r) => r.status === 409)!.raw).error).toBe('dealer_version_conflict');
        const winner = race.find((r) => r.status === 200)!.body as { name: string; license_number: string };
        expect((await developer.get(`${base}/${id}`)).body).toMatchObject({ name: winner.name, license_number: winner.license_number, version: round + 1 });
      }
    });

    it('disabling and enabling change nothing the edit form shows: the version stays, and an edit loaded before them is saved', async () => {
      const { admin, developer } = await team('Dealer Lifecycle');
      const id = (await admin.post(base, { name: 'Status Motors' })).body.id as string;
      expect((await admin.post(`${base}/${id}/disable`)).body).toMatchObject({ status: 'disabled', version: 1 });
      const edited = await developer.patch(`${base}/${id}`, { expected_version: 1, name: 'Status Motors West' });
      expect(edited.status, JSON.stringify(edited.body)).toBe(200);
      // The edit does not touch the status: the dealer stays disabled.
      expect(edited.body).toMatchObject({ name: 'Status Motors West', status: 'disabled', version: 2 });
      const editedAt = clock.now().toISOString();
      clock.advance(60_000);
      expect((await admin.post(`${base}/${id}/enable`)).body).toMatchObject({ status: 'active', version: 2, updated_at: clock.now().toISOString() });
      // Enabling moved updated_at, not the time of the last edit that the 409 gives (migration 0027).
      expect(errorOf((await admin.patch(`${base}/${id}`, { expected_version: 1, name: 'Stale' })).raw).message).toBe(staleEdit('dealer', 'Dev Developer', editedAt, 1, 2));
    });
  });

  it('migration 0024: endpoints and dealers made before it start at version 1, and take an edit naming it', async () => {
    const { admin } = await team('Before 0024');
    const endpointId = ((await admin.post('/portal/api/webhooks/sandbox/endpoints', { url: 'https://hooks.example.com/old' })).body.endpoint as { id: string }).id;
    const dealerId = (await admin.post('/portal/api/dealers/sandbox/dealers', { name: 'Old Motors' })).body.id as string;
    const migration = t.ctx.storage.db as unknown as Kysely<unknown>;
    await m0024.down(migration);
    await m0024.up(migration);
    expect((await admin.get(`/portal/api/webhooks/sandbox/endpoints/${endpointId}`)).body.endpoint).toMatchObject({ version: 1 });
    expect((await admin.get(`/portal/api/dealers/sandbox/dealers/${dealerId}`)).body).toMatchObject({ version: 1 });
    expect((await admin.patch(`/portal/api/webhooks/sandbox/endpoints/${endpointId}`, { expected_version: 1, description: 'Edited' })).body.endpoint).toMatchObject({ description: 'Edited', version: 2 });
    expect((await admin.patch(`/portal/api/dealers/sandbox/dealers/${dealerId}`, { expected_version: 1, name: 'Old Motors Renamed' })).body).toMatchObject({ name: 'Old Motors Renamed', version: 2 });
  });

  it('migration 0027: an edit made before it has no time on record, and its 409 gives none; the next edit gives its time', async () => {
    const { admin, developer } = await team('Before 0027');
    const url = `/portal/api/dealers/sandbox/dealers/${(await admin.post('/portal/api/dealers/sandbox/dealers', { name: 'Timeless Motors' })).body.id as string}`;
    expect((await admin.patch(url, { expected_version: 1, name: 'Timeless Motors I' })).status).toBe(200);
    const migration = t.ctx.storage.db as unknown as Kysely<unknown>;
    await m0027.down(migration);
    await m0027.up(migration);
    expect(errorOf((await developer.patch(url, { expected_version: 1, name: 'Stale' })).raw).message).toBe(staleEdit('dealer', 'Ada Admin', null, 1, 2));
    clock.advance(1_000);
    expect((await developer.patch(url, { expected_version: 2, name: 'Timeless Motors II' })).status).toBe(200);
    expect(errorOf((await admin.patch(url, { expected_version: 2, name: 'Late' })).raw).message).toBe(staleEdit('dealer', 'Dev Developer', clock.now().toISOString(), 2, 3));
  });

  it('migration 0025: an edit made before it has no editor on record, and its 409 says "someone else"; the next edit names its editor', async () => {
    const { admin, developer } = await team('Before 0025');
    const url = `/portal/api/dealers/sandbox/dealers/${(await admin.post('/portal/api/dealers/sandbox/dealers', { name: 'Older Motors' })).body.id as string}`;
    expect((await admin.patch(url, { expected_version: 1, name: 'Older Motors I' })).status).toBe(200);
    const migration = t.ctx.storage.db as unknown as Kysely<unknown>;
    await m0025.down(migration);
    await m0025.up(migration);
    const stale = await developer.patch(url, { expected_version: 1, name: 'Stale' });
    expect(errorOf(stale.raw).message).toBe(staleEdit('dealer', 'someone else', clock.now().toISOString(), 1, 2));
    expect((await developer.patch(url, { expected_version: 2, name: 'Older Motors II' })).status).toBe(200);
    expect(errorOf((await admin.patch(url, { expected_version: 2, name: 'Late' })).raw).message).toBe(staleEdit('dealer', 'Dev Developer', clock.now().toISOString(), 2, 3));
  });
});
