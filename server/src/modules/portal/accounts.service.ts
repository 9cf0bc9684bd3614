/**
 * Portal accounts: the people who sign in to the lender portal, their invitations and sessions.
 *
 * How it works:
 * - Passwords are hashed with argon2id (@node-rs/argon2; OWASP parameters: 19 MiB, 2 passes, 1
 *   lane) and never leave this file. An unknown email still costs one verification against a fixed
 *   dummy hash, so timing does not tell which emails have accounts.
 * - Sign-up creates the tenant exactly as `cds tenants create` does (tenants service: sandbox,
 *   three seeded consumers, a sandbox and a live key), then its first admin. The default sandbox
 *   key is handed back once for the welcome screen; the default live key, which nobody has seen,
 *   is revoked at once: live keys are generated deliberately, by a person, later.
 * - A session is 256 random bits in an HttpOnly cookie; only its SHA-256 is stored. It ends after
 *   SESSION_IDLE_MS without requests or SESSION_ABSOLUTE_MS after sign-in, whichever is first, at
 *   sign-out, or when its user is removed. "Last seen" is written at most once a minute.
 * - The CSRF token of a session is an HMAC of the session value under a key derived from the data
 *   encryption key: bound to the session, nothing extra stored (checked in portal-http.ts).
 * - Sign-in attempts draw from two token buckets (per email, per client address) in the shared
 *   rate limiter before the password is even looked at; an empty bucket is 429 with Retry-After.
 * - Invitations carry a 256-bit token (hashed at rest), one role, a 7-day expiry; accepting one
 *   creates the user in the inviting tenant and signs them in.
 * - Passwords change two ways (ADR 0045). Signed in, with the current password (a wrong one draws
 *   from the sign-in buckets: it is a guess like any other); every session of that user ends and the browser that made the
 *   change gets a new one (its token renewed, not kept).
 *   Forgotten: there is no email channel, so an admin of the team (or the operator, `cds users
 *   reset-password`) makes a one-time reset link for the member, handed over as invitation links
 *   are: 256-bit token hashed at rest, 24-hour expiry, a newer link revokes the older. Using it sets
 *   the password, ends every session of that user and signs the person in. Making a link changes
 *   nothing until it is used, so an admin cannot lock a member out with it.
 */
import type * as Argon2 from '@node-rs/argon2';
import { createHmac } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Kysely } from 'kysely';
import type { DialectName } from '../../db/database.js';
import type { Database, PortalRole, SessionsTable, UsersTable } from '../../db/schema.js';
import { ApiError } from '../../http/errors/error-registry.js';
import type { Clock, Random } from '../../lib/clock.js';
import { safeEqual, sha256Hex } from '../../lib/crypto.js';
import type { ApiKeysService } from '../api-keys/api-keys.service.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';
import type { TenantsService } from '../tenants/tenants.service.js';

export const SESSION_IDLE_MS = 30 * 60_000;
export const SESSION_ABSOLUTE_MS = 12 * 3600_000;
export const INVITATION_TTL_MS = 7 * 24 * 3600_000;
export const PASSWORD_RESET_TTL_MS = 24 * 3600_000;
export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 200;
const TOUCH_RESOLUTION_MS = 60_000;

/** Per email: 10 attempts, then one more every 30 s. Per address: 30, then one every 2 s. */
export const LOGIN_LIMITS = {
  perEmail: { ratePerSecond: 1 / 30, burst: 10 },
  perAddress: { ratePerSecond: 1 / 2, burst: 30 },
} as const;
/** Sign-ups and invitation acceptances per address: 20, then one a minute. */
export const SIGNUP_LIMITS = { ratePerSecond: 1 / 60, burst: 20 } as const;
/** Invitations per team: 20 at once, then one every 3 minutes (an invitation is an email someone reads). */
export const INVITATION_LIMITS = { ratePerSecond: 1 / 180, burst: 20 } as const;
/** Reset links a team's admins may make: as many as invitations, drawn from a bucket of their own. */
export const PASSWORD_RESET_LIMITS = INVITATION_LIMITS;

const ARGON2_OPTIONS = { memoryCost: 19_456, timeCost: 2, parallelism: 1, outputLen: 32 } as const;

export interface PortalUser {
  id: string;
  tenantId: string;
  email: string;
  name: string;
  role: PortalRole;
  createdAt: Date;
  lastLoginAt: Date | null;
}

export interface PortalSession {
  user: PortalUser;
  tenantId: string;
  /** The cookie value (only while handling the request that carries or creates it). */
  token: string;
  csrfToken: string;
  idleExpiresAt: Date;
  absoluteExpiresAt: Date;
}

export interface PortalInvitation {
  id: string;
  email: string;
  role: PortalRole;
  invitedBy: string;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
  revokedAt: Date | null;
}

export interface AccountsDeps {
  db: Kysely<Database>;
  readDb: Kysely<Database>;
  clock: Clock;
  random: Random;
  tenants: TenantsService;
  apiKeys: ApiKeysService;
  rateLimiter: RateLimiter;
  /** 32 bytes; the CSRF key is derived from it. */
  dataEncryptionKey: Buffer;
  dialect: DialectName;
}

// Loaded on first use (a native add-on): most processes never hash a password. `cds serve` calls
// `prepare()` right after it listens, so the first sign-in does not wait for it.
let argon2: typeof Argon2 | undefined;
const loadArgon2 = (): typeof Argon2 => (argon2 ??= createRequire(import.meta.url)('@node-rs/argon2') as typeof Argon2);
const hash = (password: string, options: Argon2.Options) => loadArgon2().hash(password, options);
const verify = (hashed: string, password: string) => loadArgon2().verify(hashed, password);

/** What an invitation or reset link's token can look like (base64url); anything else is looked up no further. */
const LINK_TOKEN = /^[A-Za-z0-9_-]{20,100}$/;

export const PASSWORD_RESET_GONE = 'This password reset link is not valid any more (used, replaced or expired); ask an admin of your team for a new one.';

/** A reset link: the token travels in the fragment, which browsers never send to a server or in a Referer. */
export function passwordResetUrl(publicBaseUrl: string, token: string): string {
  return `${publicBaseUrl}/portal/reset-password#${token}`;
}

/**
 * 12 to 200 characters, counted as code points: the request schema's maxLength counts so, and an
 * emoji is one character to the person typing it (JavaScript's `.length` would count two).
 */
export function passwordLengthOk(password: string): boolean {
  let n = 0;
  for (const _ of password) if (++n > PASSWORD_MAX_LENGTH) return false;
  return n >= PASSWORD_MIN_LENGTH;
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function createAccountsService(deps: AccountsDeps) {
  const { db, clock, random } = deps;
  const postgres = deps.dialect === 'postgres';
  const csrfKey = createHmac('sha256', deps.dataEncryptionKey).update('cds-portal-csrf').digest();
  // Verified against when the email is unknown, so both paths cost one argon2 verification.
  // Made by `prepare()` (serve, after it listens) or else by the first sign-in.
  let dummyHash: Promise<string> | null = null;
  const prepare = (): Promise<string> => (dummyHash ??= hash('not a real password, only for timing', ARGON2_OPTIONS));

  function csrfTokenFor(sessionToken: string): string {
    return createHmac('sha256', csrfKey).update(`session:${sessionToken}`).digest('base64url');
  }

  function checkPassword(password: string, field = 'password'): void {
    if (!passwordLengthOk(password)) {
      throw new ApiError('invalid_request', `${field} must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters.`);
    }
  }

  async function limit(bucket: string, limits: { ratePerSecond: number; burst: number }, message: string): Promise<void> {
    const taken = await deps.rateLimiter.take(bucket, limits);
    if (!taken.allowed) throw new ApiError('rate_limited', message, { 'Retry-After': String(taken.retryAfterSeconds) });
  }

  async function emailTaken(email: string, executor: Kysely<Database> = db): Promise<boolean> {
    return (await executor.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()) !== undefined;
  }

  /** The password is hashed by the caller before any transaction: argon2 is slow on purpose. */
  async function insertUser(executor: Kysely<Database>, input: { tenantId: string; email: string; name: string; passwordHash: string; role: PortalRole }): Promise<UsersTable> {
    const now = clock.now().getTime();
    const row: UsersTable = {
      id: random.uuid(),
      tenant_id: input.tenantId,
      email: input.email,
      name: input.name.trim(),
      password_hash: input.passwordHash,
      role: input.role,
      created_at: now,
      updated_at: now,
      last_login_at: now,
      deactivated_at: null,
    };
    await executor.insertInto('users').values(row).execute();
    return row;
  }

  /**
   * A new session for `user`. With `verifiedHash` (a sign-in), only while the password is still the
   * one just verified: a reset or a change that committed during the (slow) argon2 verification
   * has ended every session of the user, and a session made after it with the old password would
   * outlive it. The user row is share-locked on PostgreSQL, so a change waits for this insert and
   * then ends it too; SQLite runs one write transaction at a time.
   */
  async function startSession(user: UsersTable, verifiedHash?: string): Promise<PortalSession> {
    const { row, session } = newSession(user);
    if (verifiedHash === undefined) {
      await db.insertInto('sessions').values(row).execute();
    } else {
      await db.transaction().execute(async (trx) => {
        let q = trx.selectFrom('users').select('id').where('id', '=', user.id).where('password_hash', '=', verifiedHash).where('deactivated_at', 'is', null);
        if (postgres) q = q.forShare();
        if (!(await q.executeTakeFirst())) throw new ApiError('invalid_credentials');
        await trx.insertInto('sessions').values(row).execute();
      });
    }
    return session;
  }

  /** A new session's row (only the token's hash) and what its holder gets (the token, its CSRF token). */
  function newSession(user: UsersTable): { row: SessionsTable; session: PortalSession } {
    const token = random.bytes(32).toString('base64url');
    const now = clock.now().getTime();
    const absolute = now + SESSION_ABSOLUTE_MS;
    const idle = Math.min(now + SESSION_IDLE_MS, absolute);
    return {
      row: { id_hash: sha256Hex(token), user_id: user.id, tenant_id: user.tenant_id, created_at: now, last_seen_at: now, idle_expires_at: idle, absolute_expires_at: absolute, revoked_at: null },
      session: { user: userView(user), tenantId: user.tenant_id, token, csrfToken: csrfTokenFor(token), idleExpiresAt: new Date(idle), absoluteExpiresAt: new Date(absolute) },
    };
  }

  /** Sign-up: a new tenant (sandbox provisioned), its first admin, a session, the sandbox key once. */
  async function signUp(input: { companyName: string; name: string; email: string; password: string; clientAddress: string }) {
    await limit(`portal-signup:${input.clientAddress}`, SIGNUP_LIMITS, 'Too many sign-ups from this address; retry after the time given in Retry-After.');
    const email = normalizeEmail(input.email);
    checkPassword(input.password);
    if (await emailTaken(email)) throw new ApiError('unprocessable_entity', 'An account with this email address already exists; sign in instead.');
    const tenant = await deps.tenants.createTenant({ name: input.companyName });
    // The default live key was never shown to anyone: revoke it (decision recorded in docs/portal.md).
    for (const key of await deps.apiKeys.listKeys(tenant.tenantId)) {
      if (key.environment === 'live') await deps.apiKeys.revokeKey({ tenantId: tenant.tenantId, keyId: key.id });
    }
    const passwordHash = await hash(input.password, ARGON2_OPTIONS);
    let user: UsersTable;
    try {
      user = await insertUser(db, { tenantId: tenant.tenantId, email, name: input.name, passwordHash, role: 'admin' });
    } catch (err) {
      // Two sign-ups with one email at the same moment: the unique index decides; the loser's
      // tenant stays without users (harmless, and visible to operators).
      if (await emailTaken(email)) throw new ApiError('unprocessable_entity', 'An account with this email address already exists; sign in instead.');
      throw err;
    }
    return { session: await startSession(user), tenant: { id: tenant.tenantId, name: tenant.name }, sandboxApiKey: tenant.sandbox.apiKey };
  }

  async function login(input: { email: string; password: string; clientAddress: string }): Promise<PortalSession> {
    const email = normalizeEmail(input.email);
    const message = 'Too many sign-in attempts; retry after the time given in Retry-After.';
    await limit(`portal-login:address:${input.clientAddress}`, LOGIN_LIMITS.perAddress, message);
    await limit(`portal-login:email:${sha256Hex(email)}`, LOGIN_LIMITS.perEmail, message);
    const user = await db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
    const password = input.password.slice(0, PASSWORD_MAX_LENGTH * 4);
    const ok = user ? await verify(user.password_hash, password).catch(() => false) : await verify(await prepare(), password).then(() => false);
    if (!user || !ok || user.deactivated_at !== null) throw new ApiError('invalid_credentials');
    await db.updateTable('users').set({ last_login_at: clock.now().getTime() }).where('id', '=', user.id).execute();
    return startSession(user, user.password_hash);
  }

  /** The session behind a cookie value, or null (unknown, expired, signed out, user removed). */
  async function authenticateSession(token: string | undefined): Promise<PortalSession | null> {
    if (!token || token.length > 100) return null;
    const idHash = sha256Hex(token);
    const row = await deps.readDb
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .selectAll('users')
      .select(['sessions.last_seen_at', 'sessions.idle_expires_at', 'sessions.absolute_expires_at', 'sessions.revoked_at'])
      .where('sessions.id_hash', '=', idHash)
      .executeTakeFirst();
    const now = clock.now().getTime();
    if (!row || row.revoked_at !== null || row.deactivated_at !== null || row.idle_expires_at <= now || row.absolute_expires_at <= now) return null;
    let idle = row.idle_expires_at;
    if (now - row.last_seen_at >= TOUCH_RESOLUTION_MS) {
      idle = Math.min(now + SESSION_IDLE_MS, row.absolute_expires_at);
      await db.updateTable('sessions').set({ last_seen_at: now, idle_expires_at: idle }).where('id_hash', '=', idHash).execute();
    }
    return { user: userView(row), tenantId: row.tenant_id, token, csrfToken: csrfTokenFor(token), idleExpiresAt: new Date(idle), absoluteExpiresAt: new Date(row.absolute_expires_at) };
  }

  function csrfValid(session: PortalSession, presented: string | undefined): boolean {
    return typeof presented === 'string' && safeEqual(session.csrfToken, presented);
  }

  async function logout(token: string): Promise<void> {
    await db.updateTable('sessions').set({ revoked_at: clock.now().getTime() }).where('id_hash', '=', sha256Hex(token)).where('revoked_at', 'is', null).execute();
  }

  async function listUsers(tenantId: string, options: { limit?: number; offset?: number } = {}): Promise<{ users: PortalUser[]; total: number }> {
    const q = deps.readDb.selectFrom('users').where('tenant_id', '=', tenantId).where('deactivated_at', 'is', null);
    const [{ n }, rows] = await Promise.all([
      q.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
      q.selectAll().orderBy('created_at').orderBy('id').limit(Math.min(Math.max(options.limit ?? 25, 1), 100)).offset(Math.max(options.offset ?? 0, 0)).execute(),
    ]);
    return { users: rows.map(userView), total: Number(n) };
  }

  async function findActiveUser(executor: Kysely<Database>, tenantId: string, userId: string, lock = false): Promise<UsersTable> {
    let q = executor.selectFrom('users').selectAll().where('id', '=', userId).where('tenant_id', '=', tenantId).where('deactivated_at', 'is', null);
    if (lock) q = q.forUpdate(); // PostgreSQL only (callers pass `postgres`)
    const row = await q.executeTakeFirst();
    if (!row) throw new ApiError('not_found', 'No such user.');
    return row;
  }

  async function otherAdmins(executor: Kysely<Database>, tenantId: string, userId: string): Promise<number> {
    const { n } = await executor
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('tenant_id', '=', tenantId)
      .where('role', '=', 'admin')
      .where('deactivated_at', 'is', null)
      .where('id', '<>', userId)
      .executeTakeFirstOrThrow();
    return Number(n);
  }

  /** A tenant always keeps at least one admin, so nobody can lock the tenant out of its settings. */
  async function changeRole(tenantId: string, userId: string, role: PortalRole): Promise<PortalUser> {
    return db.transaction().execute(async (trx) => {
      const user = await findActiveUser(trx, tenantId, userId);
      if (user.role === 'admin' && role !== 'admin' && (await otherAdmins(trx, tenantId, userId)) === 0) {
        throw new ApiError('unprocessable_entity', 'A tenant needs at least one admin; make someone else admin first.');
      }
      const now = clock.now().getTime();
      await trx.updateTable('users').set({ role, updated_at: now }).where('id', '=', userId).execute();
      return userView({ ...user, role, updated_at: now });
    });
  }

  /** Ends every session of the user, in the caller's transaction. */
  async function endSessions(trx: Kysely<Database>, userId: string, now: number): Promise<void> {
    await trx.updateTable('sessions').set({ revoked_at: now }).where('user_id', '=', userId).where('revoked_at', 'is', null).execute();
  }

  /** Voids the user's open reset links, in the caller's transaction. */
  async function voidResetLinks(trx: Kysely<Database>, userId: string, now: number): Promise<void> {
    await trx.updateTable('password_resets').set({ revoked_at: now }).where('user_id', '=', userId).where('used_at', 'is', null).where('revoked_at', 'is', null).execute();
  }

  /** Removing a user ends their sessions at once; their email can be invited again later. */
  async function removeUser(tenantId: string, userId: string): Promise<void> {
    await db.transaction().execute(async (trx) => {
      const user = await findActiveUser(trx, tenantId, userId);
      if (user.role === 'admin' && (await otherAdmins(trx, tenantId, userId)) === 0) {
        throw new ApiError('unprocessable_entity', 'A tenant needs at least one admin; make someone else admin first.');
      }
      const now = clock.now().getTime();
      // The email is freed (unique index) by renaming the removed row's address.
      await trx.updateTable('users').set({ deactivated_at: now, updated_at: now, email: `removed+${user.id}@invalid` }).where('id', '=', userId).execute();
      await endSessions(trx, userId, now);
    });
  }

  async function inviteUser(actor: PortalUser, input: { email: string; role: PortalRole }): Promise<{ invitation: PortalInvitation; token: string }> {
    await limit(`portal-invite:${actor.tenantId}`, INVITATION_LIMITS, 'Too many invitations from this team; retry after the time given in Retry-After.');
    const email = normalizeEmail(input.email);
    // Only the team's own members are told apart: whether an address has an account with another
    // lender is none of this team's business (anyone can sign up and ask). Such an invitation is
    // made like any other; accepting it is refused (the address's owner is told to sign in).
    const member = await db.selectFrom('users').select('id').where('email', '=', email).where('tenant_id', '=', actor.tenantId).executeTakeFirst();
    if (member) throw new ApiError('unprocessable_entity', 'This person is already a member of your team.');
    const token = random.bytes(32).toString('base64url');
    const now = clock.now().getTime();
    const row = {
      id: random.uuid(),
      tenant_id: actor.tenantId,
      email,
      role: input.role,
      token_hash: sha256Hex(token),
      invited_by: actor.id,
      created_at: now,
      expires_at: now + INVITATION_TTL_MS,
      accepted_at: null,
      revoked_at: null,
    };
    await db.transaction().execute(async (trx) => {
      // One open invitation per email and tenant: a new one replaces the old.
      await trx.updateTable('invitations').set({ revoked_at: now }).where('tenant_id', '=', actor.tenantId).where('email', '=', email).where('accepted_at', 'is', null).where('revoked_at', 'is', null).execute();
      await trx.insertInto('invitations').values(row).execute();
    });
    return { invitation: invitationView(row), token };
  }

  async function listInvitations(tenantId: string): Promise<PortalInvitation[]> {
    const rows = await deps.readDb
      .selectFrom('invitations')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', clock.now().getTime())
      .orderBy('created_at', 'desc')
      .limit(100)
      .execute();
    return rows.map(invitationView);
  }

  async function revokeInvitation(tenantId: string, invitationId: string): Promise<void> {
    const result = await db
      .updateTable('invitations')
      .set({ revoked_at: clock.now().getTime() })
      .where('id', '=', invitationId)
      .where('tenant_id', '=', tenantId)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) throw new ApiError('not_found', 'No such open invitation.');
  }

  async function openInvitation(executor: Kysely<Database>, token: string) {
    if (!LINK_TOKEN.test(token)) return null;
    const row = await executor
      .selectFrom('invitations')
      .innerJoin('tenants', 'tenants.id', 'invitations.tenant_id')
      .selectAll('invitations')
      .select('tenants.name as tenant_name')
      .where('invitations.token_hash', '=', sha256Hex(token))
      .executeTakeFirst();
    if (!row || row.accepted_at !== null || row.revoked_at !== null || row.expires_at <= clock.now().getTime()) return null;
    return row;
  }

  /** What an invitation link is for (the accept screen shows it); null when unusable. */
  async function describeInvitation(token: string): Promise<{ email: string; role: PortalRole; tenantName: string; expiresAt: Date } | null> {
    const row = await openInvitation(deps.readDb, token);
    return row ? { email: row.email, role: row.role, tenantName: row.tenant_name, expiresAt: new Date(row.expires_at) } : null;
  }

  async function acceptInvitation(input: { token: string; name: string; password: string; clientAddress: string }): Promise<PortalSession> {
    await limit(`portal-signup:${input.clientAddress}`, SIGNUP_LIMITS, 'Too many attempts from this address; retry after the time given in Retry-After.');
    checkPassword(input.password);
    const passwordHash = await hash(input.password, ARGON2_OPTIONS);
    const user = await db.transaction().execute(async (trx) => {
      const invitation = await openInvitation(trx, input.token);
      if (!invitation) throw new ApiError('not_found', 'This invitation link is not valid any more (used, revoked or expired); ask for a new one.');
      if (await emailTaken(invitation.email, trx)) throw new ApiError('unprocessable_entity', 'A user with this email address already exists; sign in instead.');
      const marked = await trx.updateTable('invitations').set({ accepted_at: clock.now().getTime() }).where('id', '=', invitation.id).where('accepted_at', 'is', null).executeTakeFirst();
      if (Number(marked.numUpdatedRows) === 0) throw new ApiError('not_found', 'This invitation link has already been used.');
      return insertUser(trx, { tenantId: invitation.tenant_id, email: invitation.email, name: input.name, passwordHash, role: invitation.role });
    });
    return startSession(user);
  }

  /**
   * A signed-in person changes their own password. The current one is checked like a sign-in (the
   * same buckets, so a stolen session cannot guess it faster than the sign-in page could). Every
   * session of the user ends, the one making the change included, and the person who made it gets a
   * new one in the same transaction: a session token copied before the change (from a shared
   * machine, say) stops working with it, and the person stays signed in (OWASP session management:
   * renew the session id on a change of credentials).
   */
  async function changePassword(session: PortalSession, input: { currentPassword: string; newPassword: string; clientAddress: string }): Promise<PortalSession> {
    const message = 'Too many password attempts; retry after the time given in Retry-After.';
    await limit(`portal-login:address:${input.clientAddress}`, LOGIN_LIMITS.perAddress, message);
    await limit(`portal-login:email:${sha256Hex(session.user.email)}`, LOGIN_LIMITS.perEmail, message);
    checkPassword(input.newPassword, 'new_password');
    const user = await findActiveUser(db, session.tenantId, session.user.id);
    const current = input.currentPassword.slice(0, PASSWORD_MAX_LENGTH * 4);
    if (!(await verify(user.password_hash, current).catch(() => false))) throw new ApiError('unprocessable_entity', 'The current password is not right.');
    if (safeEqual(input.newPassword, input.currentPassword)) throw new ApiError('unprocessable_entity', 'The new password must differ from the current one.');
    const passwordHash = await hash(input.newPassword, ARGON2_OPTIONS);
    const now = clock.now().getTime();
    const renewed = newSession(user);
    await db.transaction().execute(async (trx) => {
      // Compare-and-set on the hash read above: of two changes at once, the second is told to retry.
      const changed = await trx.updateTable('users').set({ password_hash: passwordHash, updated_at: now }).where('id', '=', user.id).where('password_hash', '=', user.password_hash).executeTakeFirst();
      if (Number(changed.numUpdatedRows) === 0) throw new ApiError('unprocessable_entity', 'The password was changed meanwhile; sign in again if it was not you.');
      await endSessions(trx, user.id, now);
      await trx.insertInto('sessions').values(renewed.row).execute();
      await voidResetLinks(trx, user.id, now);
    });
    return renewed.session;
  }

  /**
   * A one-time link for a member of the team to set a new password: by an admin (`actor`), or by the
   * operator (`actor` null, from the command line, for a team whose every admin is locked out).
   */
  async function createPasswordReset(actor: PortalUser | null, tenantId: string, userId: string): Promise<{ user: PortalUser; token: string; expiresAt: Date }> {
    // One's own password is changed with the current one (Settings -> Account): a session alone,
    // perhaps a stolen one, must not be able to set it.
    if (actor && actor.id === userId) throw new ApiError('unprocessable_entity', 'Change your own password on Settings -> Account; it asks for your current password.');
    if (actor) await limit(`portal-password-reset:${tenantId}`, PASSWORD_RESET_LIMITS, 'Too many password reset links from this team; retry after the time given in Retry-After.');
    const token = random.bytes(32).toString('base64url');
    const now = clock.now().getTime();
    const expiresAt = now + PASSWORD_RESET_TTL_MS;
    const user = await db.transaction().execute(async (trx) => {
      const target = await findActiveUser(trx, tenantId, userId, postgres);
      // One open link per user: a new one replaces the old (the user row's lock orders two at once).
      await voidResetLinks(trx, target.id, now);
      await trx
        .insertInto('password_resets')
        .values({ id: random.uuid(), tenant_id: tenantId, user_id: target.id, token_hash: sha256Hex(token), created_by: actor?.id ?? null, created_at: now, expires_at: expiresAt, used_at: null, revoked_at: null })
        .execute();
      return target;
    });
    return { user: userView(user), token, expiresAt: new Date(expiresAt) };
  }

  /** The active user with this email (any tenant), for the operator's reset; null when none. */
  async function findUserByEmail(email: string): Promise<PortalUser | null> {
    const row = await db.selectFrom('users').selectAll().where('email', '=', normalizeEmail(email)).where('deactivated_at', 'is', null).executeTakeFirst();
    return row ? userView(row) : null;
  }

  async function openPasswordReset(executor: Kysely<Database>, token: string) {
    if (!LINK_TOKEN.test(token)) return null;
    const row = await executor
      .selectFrom('password_resets')
      .innerJoin('users', 'users.id', 'password_resets.user_id')
      .innerJoin('tenants', 'tenants.id', 'password_resets.tenant_id')
      .selectAll('password_resets')
      .select(['users.email', 'users.deactivated_at', 'tenants.name as tenant_name'])
      .where('password_resets.token_hash', '=', sha256Hex(token))
      .executeTakeFirst();
    if (!row || row.used_at !== null || row.revoked_at !== null || row.deactivated_at !== null || row.expires_at <= clock.now().getTime()) return null;
    return row;
  }

  /** What a reset link is for (the reset screen shows it); null when unusable. */
  async function describePasswordReset(token: string): Promise<{ email: string; tenantName: string; expiresAt: Date } | null> {
    const row = await openPasswordReset(deps.readDb, token);
    return row ? { email: row.email, tenantName: row.tenant_name, expiresAt: new Date(row.expires_at) } : null;
  }

  async function acceptPasswordReset(input: { token: string; password: string; clientAddress: string }): Promise<PortalSession> {
    await limit(`portal-signup:${input.clientAddress}`, SIGNUP_LIMITS, 'Too many attempts from this address; retry after the time given in Retry-After.');
    checkPassword(input.password);
    const passwordHash = await hash(input.password, ARGON2_OPTIONS);
    const user = await db.transaction().execute(async (trx) => {
      const reset = await openPasswordReset(trx, input.token);
      if (!reset) throw new ApiError('not_found', PASSWORD_RESET_GONE);
      const now = clock.now().getTime();
      const marked = await trx.updateTable('password_resets').set({ used_at: now }).where('id', '=', reset.id).where('used_at', 'is', null).where('revoked_at', 'is', null).executeTakeFirst();
      if (Number(marked.numUpdatedRows) === 0) throw new ApiError('not_found', PASSWORD_RESET_GONE);
      await trx.updateTable('users').set({ password_hash: passwordHash, updated_at: now, last_login_at: now }).where('id', '=', reset.user_id).execute();
      // Whoever knew the old password (or holds a session) is out, and no other link of theirs stays open.
      await endSessions(trx, reset.user_id, now);
      await voidResetLinks(trx, reset.user_id, now);
      return findActiveUser(trx, reset.tenant_id, reset.user_id);
    });
    return startSession(user);
  }

  /** Sessions past their absolute expiry (and long-revoked ones) are deleted by the purge job. */
  async function purgeSessions(): Promise<number> {
    const result = await db.deleteFrom('sessions').where('absolute_expires_at', '<', clock.now().getTime() - 24 * 3600_000).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  return {
    /** Loads argon2 and hashes the dummy password now, not on the first sign-in. */
    prepare(): void {
      prepare().catch(() => undefined); // a failure shows on the sign-in that awaits it
    },
    signUp,
    login,
    logout,
    authenticateSession,
    csrfValid,
    listUsers,
    changeRole,
    removeUser,
    inviteUser,
    listInvitations,
    revokeInvitation,
    describeInvitation,
    acceptInvitation,
    changePassword,
    createPasswordReset,
    findUserByEmail,
    describePasswordReset,
    acceptPasswordReset,
    purgeSessions,
  };
}

export type AccountsService = ReturnType<typeof createAccountsService>;

function userView(row: UsersTable): PortalUser {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    email: row.email,
    name: row.name,
    role: row.role,
    createdAt: new Date(row.created_at),
    lastLoginAt: row.last_login_at === null ? null : new Date(row.last_login_at),
  };
}

function invitationView(row: { id: string; email: string; role: PortalRole; invited_by: string; created_at: number; expires_at: number; accepted_at: number | null; revoked_at: number | null }): PortalInvitation {
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    invitedBy: row.invited_by,
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    acceptedAt: row.accepted_at === null ? null : new Date(row.accepted_at),
    revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at),
  };
}
