/**
 * Two tenants, A and B, each with everything a lender accumulates, built through the real HTTP
 * surfaces (portal sign-up and invitations, /v1 with API keys, the hosted verification page):
 * the isolation matrix and the at-rest scan run against it.
 *
 * Tenant A holds, per environment where it matters: decisions (BNPL approved, auto loan, pending
 * with a verification token, referred, a hard-tier one with an uploaded ID document, a live one),
 * consumers, webhook endpoints (one with a rotated secret) and their deliveries, events, dealers, a
 * policy version, API keys (sandbox, live, revoked), users of every role, an invitation and a
 * document request. Tenant B is a second sign-up with its own keys and sessions.
 *
 * Sessions: every role of A and B is signed in; `expired` is a session of A's admin whose 12-hour
 * absolute limit has passed (the test clock moved on after it signed in).
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { ManualClock } from '../../src/lib/clock.js';
import { PortalClient } from './portal-client.js';
import { bearer, type TestApp } from './test-app.js';

export type Role = 'admin' | 'developer' | 'underwriter' | 'viewer';
export const ROLE_NAMES: readonly Role[] = ['admin', 'developer', 'underwriter', 'viewer'];

/** The PII and secrets a fixture wrote: what the at-rest and log scans look for. */
export interface Sensitive {
  ssnLast4: string[];
  dobs: string[];
  phones: string[];
  emails: string[];
  streets: string[];
  passwords: string[];
  apiKeys: string[];
  signingSecrets: string[];
  verificationTokens: string[];
  documentMarkers: string[];
}

export interface TenantFixture {
  tenantId: string;
  adminEmail: string;
  keys: { sandbox: string; live: string; revoked: string; revokedId: string; sandboxId: string };
  sessions: Record<Role, PortalClient>;
  userIds: Record<Role, string>;
}

export interface ResourceIds {
  consumers: { soft: string; pending: string; live: string };
  decisions: { bnpl: string; autoLoan: string; pending: string; referred: string; hard: string; declined: string; autoLoanDeclined: string; live: string };
  verificationToken: string;
  endpoints: { sandbox: string; live: string };
  deliveries: { sandbox: string; live: string };
  events: { sandbox: string; live: string };
  dealers: { sandbox: string; live: string };
  policyVersion: string;
  invitation: string;
  document: string;
  documentRequestToken: string;
}

export interface SecurityFixture {
  a: TenantFixture & { ids: ResourceIds };
  b: TenantFixture;
  /** A session of A's admin past its absolute expiry. */
  expired: PortalClient;
  /** Email addresses of A's people and applicants (B must never see them). */
  emailsOfA: string[];
  sensitive: Sensitive;
}

let counter = 0;
const unique = (who: string) => `${who}.sec${++counter}.${randomBytes(3).toString('hex')}@lender.example.com`;
export const PORTAL_PASSWORD = 'correct horse battery';
export const MEMBER_PASSWORD = 'another long passphrase';

/** A valid 1x1 PNG; a random marker after it must never be stored or shown in the clear. */
const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

export function multipart(fields: Record<string, string>, files: Array<{ field: string; name: string; type: string; bytes: Buffer }>) {
  const boundary = `----cdsSec${randomBytes(8).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  for (const f of files) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${f.field}"; filename="${f.name}"\r\nContent-Type: ${f.type}\r\n\r\n`), f.bytes, Buffer.from('\r\n'));
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** The csrf field of the hosted page's form posting to `step`, and the cookie it is bound to. */
export function verifyForm(html: string, setCookie: unknown, step: string): { csrf: string; cookie: string } {
  const raw = Array.isArray(setCookie) ? setCookie.join(';') : String(setCookie ?? '');
  const cookie = /cds_verify=([^;]+)/.exec(raw)?.[1];
  const form = [...html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].find((f) => f[1]!.endsWith(`/${step}`));
  const csrf = form && /name="csrf" value="([^"]*)"/.exec(form[2]!)?.[1];
  if (!cookie || !csrf) throw new Error(`no ${step} form on the page: ${html.slice(0, 300)}`);
  return { csrf, cookie: `cds_verify=${cookie}` };
}

async function v1(t: TestApp, key: string, method: 'GET' | 'POST', url: string, body?: unknown, headers: Record<string, string> = {}) {
  const r = await t.app.inject({ method, url, headers: { ...bearer(key), ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { payload: JSON.stringify(body) }) });
  expect(r.statusCode, `${method} ${url}: ${r.body}`).toBeLessThan(300);
  return r.json() as Record<string, unknown>;
}

/** Sign-up, plus a second sign-in of the admin that is later left to expire. */
async function signUp(t: TestApp, company: string, ip: string) {
  const admin = new PortalClient(t.app);
  const adminEmail = unique('admin');
  await admin.get('/portal/api/session');
  const signed = await admin.post('/portal/api/signup', { company_name: company, name: 'Ada Admin', email: adminEmail, password: PORTAL_PASSWORD }, { ip });
  expect(signed.status, JSON.stringify(signed.body)).toBe(201);
  const stale = new PortalClient(t.app);
  expect((await stale.login(adminEmail, PORTAL_PASSWORD, ip)).status).toBe(200);
  return { admin, adminEmail, signed, stale, ip };
}

/** After the clock moved past the stale sessions' limit: the admin signs in again and builds the team. */
async function signUpTeam(t: TestApp, started: Awaited<ReturnType<typeof signUp>>): Promise<{ team: TenantFixture; expired: PortalClient; emails: string[] }> {
  const { admin, adminEmail, signed, stale, ip } = started;
  const tenantId = (signed.body.tenant as { id: string }).id;
  expect((await admin.login(adminEmail, PORTAL_PASSWORD, ip)).status).toBe(200);

  const sessions: Record<string, PortalClient> = { admin };
  const userIds: Record<string, string> = { admin: (signed.body.user as { id: string }).id };
  const emails = [adminEmail];
  for (const role of ['developer', 'underwriter', 'viewer'] as const) {
    const email = unique(role);
    emails.push(email);
    const invite = await admin.post('/portal/api/invitations', { email, role });
    expect(invite.status, JSON.stringify(invite.body)).toBe(201);
    const member = new PortalClient(t.app);
    await member.get('/portal/api/session');
    const accepted = await member.post('/portal/api/invitation-links/accept', { token: String(invite.body.invite_url).split('#')[1], name: `Uma ${role}`, password: MEMBER_PASSWORD }, { ip });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
    sessions[role] = member;
    userIds[role] = (accepted.body.user as { id: string }).id;
  }
  const live = await admin.post('/portal/api/api-keys', { environment: 'live', label: 'live' });
  const extra = await admin.post('/portal/api/api-keys', { environment: 'sandbox', label: 'to revoke' });
  const revokedId = (extra.body.key as { id: string }).id;
  expect((await admin.post(`/portal/api/api-keys/${revokedId}/revoke`)).status).toBe(200);
  const sandboxId = (await t.ctx.apiKeys.listKeys(tenantId)).find((k) => k.environment === 'sandbox' && k.last4 === String(signed.body.sandbox_api_key).slice(-4))!.id;
  return {
    team: {
      tenantId,
      adminEmail,
      keys: { sandbox: String(signed.body.sandbox_api_key), live: String(live.body.secret), revoked: String(extra.body.secret), revokedId, sandboxId },
      sessions: sessions as Record<Role, PortalClient>,
      userIds: userIds as Record<Role, string>,
    },
    expired: stale,
    emails,
  };
}

const txn = (amount: string) => ({ amount, currency: 'USD', merchant_name: 'Acme Outdoor', merchant_category: 'sporting_goods' });

/** Builds tenants A and B. `hookUrl` is where A's endpoints point (nothing needs to answer there). */
export async function buildSecurityFixture(t: TestApp, clock: ManualClock, hookUrl = 'https://127.0.0.1:9/hooks'): Promise<SecurityFixture> {
  const n = ++counter;
  const startedA = await signUp(t, 'Tenant A Lending', `10.77.${n % 250}.1`);
  const startedB = await signUp(t, 'Tenant B Lending', `10.78.${n % 250}.1`);
  // Past the 12-hour absolute limit of the sessions signed in so far: the stale ones stay expired.
  clock.advance(13 * 3600_000);
  const A = await signUpTeam(t, startedA);
  const B = await signUpTeam(t, startedB);
  const a = A.team;
  const admin = a.sessions.admin;
  const sensitive: Sensitive = {
    ssnLast4: [], dobs: [], phones: [], emails: [...A.emails, ...B.emails], streets: [], passwords: [PORTAL_PASSWORD, MEMBER_PASSWORD],
    apiKeys: [a.keys.sandbox, a.keys.live, a.keys.revoked, B.team.keys.sandbox, B.team.keys.live, B.team.keys.revoked],
    signingSecrets: [], verificationTokens: [], documentMarkers: [],
  };

  // A's adverse-action notice settings, with a street of its own: B must never read them.
  const creditorStreet = `${100 + n} Matrix Creditor Row`;
  const notices = await admin.put('/portal/api/settings/notices', { expected_version: 0, creditor_name: 'Tenant A Lending', creditor_address: `${creditorStreet}\nAustin, TX 78701`, agency: 'Federal Trade Commission' });
  expect(notices.status, JSON.stringify(notices.body)).toBe(200);
  sensitive.streets.push(creditorStreet);

  // Webhook endpoints first, so every later event becomes a delivery. One secret is rotated.
  const endpoints: Record<string, string> = {};
  for (const env of ['sandbox', 'live'] as const) {
    const created = await admin.post(`/portal/api/webhooks/${env}/endpoints`, { url: `${hookUrl}-${env}`, events: '*' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    endpoints[env] = (created.body.endpoint as { id: string }).id;
    sensitive.signingSecrets.push(String(created.body.secret));
  }
  const rotated = await admin.post(`/portal/api/webhooks/sandbox/endpoints/${endpoints.sandbox}/rotate-secret`, { overlap_hours: 24 });
  sensitive.signingSecrets.push(String(rotated.body.secret));

  const dealers: Record<string, string> = {};
  for (const env of ['sandbox', 'live'] as const) {
    const d = await admin.post(`/portal/api/dealers/${env}/dealers`, { name: `Matrix Motors ${env}`, state: 'CA' });
    expect(d.status, JSON.stringify(d.body)).toBe(201);
    dealers[env] = (d.body as { id: string }).id;
  }
  const current = await admin.get('/portal/api/policy/sandbox/bnpl/current');
  const policy = await admin.post('/portal/api/policy/sandbox/bnpl/versions', { tables: current.body.tables, note: 'matrix draft' });
  expect(policy.status, JSON.stringify(policy.body)).toBe(201);
  const invitation = await admin.post('/portal/api/invitations', { email: unique('pending'), role: 'viewer' });
  sensitive.emails.push(String((invitation.body.invitation as { email: string }).email));

  const soft = (await t.ctx.consumers.listConsumers({ tenantId: a.tenantId, environment: 'sandbox' }, { seededOnly: true })).consumers[0]!.id;
  const applicant = (ssn: string, first: string) => {
    const person = {
      first_name: first, last_name: 'Isolation', email: `${first.toLowerCase()}.isolation.${randomBytes(3).toString('hex')}@example.net`,
      phone: `+1415555${String(1000 + ((n * 7 + first.length * 131 + Number(ssn)) % 9000)).padStart(4, '0')}`,
      dob: `19${70 + (n % 20)}-0${1 + (first.length % 9)}-1${first.length % 10}`, ssn_last4: ssn,
      address: { line1: `${100 + first.length} ${first} Orchard Lane`, city: 'Fresno', state: 'CA', zip: '93650' },
    };
    sensitive.ssnLast4.push(ssn);
    sensitive.dobs.push(person.dob);
    sensitive.phones.push(person.phone);
    sensitive.emails.push(person.email);
    sensitive.streets.push(person.address.line1);
    return person;
  };
  const key = a.keys.sandbox;
  const bnpl = await v1(t, key, 'POST', '/v1/decisions/bnpl', { consumer: { consumer_id: soft }, transaction: txn('80.00') });
  const autoLoan = await v1(t, key, 'POST', '/v1/decisions/auto-loan', {
    consumer: { consumer_id: soft }, channel: 'indirect', dealer: { dealer_id: dealers.sandbox, markup_rate_pct: '0.50' },
    vehicle: { vin: '1HGCM8262RA004352', year: 2024, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00' },
    loan: { amount: '16000.00', down_payment: '2000.00', trade_in_value: '1000.00', term_months: 60, currency: 'USD' },
  });
  // With an Idempotency-Key: the stored answer (which carries the verification URL) is at rest too.
  const pending = await v1(t, key, 'POST', '/v1/decisions/bnpl', { consumer: applicant('5820', 'Penny'), transaction: txn('900.00') }, { 'idempotency-key': `pending-${n}` });
  expect(pending.status).toBe('needs_consumer_action');
  const pendingToken = new URL(String(pending.consumer_complete_url)).pathname.split('/')[2]!;
  sensitive.verificationTokens.push(pendingToken);
  const referred = await v1(t, key, 'POST', '/v1/decisions/bnpl', { consumer: applicant('1111', 'Rosalind'), transaction: txn('300.00') });
  expect(referred.outcome).toBe('referred');
  // Declined (the sandbox's bankruptcy SSN): the decision an adverse-action notice is made for.
  const declined = await v1(t, key, 'POST', '/v1/decisions/bnpl', { consumer: applicant('0000', 'Delia'), transaction: txn('200.00') });
  expect(declined.outcome).toBe('declined');
  // And an auto loan's, for the notice's auto-loan path.
  const autoLoanDeclined = await v1(t, key, 'POST', '/v1/decisions/auto-loan', {
    consumer: applicant('0000', 'Dale'), channel: 'direct',
    vehicle: { vin: '1HGCM8262RA004352', year: 2024, make: 'Honda', model: 'Accord', mileage: 18_000, condition: 'used', value: '15000.00' },
    loan: { amount: '16000.00', down_payment: '2000.00', trade_in_value: '1000.00', term_months: 60, currency: 'USD' },
  });
  expect(autoLoanDeclined.outcome).toBe('declined');

  // Hard tier, through the hosted page as a consumer would: code, details, ID document.
  const hardPerson = applicant('6294', 'Harriet');
  const hard = await v1(t, key, 'POST', '/v1/decisions/bnpl', { consumer: hardPerson, transaction: txn('5200.00') });
  const hardPath = new URL(String(hard.consumer_complete_url)).pathname;
  sensitive.verificationTokens.push(hardPath.split('/')[2]!);
  let page = await t.app.inject({ method: 'GET', url: hardPath });
  const form = async (step: string, fields: Record<string, string>) => {
    const f = verifyForm(page.body, page.headers['set-cookie'], step);
    page = await t.app.inject({ method: 'POST', url: `${hardPath}/${step}`, headers: { cookie: f.cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ csrf: f.csrf, ...fields }).toString() });
    expect(page.statusCode, page.body.slice(0, 500)).toBe(200);
  };
  if (page.body.includes(`${hardPath}/send-code`)) await form('send-code', {});
  await form('code', { code: '000000' });
  await form('identity', { ssn_last4: hardPerson.ssn_last4, dob: hardPerson.dob });
  const marker = `RAW-ID-DOCUMENT-${randomBytes(12).toString('hex')}`;
  sensitive.documentMarkers.push(marker);
  const upload = verifyForm(page.body, page.headers['set-cookie'], 'document');
  const body = multipart({ csrf: upload.csrf }, [{ field: 'document', name: 'license.png', type: 'image/png', bytes: Buffer.concat([PNG_1X1, Buffer.from(marker)]) }]);
  page = await t.app.inject({ method: 'POST', url: `${hardPath}/document`, headers: { cookie: upload.cookie, 'content-type': body.contentType }, payload: body.payload });
  expect(page.body).toContain("You're verified");
  const document = (await t.ctx.storage.db.selectFrom('verification_documents').select('id').where('decision_id', '=', String(hard.decision_id)).executeTakeFirstOrThrow()).id;

  // A document request on the referred decision: its upload token is a capability like the verification token.
  const request = await a.sessions.underwriter.post(`/portal/api/referrals/sandbox/${String(referred.decision_id)}/document-requests`, { expected_version: 1, document_types: ['proof_of_income'] });
  expect(request.status, JSON.stringify(request.body)).toBe(201);
  const documentRequestToken = new URL(String((request.body.document_request as { upload_url: string }).upload_url)).pathname.split('/')[2]!;
  sensitive.verificationTokens.push(documentRequestToken);

  const live = await v1(t, a.keys.live, 'POST', '/v1/decisions/bnpl', { consumer: applicant('4173', 'Lionel'), transaction: txn('120.00') });
  const liveConsumer = (await t.ctx.storage.db.selectFrom('decisions').select('consumer_id').where('id', '=', String(live.decision_id)).executeTakeFirstOrThrow()).consumer_id;
  const pendingConsumer = (await t.ctx.storage.db.selectFrom('decisions').select('consumer_id').where('id', '=', String(pending.decision_id)).executeTakeFirstOrThrow()).consumer_id;
  const test = await admin.post(`/portal/api/webhooks/live/endpoints/${endpoints.live}/test`);
  expect(test.status).toBe(202);

  const firstOf = async (env: 'sandbox' | 'live', table: 'webhook_deliveries') =>
    (await t.ctx.storage.db.selectFrom(table).select('id').where('tenant_id', '=', a.tenantId).where('environment', '=', env).orderBy('id').executeTakeFirstOrThrow()).id;

  return {
    a: {
      ...a,
      ids: {
        consumers: { soft, pending: pendingConsumer, live: liveConsumer },
        decisions: {
          bnpl: String(bnpl.decision_id), autoLoan: String(autoLoan.decision_id), pending: String(pending.decision_id), referred: String(referred.decision_id),
          hard: String(hard.decision_id), declined: String(declined.decision_id), autoLoanDeclined: String(autoLoanDeclined.decision_id), live: String(live.decision_id),
        },
        verificationToken: pendingToken,
        endpoints: endpoints as ResourceIds['endpoints'],
        deliveries: { sandbox: await firstOf('sandbox', 'webhook_deliveries'), live: await firstOf('live', 'webhook_deliveries') },
        // The newest of each environment: the first row of A's own event history page.
        events: { sandbox: ((await v1(t, a.keys.sandbox, 'GET', '/v1/events')).data as Array<{ id: string }>)[0]!.id, live: ((await v1(t, a.keys.live, 'GET', '/v1/events')).data as Array<{ id: string }>)[0]!.id },
        dealers: dealers as ResourceIds['dealers'],
        policyVersion: (policy.body.version as { id: string }).id,
        invitation: (invitation.body.invitation as { id: string }).id,
        document,
        documentRequestToken,
      },
    },
    b: B.team,
    expired: A.expired,
    emailsOfA: sensitive.emails.filter((e) => !B.emails.includes(e)),
    sensitive,
  };
}
