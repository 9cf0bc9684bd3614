/**
 * `cds listen` end to end: the real service (`cds serve`), a plain-HTTP receiver on loopback that
 * verifies every request with Stripe's verifier and the secret `cds listen` printed, and `cds
 * listen` itself as a child process. Decisions made while it runs are forwarded (and only those:
 * it starts from now), with the real delivery headers and envelope, one printed line per event
 * with the receiver's answer; a failing and a stopped receiver are reported; SIGINT exits 0;
 * `--since` replays; a live key is refused.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupProcesses, databaseEnv, httpRequest, pollUntil, runCli, startCli, startServer, type RunningCli, type ServerProcess } from '../../support/server-process.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';

const stripeSignature = Stripe.webhooks.signature!;

interface Received {
  headers: Record<string, string>;
  rawHeaderNames: string[];
  body: string;
  verified: boolean;
}

/** A local receiver as a lender's engineer writes one: plain HTTP, verifies with the printed secret. */
async function startLocalReceiver() {
  const received: Received[] = [];
  let secret = '';
  let status = 200;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      let verified = false;
      try {
        stripeSignature.verifyHeader(body, headers['svc-signature'] ?? '', secret, 300);
        verified = true;
      } catch {
        verified = false;
      }
      received.push({ headers, rawHeaderNames: req.rawHeaders.filter((_, i) => i % 2 === 0), body, verified });
      res.writeHead(verified ? status : 400).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://localhost:${port}/webhooks`,
    received,
    setSecret: (s: string) => (secret = s),
    setStatus: (s: number) => (status = s),
    stop: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

describe('cds listen', () => {
  let db: TestDatabase;
  let server: ServerProcess;
  let sandboxKey: string;
  let liveKey: string;
  let softConsumer: string;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    const tenant = await runCli(['tenants', 'create', '--name', 'Listen Lending', '--json'], databaseEnv(db));
    expect(tenant.code, tenant.stderr).toBe(0);
    const parsed = JSON.parse(tenant.stdout) as { sandbox: { api_key: string; consumers: Array<{ consumer_id: string; tier: string }> }; live: { api_key: string } };
    sandboxKey = parsed.sandbox.api_key;
    liveKey = parsed.live.api_key;
    softConsumer = parsed.sandbox.consumers.find((c) => c.tier === 'soft')!.consumer_id;
    server = await startServer({ env: { ...databaseEnv(db), LOG_LEVEL: 'warn' } });
  });
  afterAll(async () => {
    await server?.stop();
    await cleanupProcesses();
    await db?.drop();
  });

  async function decide(amount: string): Promise<string> {
    const r = await httpRequest(`${server.baseUrl}/v1/decisions/bnpl`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sandboxKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ consumer: { consumer_id: softConsumer }, transaction: { amount, currency: 'USD', merchant_name: 'Acme', merchant_category: 'furniture' } }),
    });
    expect(r.status, r.body).toBe(200);
    return r.json<{ decision_id: string }>().decision_id;
  }
  async function eventIdsOf(decisionId: string): Promise<string[]> {
    const r = await httpRequest(`${server.baseUrl}/v1/events?limit=100`, { headers: { authorization: `Bearer ${sandboxKey}` } });
    return r.json<{ data: Array<{ id: string; data: { decision_id?: string } }> }>().data.filter((e) => e.data.decision_id === decisionId).map((e) => e.id);
  }
  const listen = (args: string[]) => startCli(['listen', '--api-base', server.baseUrl, '--interval-ms', '200', ...args], { CDS_API_KEY: sandboxKey }, { timeoutMs: 120_000 });
  const linesOf = (cli: RunningCli) => cli.stdoutLines;

  it('forwards new sandbox events, signed with the printed secret, one line per event, and stops on SIGINT with 0', async () => {
    const receiver = await startLocalReceiver();
    const before = await decide('41.00'); // already there when listen starts: not forwarded
    const cli = listen(['--forward-to', receiver.url]);
    const secretLine = await pollUntil(async () => linesOf(cli).find((l) => l.startsWith('Signing secret for this session: ')), { timeoutMs: 20_000, describe: () => linesOf(cli).join('\n') });
    const secret = secretLine.slice('Signing secret for this session: '.length);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    receiver.setSecret(secret);
    await pollUntil(async () => linesOf(cli).some((l) => l.startsWith('Forwarding all sandbox events')), { timeoutMs: 10_000 });

    const decisions = [await decide('52.00'), await decide('63.00')];
    const expected = (await Promise.all(decisions.map(eventIdsOf))).flat();
    expect(expected.length).toBe(8); // application.created, decision.created, score.completed, decision.finalized each
    await pollUntil(async () => expected.every((id) => receiver.received.some((r) => r.headers['svc-webhook-id'] === id)), {
      timeoutMs: 20_000,
      describe: () => `stdout:\n${linesOf(cli).join('\n')}`,
    });

    // Exactly the new events, once each, each verified with the printed secret.
    expect(receiver.received.map((r) => r.headers['svc-webhook-id']).sort()).toEqual([...expected].sort());
    for (const id of await eventIdsOf(before)) expect(receiver.received.some((r) => r.headers['svc-webhook-id'] === id)).toBe(false);
    for (const r of receiver.received) {
      expect(r.verified).toBe(true);
      expect(r.rawHeaderNames.filter((h) => !['Host', 'Connection', 'Content-Length'].includes(h)).sort()).toEqual(
        ['Content-Type', 'Svc-Signature', 'Svc-Webhook-Id', 'Svc-Webhook-Type', 'User-Agent'].sort(),
      );
      expect(r.headers['user-agent']).toBe('Svc-Webhooks/1.0');
      expect(r.headers['content-type']).toBe('application/json');
      const body = JSON.parse(r.body) as { id: string; type: string; created: number; attempt: number; data: Record<string, unknown> };
      expect(Object.keys(body)).toEqual(['id', 'type', 'created', 'attempt', 'data']);
      expect(body.attempt).toBe(1);
      expect(body.id).toBe(r.headers['svc-webhook-id']);
      expect(body.type).toBe(r.headers['svc-webhook-type']);
      // The data is the event history's, byte for byte.
      const stored = await httpRequest(`${server.baseUrl}/v1/events/${body.id}`, { headers: { authorization: `Bearer ${sandboxKey}` } });
      expect(r.body).toBe(stored.body.replace(`"created":${body.created},`, `"created":${body.created},"attempt":1,`));
    }
    // One line per event: time, type, id, the receiver's answer and the duration.
    for (const id of expected) {
      const line = linesOf(cli).filter((l) => l.includes(id));
      expect(line, id).toHaveLength(1);
      expect(line[0]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z {2}[a-z_.]+ +[0-9a-f-]{36} {2}-> 200 OK \(\d+ ms\)$/);
    }

    // The receiver's failure is printed as it answered; a receiver that is gone, as the error.
    receiver.setStatus(503);
    const failing = await decide('74.00');
    const failingIds = await eventIdsOf(failing);
    await pollUntil(async () => failingIds.every((id) => linesOf(cli).some((l) => l.includes(id))), { timeoutMs: 20_000 });
    for (const id of failingIds) expect(linesOf(cli).find((l) => l.includes(id))).toMatch(/-> 503 Service Unavailable \(\d+ ms\)$/);
    await receiver.stop();
    const gone = await decide('85.00');
    const goneIds = await eventIdsOf(gone);
    await pollUntil(async () => goneIds.every((id) => linesOf(cli).some((l) => l.includes(id))), { timeoutMs: 20_000 });
    for (const id of goneIds) expect(linesOf(cli).find((l) => l.includes(id))).toMatch(/-> failed: connection refused \(ECONNREFUSED\)/);

    cli.child.kill('SIGINT');
    const result = await cli.result;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim().split('\n').pop()).toBe('Stopped.');
  });

  it('--since replays older events; --json prints one object per line; --events filters', async () => {
    const receiver = await startLocalReceiver();
    const old = await decide('96.00');
    expect(await eventIdsOf(old)).toHaveLength(4);
    const cli = listen(['--forward-to', receiver.url, '--since', '0', '--json', '--events', 'decision.finalized', '--secret', 'whsec_fixed-secret-for-this-test']);
    receiver.setSecret('whsec_fixed-secret-for-this-test');
    const ready = JSON.parse(await pollUntil(async () => linesOf(cli)[0], { timeoutMs: 20_000 })) as Record<string, unknown>;
    expect(ready).toMatchObject({ type: 'ready', secret: 'whsec_fixed-secret-for-this-test', forward_to: receiver.url, events: ['decision.finalized'] });
    await pollUntil(async () => receiver.received.some((r) => r.body.includes(old)), { timeoutMs: 20_000, describe: () => linesOf(cli).join('\n') });
    await pollUntil(async () => linesOf(cli).length >= 1 + receiver.received.length, { timeoutMs: 10_000 });
    expect(receiver.received.every((r) => r.headers['svc-webhook-type'] === 'decision.finalized' && r.verified)).toBe(true);
    const lines = linesOf(cli).slice(1).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).toMatchObject({ type: 'forwarded', event_type: 'decision.finalized', status: 200, error: null, duration_ms: expect.any(Number) });
    cli.child.kill('SIGINT');
    expect((await cli.result).code).toBe(0);
    await receiver.stop();
  });

  it('refuses a live key, a remote --forward-to and an unknown event type, saying why', async () => {
    const live = await runCli(['listen', '--api-key', liveKey, '--forward-to', 'http://localhost:4242/x', '--api-base', server.baseUrl]);
    expect(live.code).toBe(65);
    expect(live.stderr).toContain('forwards sandbox events only, and this is a live key (svc_live_)');
    const remote = await runCli(['listen', '--api-key', sandboxKey, '--forward-to', 'http://example.com/x', '--api-base', server.baseUrl]);
    expect(remote.code).toBe(65);
    expect(remote.stderr).toContain('--forward-to must point at this machine');
    const badType = await runCli(['listen', '--api-key', sandboxKey, '--forward-to', 'http://localhost:4242/x', '--events', 'decision.approved', '--api-base', server.baseUrl]);
    expect(badType.code).toBe(65);
    expect(badType.stderr).toContain('--events: decision.approved is not an event type; allowed: decision.finalized');
    const revoked = await runCli(['listen', '--api-key', 'svc_test_doesnotexist000000000000000000', '--forward-to', 'http://localhost:4242/x', '--api-base', server.baseUrl]);
    expect(revoked.code).toBe(65);
    expect(revoked.stderr).toContain('the service refused the API key (401:');
    const noKey = await runCli(['listen', '--forward-to', 'http://localhost:4242/x']);
    expect(noKey.code).toBe(64);
  });
});
