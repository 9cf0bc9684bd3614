/**
 * Portal passwords on SQLite and PostgreSQL, through the real app (ADR 0045): changing one's own
 * password (current password checked, other sessions end, this one stays, the sign-in limiter
 * counts wrong guesses) and an admin's one-time reset link (shown once, works once, 24 hours, a
 * newer link replaces the older, using it ends every session of the member and signs them in;
 * admins only, own team only). The operator's `cds users reset-password` is in
 * operations/cli.test.ts; the screens in browser/passwords.browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { PASSWORD_RESET_TTL_MS } from '../../../src/modules/portal/accounts.service.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { PortalClient } from '../../support/portal-client.js';
import { createTestApp, errorOf, type TestApp } from '../../support/test-app.js';

const OLD = 'correct horse battery';
const NEW = 'a brand new passphrase';
let emailCounter = 0;
const uniqueEmail = (who: string) => `${who}.${++emailCounter}@passwords.example.com`;
const tokenOf = (url: unknown) => String(url).split('#')[1]!;

describe.each(await dialectMatrix())('portal passwords [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  const clock = new ManualClock('2026-03-02T09:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  /** An admin and a developer of one team, each signed in (the developer through an invitation). */
  async function team(company = 'Password Lending') {
    // Sign-ups, invitations and reset links all come from one test address: let its buckets refill
    // (25 minutes: within the 30-minute idle limit of a team made just before, as 'two teams' needs).
    clock.advance(25 * 60_000);
    const admin = new PortalClient(t.app);
    const adminEmail = uniqueEmail('admin');
    const signedUp = await admin.signUp({ company, email: adminEmail });
    expect(signedUp.status, JSON.stringify(signedUp.body)).toBe(201);
    const developerEmail = uniqueEmail('developer');
    const invite = await admin.post('/portal/api/invitations', { email: developerEmail, role: 'developer' });
    const developer = new PortalClient(t.app);
    await developer.get('/portal/api/session');
    const accepted = await developer.post('/portal/api/invitation-links/accept', { token: tokenOf(invite.body.invite_url), name: 'Dev Person', password: OLD });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
    return { admin, adminEmail, adminId: (signedUp.body.user as { id: string }).id, developer, developerEmail, developerId: (accepted.body.user as { id: string }).id };
  }
  const signedIn = async (client: PortalClient) => (await client.get('/portal/api/users')).status !== 401 && (await client.get('/portal/api/session')).body.authenticated === true;
  const signIn = async (email: string, password: string) => {
    const client = new PortalClient(t.app);
    return { client, response: await client.login(email, password) };
  };

  describe('changing one\'s own password', () => {
    it('checks the current password, ends every session, renews this one, and only the new password signs in', async () => {
      const { developer, developerEmail } = await team();
      const elsewhere = (await signIn(developerEmail, OLD)).client; // the same person on another device
      expect(await signedIn(elsewhere)).toBe(true);

      const wrong = await developer.post('/portal/api/account/password', { current_password: 'not my password', new_password: NEW });
      expect(wrong.status).toBe(422);
      expect(errorOf(wrong.raw)).toMatchObject({ error: 'unprocessable_entity', message: 'The current password is not right.' });
      const short = await developer.post('/portal/api/account/password', { current_password: OLD, new_password: 'too short' });
      expect(short.status).toBe(400);
      expect(errorOf(short.raw).message).toBe('new_password must be 12 to 200 characters.');
      const same = await developer.post('/portal/api/account/password', { current_password: OLD, new_password: OLD });
      expect(errorOf(same.raw)).toMatchObject({ error: 'unprocessable_entity', message: 'The new password must differ from the current one.' });
      const missing = await developer.post('/portal/api/account/password', { new_password: NEW });
      expect(missing.status).toBe(400);
      // Nothing above changed anything: the other device is still signed in.
      expect(await signedIn(elsewhere)).toBe(true);

      // A copy of this browser's session from before the change (a shared machine, a stolen cookie).
      const copy = new PortalClient(t.app);
      for (const [k, v] of developer.cookies) copy.cookies.set(k, v);
      copy.csrf = developer.csrf;
      const before = { cookies: new Map(developer.cookies), csrf: developer.csrf };

      const changed = await developer.post('/portal/api/account/password', { current_password: OLD, new_password: NEW });
      expect(changed.status, JSON.stringify(changed.body)).toBe(200);
      // The answer is a sign-in's: a new session (cookie and CSRF token) for the person who changed it.
      expect(changed.body).toMatchObject({ authenticated: true, user: { email: developerEmail }, csrf_token: expect.any(String) });
      expect(developer.csrf).not.toBe(before.csrf);
      expect([...developer.cookies].filter(([k, v]) => before.cookies.get(k) !== v).length).toBeGreaterThan(0);
      expect(await signedIn(developer)).toBe(true);
      expect(await signedIn(elsewhere)).toBe(false);
      expect(await signedIn(copy)).toBe(false);
      expect((await signIn(developerEmail, OLD)).response.status).toBe(401);
      expect((await signIn(developerEmail, NEW)).response.status).toBe(200);
      // The renewed session's CSRF token is the one that works now.
      expect((await developer.post('/portal/api/logout', {}, { csrf: before.csrf })).status).toBe(403);
      expect((await developer.post('/portal/api/logout')).status).toBe(200);
    });

    it('needs a session and the CSRF token', async () => {
      const { developer } = await team();
      const anonymous = new PortalClient(t.app);
      await anonymous.get('/portal/api/session');
      expect((await anonymous.post('/portal/api/account/password', { current_password: OLD, new_password: NEW })).status).toBe(401);
      expect((await developer.post('/portal/api/account/password', { current_password: OLD, new_password: NEW }, { csrf: null })).status).toBe(403);
    });

    it('counts a wrong current password as a sign-in guess: the per-account limit applies', async () => {
      const { developer, developerEmail } = await team();
      let limited = null;
      for (let i = 0; i < 30 && !limited; i++) {
        const r = await developer.post('/portal/api/account/password', { current_password: `guess number ${i}`, new_password: NEW }, { ip: `10.77.0.${i}` });
        if (r.status === 429) limited = r;
        else expect(r.status).toBe(422);
      }
      expect(limited, 'the sign-in limiter never answered').not.toBeNull();
      expect(limited!.headers['retry-after']).toMatch(/^\d+$/);
      // And it is the same bucket as the sign-in page's for that account.
      expect((await signIn(developerEmail, OLD)).response.status).toBe(429);
      clock.advance(3_600_000);
    });
  });

  describe('an admin\'s reset link', () => {
    it('is shown once, works once, ends every session of the member and signs them in with the new password', async () => {
      const { admin, developer, developerEmail, developerId } = await team();
      const made = await admin.post(`/portal/api/users/${developerId}/password-reset`, {});
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      expect(Object.keys(made.body).sort()).toEqual(['expires_at', 'reset_url', 'user']);
      expect(made.body.reset_url).toMatch(/^http:\/\/127\.0\.0\.1:3000\/portal\/reset-password#[A-Za-z0-9_-]{43}$/);
      expect(made.body.expires_at).toBe(new Date(clock.now().getTime() + PASSWORD_RESET_TTL_MS).toISOString());
      expect(made.body.user).toMatchObject({ id: developerId, email: developerEmail, role: 'developer' });
      const token = tokenOf(made.body.reset_url);
      // The token is stored only as its hash.
      const stored = await t.ctx.storage.db.selectFrom('password_resets').selectAll().where('user_id', '=', developerId).execute();
      expect(stored).toHaveLength(1);
      expect(JSON.stringify(stored)).not.toContain(token);

      // Making a link changes nothing yet: the old password and the member's session still work.
      expect(await signedIn(developer)).toBe(true);
      expect((await signIn(developerEmail, OLD)).response.status).toBe(200);

      const visitor = new PortalClient(t.app);
      await visitor.get('/portal/api/session');
      const looked = await visitor.post('/portal/api/password-reset-links/lookup', { token });
      expect(looked.status).toBe(200);
      expect(looked.body).toEqual({ email: developerEmail, tenant_name: 'Password Lending', expires_at: made.body.expires_at });
      expect((await visitor.post('/portal/api/password-reset-links/accept', { token, password: 'short' })).status).toBe(400);
      const used = await visitor.post('/portal/api/password-reset-links/accept', { token, password: NEW });
      expect(used.status, JSON.stringify(used.body)).toBe(200);
      expect(used.body).toMatchObject({ authenticated: true, user: { id: developerId, role: 'developer' } });
      expect(used.setCookies.some((c) => c.startsWith('cds_session='))).toBe(true);
      expect(await signedIn(visitor)).toBe(true);
      expect(await signedIn(developer)).toBe(false);
      expect((await signIn(developerEmail, OLD)).response.status).toBe(401);
      expect((await signIn(developerEmail, NEW)).response.status).toBe(200);

      // Once only.
      const again = new PortalClient(t.app);
      await again.get('/portal/api/session');
      const gone = await again.post('/portal/api/password-reset-links/accept', { token, password: 'yet another passphrase' });
      expect(gone.status).toBe(404);
      expect(errorOf(gone.raw).message).toBe('This password reset link is not valid any more (used, replaced or expired); ask an admin of your team for a new one.');
      expect((await again.post('/portal/api/password-reset-links/lookup', { token })).status).toBe(404);
    });

    it('a newer link replaces the older; a link expires after 24 hours; a changed password or a removed member voids it', async () => {
      const { adminEmail, developerId } = await team();
      let admin = (await signIn(adminEmail, OLD)).client;
      const visitor = new PortalClient(t.app);
      await visitor.get('/portal/api/session');
      const lookup = (url: unknown) => visitor.post('/portal/api/password-reset-links/lookup', { token: tokenOf(url) });

      const first = await admin.post(`/portal/api/users/${developerId}/password-reset`, {});
      const second = await admin.post(`/portal/api/users/${developerId}/password-reset`, {});
      expect((await lookup(first.body.reset_url)).status).toBe(404);
      expect((await lookup(second.body.reset_url)).status).toBe(200);

      clock.advance(PASSWORD_RESET_TTL_MS - 1);
      expect((await lookup(second.body.reset_url)).status).toBe(200);
      clock.advance(1);
      expect((await lookup(second.body.reset_url)).status).toBe(404);
      expect((await visitor.post('/portal/api/password-reset-links/accept', { token: tokenOf(second.body.reset_url), password: NEW })).status).toBe(404);
      admin = (await signIn(adminEmail, OLD)).client; // a day on, the admin's session has ended too

      // The member changes the password themselves: an open link is void (it was made for a forgotten one).
      const third = await admin.post(`/portal/api/users/${developerId}/password-reset`, {});
      expect(third.status).toBe(201);
      const fresh = (await signIn(String((third.body.user as { email: string }).email), OLD)).client;
      expect((await fresh.post('/portal/api/account/password', { current_password: OLD, new_password: NEW })).status).toBe(200);
      expect((await lookup(third.body.reset_url)).status).toBe(404);

      // A removed member's link is void.
      const fourth = await admin.post(`/portal/api/users/${developerId}/password-reset`, {});
      expect((await lookup(fourth.body.reset_url)).status).toBe(200);
      expect((await admin.delete(`/portal/api/users/${developerId}`)).status).toBe(204);
      expect((await lookup(fourth.body.reset_url)).status).toBe(404);
      expect((await admin.post(`/portal/api/users/${developerId}/password-reset`, {})).status).toBe(404);
    });

    it('not for oneself: an admin changes their own password with the current one, never with a session alone', async () => {
      const { admin, adminId } = await team('Self Reset Lending');
      const own = await admin.post(`/portal/api/users/${adminId}/password-reset`, {});
      expect(own.status).toBe(422);
      expect(errorOf(own.raw).message).toBe('Change your own password on Settings -> Account; it asks for your current password.');
      expect(await t.ctx.storage.db.selectFrom('password_resets').select('id').where('user_id', '=', adminId).execute()).toEqual([]);
    });

    it('two links made at once leave one open, and using a link voids any other', async () => {
      const { admin, developerId } = await team('Concurrent Lending');
      const made = await Promise.all([1, 2, 3].map(() => admin.post(`/portal/api/users/${developerId}/password-reset`, {})));
      expect(made.map((r) => r.status)).toEqual([201, 201, 201]);
      const open = () => t.ctx.storage.db.selectFrom('password_resets').select('id').where('user_id', '=', developerId).where('used_at', 'is', null).where('revoked_at', 'is', null).execute();
      expect(await open()).toHaveLength(1);
      // Whichever is open, using it leaves none.
      const visitor = new PortalClient(t.app);
      await visitor.get('/portal/api/session');
      const used = await Promise.all(made.map((r) => visitor.post('/portal/api/password-reset-links/accept', { token: tokenOf(r.body.reset_url), password: NEW })));
      expect(used.filter((r) => r.status === 200)).toHaveLength(1);
      expect(await open()).toHaveLength(0);
    });

    it('a sign-in with the old password that overlaps the reset does not outlive it', async () => {
      const { admin, developerEmail, developerId } = await team('Overlap Lending');
      let password = OLD;
      for (let round = 0; round < 4; round++) {
        const made = await admin.post(`/portal/api/users/${developerId}/password-reset`, {});
        const visitor = new PortalClient(t.app);
        await visitor.get('/portal/api/session');
        const next = `${NEW} round ${round}`;
        const [old, used] = await Promise.all([signIn(developerEmail, password), visitor.post('/portal/api/password-reset-links/accept', { token: tokenOf(made.body.reset_url), password: next })]);
        expect(used.status).toBe(200);
        // Refused, or signed in before the reset and then signed out by it: never a live session on the old password.
        if (old.response.status === 200) expect(await signedIn(old.client), `round ${round}`).toBe(false);
        else expect(old.response.status).toBe(401);
        password = next;
      }
    });

    it('counts a password\'s length in characters (code points), as the request schema does', async () => {
      const { admin, developerId } = await team('Emoji Lending');
      const link = async () => tokenOf((await admin.post(`/portal/api/users/${developerId}/password-reset`, {})).body.reset_url);
      const visitor = new PortalClient(t.app);
      await visitor.get('/portal/api/session');
      const six = await visitor.post('/portal/api/password-reset-links/accept', { token: await link(), password: '\u{1F511}'.repeat(6) });
      expect(six.status).toBe(400); // 6 characters, though 12 UTF-16 units
      expect(errorOf(six.raw).message).toBe('password must be 12 to 200 characters.');
      const many = await visitor.post('/portal/api/password-reset-links/accept', { token: await link(), password: '\u{1F511}'.repeat(150) });
      expect(many.status, JSON.stringify(many.body)).toBe(200); // 150 characters, though 300 UTF-16 units
    });

    it('admins only, and only for their own team', async () => {
      const a = await team('Team A');
      const b = await team('Team B');
      const byDeveloper = await a.developer.post(`/portal/api/users/${a.adminId}/password-reset`, {});
      expect(byDeveloper.status).toBe(403);
      const acrossTenants = await a.admin.post(`/portal/api/users/${b.developerId}/password-reset`, {});
      expect(acrossTenants.status).toBe(404);
      expect((await a.admin.post('/portal/api/users/not-a-uuid/password-reset', {})).status).toBe(400);
      expect(await t.ctx.storage.db.selectFrom('password_resets').select('id').where('user_id', 'in', [a.adminId, b.developerId]).execute()).toEqual([]);
    });

    it('a team makes at most 20 links, then one every 3 minutes', async () => {
      const { admin, developerId } = await team('Busy Team');
      for (let i = 0; i < 20; i++) expect((await admin.post(`/portal/api/users/${developerId}/password-reset`, {})).status).toBe(201);
      const limited = await admin.post(`/portal/api/users/${developerId}/password-reset`, {});
      expect(limited.status).toBe(429);
      expect(limited.headers['retry-after']).toMatch(/^\d+$/);
      clock.advance(180_000);
      expect((await admin.post(`/portal/api/users/${developerId}/password-reset`, {})).status).toBe(201);
    });
  });
});
