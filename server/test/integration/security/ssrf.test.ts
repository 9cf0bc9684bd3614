/**
 * SSRF in production mode (WEBHOOK_ALLOW_PRIVATE_NETWORKS=0), issue 11 item 4. Complements
 * unit/webhooks/address-policy.test.ts (the classification table) and
 * integration/webhooks/delivery.test.ts (the worker's attempt records) with every spelling an
 * attacker uses to reach the inside:
 *
 * - at creation (portal API and service): literal loopback, private, CGNAT, link-local, metadata,
 *   IPv6 loopback/ULA/link-local, IPv4-mapped and IPv4-compatible IPv6, decimal/octal/hex/short
 *   IPv4, percent-encoded and full-width digits, localhost and trailing-dot names: 400, nothing stored;
 * - at delivery (always, whatever is stored): the same literals, and names that resolve to any of
 *   those addresses: `blocked_address`, and the loopback receiver never sees a connection's request;
 * - DNS rebinding: a resolver that answers a public address first and loopback afterwards. The
 *   sender resolves once per connection and connects to exactly that answer, so the loopback
 *   answer never reaches a socket that a check passed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/lib/clock.js';
import { createWebhookSender, type Resolver } from '../../../src/modules/webhooks/sender.js';
import { createTestDatabase, dialectMatrix, type TestDatabase } from '../../support/databases.js';
import { PortalClient } from '../../support/portal-client.js';
import { createTestApp, errorOf, type TestApp } from '../../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

/** URL hosts that must be refused when an endpoint is created, with the class the message names. */
const LITERAL_HOSTS: Array<[string, RegExp]> = [
  ['127.0.0.1', /loopback/],
  ['127.255.255.254', /loopback/],
  ['2130706433', /loopback/], // decimal
  ['0177.0.0.1', /loopback/], // octal
  ['017700000001', /loopback/], // octal, one number
  ['0x7f.1', /loopback/], // hex, short form
  ['0x7f000001', /loopback/],
  ['127.1', /loopback/],
  ['127.0.0.1.', /loopback/], // trailing dot
  ['%31%32%37.0.0.1', /loopback/], // percent-encoded digits
  ['\uff11\uff12\uff17.0.0.1', /loopback/], // full-width digits (IDNA maps them)
  ['10.0.0.1', /private/],
  ['0x0a.0.0.1', /private/],
  ['172.16.0.1', /private/],
  ['172.31.255.254', /private/],
  ['192.168.1.1', /private/],
  ['100.64.0.1', /cgnat/],
  ['100.127.255.254', /cgnat/],
  ['169.254.1.1', /link-local/],
  ['169.254.169.254', /metadata/],
  ['0.0.0.0', /unspecified/],
  ['0', /unspecified/],
  ['[::1]', /loopback/],
  ['[0:0:0:0:0:0:0:1]', /loopback/],
  ['[::]', /unspecified/],
  ['[fc00::1]', /unique-local/],
  ['[fd12:3456::1]', /unique-local/],
  ['[fe80::1]', /link-local/],
  ['[fd00:ec2::254]', /metadata/],
  ['[::ffff:127.0.0.1]', /loopback/], // IPv4-mapped
  ['[::ffff:7f00:1]', /loopback/],
  ['[::ffff:a9fe:a9fe]', /metadata/],
  ['[::ffff:10.0.0.1]', /private/],
  ['[::127.0.0.1]', /reserved/], // IPv4-compatible (deprecated): not global unicast
  ['[::ffff:0:7f00:1]', /reserved/], // IPv4-translated
  ['[64:ff9b::7f00:1]', /nat64/],
  ['[2002:7f00:1::1]', /6to4/],
  ['localhost', /localhost/],
  ['LOCALHOST', /localhost/],
  ['localhost.', /localhost/],
  ['api.localhost', /localhost/],
  ['api.localhost.', /localhost/],
];

/** What a hostile DNS answers for a name, and the class the refusal names. */
const RESOLVED: Array<[string, RegExp]> = [
  ['127.0.0.1', /loopback/],
  ['127.0.0.2', /loopback/],
  ['10.20.30.40', /private/],
  ['172.20.0.1', /private/],
  ['192.168.0.10', /private/],
  ['100.100.0.1', /cgnat/],
  ['169.254.10.10', /link_local/],
  ['169.254.169.254', /metadata/],
  ['169.254.170.2', /metadata/],
  ['::1', /loopback/],
  ['fd00::1', /unique_local/],
  ['fe80::1', /link_local/],
  ['fd00:ec2::254', /metadata/],
  ['::ffff:127.0.0.1', /loopback/],
  ['::ffff:7f00:1', /loopback/],
  ['::ffff:169.254.169.254', /metadata/],
  ['::127.0.0.1', /reserved/],
  ['0.0.0.0', /unspecified/],
];

describe('SSRF: delivery in production mode', () => {
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await receiver?.stop();
  });

  const request = (url: string) => ({ url, headers: { 'content-type': 'application/json' }, body: '{"id":"evt"}' });

  it('refuses every literal spelling of an inside address at delivery time, before any connection', async () => {
    const sender = createWebhookSender({ timeoutMs: 5_000, allowPrivateNetworks: false, ca: receiver.ca, resolve: async (h) => { throw new Error(`no lookup expected for a literal, got ${h}`); } });
    try {
      const wrong: string[] = [];
      for (const [host, cls] of LITERAL_HOSTS.filter(([h]) => !/localhost/i.test(h))) {
        const path = `/literal-${encodeURIComponent(host)}`;
        const r = await sender.send(request(`https://${host}:${receiver.port}${path}`));
        if (r.ok || r.errorKind !== 'blocked_address' || !cls.test(String(r.errorDetail).replace('_', '-'))) wrong.push(`${host}: ${JSON.stringify(r)}`);
      }
      expect(wrong).toEqual([]);
      expect(receiver.requests).toEqual([]);
    } finally {
      sender.close();
    }
  });

  it('refuses a name that resolves to any inside address (all answers checked), and nothing reaches the receiver', async () => {
    const wrong: string[] = [];
    for (const [address, cls] of RESOLVED) {
      const asked: string[] = [];
      const sender = createWebhookSender({
        timeoutMs: 5_000, allowPrivateNetworks: false, ca: receiver.ca,
        resolve: async (hostname) => {
          asked.push(hostname);
          return [{ address, family: address.includes(':') ? 6 : 4 }];
        },
      });
      // Trailing-dot names and localhost-like names are names: they are resolved, then refused.
      for (const name of ['hooks.attacker.example', 'hooks.attacker.example.', 'localhost']) {
        const r = await sender.send(request(`https://${name}:${receiver.port}/resolved`));
        if (r.ok || r.errorKind !== 'blocked_address' || !cls.test(String(r.errorDetail))) wrong.push(`${name} -> ${address}: ${JSON.stringify(r)}`);
      }
      if (asked.length !== 3) wrong.push(`${address}: resolved ${asked.length} times for 3 attempts`);
      sender.close();
    }
    expect(wrong).toEqual([]);
    expect(receiver.requests).toEqual([]);
  });

  it('DNS rebinding: the address a check passed is the one connected to; a later loopback answer is refused, never connected', async () => {
    // The hostile DNS answers a public address once, then loopback (where the receiver listens).
    let calls = 0;
    const rebinding: Resolver = async () => (++calls === 1 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
    const sender = createWebhookSender({ timeoutMs: 1_500, allowPrivateNetworks: false, ca: receiver.ca, resolve: rebinding });
    try {
      // First attempt: one lookup, and the socket goes to the public answer (which does not speak
      // this receiver's TLS); a sender that looked the name up again to connect would land on
      // loopback here and be delivered.
      const first = await sender.send(request(`https://rebind.attacker.example:${receiver.port}/rebind`));
      expect(first.ok).toBe(false);
      expect(['connection', 'timeout', 'tls']).toContain(first.errorKind);
      expect(calls).toBe(1);
      // Second attempt: the loopback answer is checked and refused before any socket opens.
      const second = await sender.send(request(`https://rebind.attacker.example:${receiver.port}/rebind`));
      expect(second).toMatchObject({ ok: false, errorKind: 'blocked_address', errorDetail: expect.stringMatching(/loopback address \(127\.0\.0\.1\)/) });
      expect(calls).toBe(2);
      expect(receiver.requestsTo('/rebind')).toEqual([]);
    } finally {
      sender.close();
    }
  });

  it('a mixed answer (public and inside addresses) connects only to the checked public one: with nothing public left, nothing is sent', async () => {
    const sender = createWebhookSender({
      timeoutMs: 5_000, allowPrivateNetworks: false, ca: receiver.ca,
      resolve: async () => [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }, { address: '169.254.169.254', family: 4 }],
    });
    try {
      const r = await sender.send(request(`https://mixed.attacker.example:${receiver.port}/mixed`));
      expect(r).toMatchObject({ ok: false, errorKind: 'blocked_address' });
      expect(receiver.requestsTo('/mixed')).toEqual([]);
    } finally {
      sender.close();
    }
  });
});

describe.each(await dialectMatrix())('SSRF: endpoint creation in production mode [%s]', (dialect) => {
  let db: TestDatabase;
  let t: TestApp;
  const clock = new ManualClock('2026-05-04T08:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    t = await createTestApp(db, { clock, env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: '0' } });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('refuses every literal inside address and localhost name with 400 through the portal, and stores nothing', async () => {
    const admin = new PortalClient(t.app);
    await admin.signUp({ company: 'Ssrf Lending', email: 'ssrf.admin@lender.example.com' });
    const wrong: string[] = [];
    for (const env of ['sandbox', 'live'] as const) {
      for (const [host, cls] of LITERAL_HOSTS) {
        const r = await admin.post(`/portal/api/webhooks/${env}/endpoints`, { url: `https://${host}/hook` });
        const body = r.status === 400 ? errorOf(r.raw) : null;
        if (!body || body.error !== 'invalid_request' || !cls.test(body.message)) wrong.push(`${env} ${host}: ${r.status} ${JSON.stringify(r.body)}`);
      }
    }
    expect(wrong).toEqual([]);
    expect((await t.ctx.storage.db.selectFrom('webhook_endpoints').select('id').execute()).length).toBe(0);
    // A public name is accepted at creation: its addresses are checked at every delivery instead.
    expect((await admin.post('/portal/api/webhooks/sandbox/endpoints', { url: 'https://hooks.example.com/cds' })).status).toBe(201);
    // An edit is checked like a creation.
    const id = ((await admin.get('/portal/api/webhooks/sandbox/endpoints')).body.data as Array<{ id: string }>)[0]!.id;
    const edit = await admin.patch(`/portal/api/webhooks/sandbox/endpoints/${id}`, { expected_version: 1, url: 'https://0x7f.1/hook' });
    expect(errorOf(edit.raw)).toMatchObject({ error: 'invalid_request', message: expect.stringMatching(/loopback/) });
    expect((await t.ctx.storage.db.selectFrom('webhook_endpoints').select('url').executeTakeFirstOrThrow()).url).toBe('https://hooks.example.com/cds');
  });
});
