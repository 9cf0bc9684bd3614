/**
 * `cds serve` with TLS_CERT_FILE/TLS_KEY_FILE serves HTTPS directly (and nothing in clear on that
 * port); SIGTERM shuts it down gracefully: exit code 0 within a few seconds, a shutdown log line,
 * and the port stops answering (decisions.md section 12).
 */
import https from 'node:https';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, isPostgresReachable, type TestDatabase } from '../../support/databases.js';
import { cleanupProcesses, databaseEnv, httpRequest, makeTempDir, startServer, type ServerProcess } from '../../support/server-process.js';

async function selfSignedCertificate(): Promise<{ certFile: string; keyFile: string; cert: string }> {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] },
    ],
  });
  const dir = makeTempDir('cds-tls-');
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  writeFileSync(certFile, pems.cert);
  writeFileSync(keyFile, pems.private, { mode: 0o600 });
  return { certFile, keyFile, cert: pems.cert };
}

/** SIGTERM, then: exit 0 within a few seconds, a shutdown line in the log, the port closed. */
async function expectGracefulShutdown(server: ServerProcess): Promise<void> {
  const exit = await server.stop(10_000);
  expect(exit.forced, `did not exit within 10 s of SIGTERM; stderr:\n${server.stderrText()}`).toBe(false);
  expect(exit.code, server.stderrText()).toBe(0);
  expect(exit.signal).toBeNull();
  const shutdown = server.logs().find((l) => typeof l.msg === 'string' && /shutting down/i.test(l.msg));
  expect(shutdown, server.stderrText()).toBeDefined();
  expect(shutdown!.signal).toBe('SIGTERM');
  expect(server.stderrText()).not.toMatch(/shutdown took longer/);
  await expect(server.request('/healthz', { timeoutMs: 2_000 })).rejects.toThrow();
}

afterAll(cleanupProcesses);

describe('HTTPS served directly, and graceful shutdown', () => {
  let tls: Awaited<ReturnType<typeof selfSignedCertificate>>;
  let server: ServerProcess;

  beforeAll(async () => {
    tls = await selfSignedCertificate();
    server = await startServer({ env: { TLS_CERT_FILE: tls.certFile, TLS_KEY_FILE: tls.keyFile }, ca: tls.cert });
  }, 60_000);

  afterAll(async () => {
    await server?.kill9();
  });

  it('answers HTTPS with the configured certificate', async () => {
    expect(server.baseUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const r = await httpRequest(`${server.baseUrl}/healthz`, { ca: tls.cert });
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({ status: 'ok' });
    expect(r.headers['request-id']).toMatch(/^req_/);
    // By name too (the certificate covers localhost).
    const byName = await httpRequest(`https://localhost:${server.port}/healthz`, { ca: tls.cert });
    expect(byName.status).toBe(200);
    // The API behind it: no key is 401 over TLS as well.
    expect((await server.request('/v1/x')).status).toBe(401);
  });

  it('presents exactly that certificate (untrusted without the CA)', async () => {
    await expect(httpRequest(`${server.baseUrl}/healthz`)).rejects.toThrow(/self[- ]signed|unable to verify|certificate/i);
  });

  it('does not answer plain HTTP on the same port', async () => {
    const plain = await httpRequest(`http://127.0.0.1:${server.port}/healthz`, { timeoutMs: 5_000 }).then(
      (r) => `HTTP ${r.status}`,
      (err: unknown) => `error: ${String(err)}`,
    );
    expect(plain).not.toBe('HTTP 200');
    expect(plain).toMatch(/^error: |^HTTP [45]\d\d$/);
  });

  it('SIGTERM exits 0 within a few seconds, even with an idle keep-alive connection open, and logs the shutdown', async () => {
    const agent = new https.Agent({ keepAlive: true, ca: tls.cert });
    try {
      const status = await new Promise<number>((resolve, reject) => {
        https
          .get(`${server.baseUrl}/healthz`, { agent }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          })
          .on('error', reject);
      });
      expect(status).toBe(200);
      await expectGracefulShutdown(server);
    } finally {
      agent.destroy();
    }
  });
});

const postgres = await isPostgresReachable();

describe.skipIf(!postgres)('graceful shutdown on PostgreSQL', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('postgres');
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('SIGTERM closes the pool and exits 0', async () => {
    const server = await startServer({ env: databaseEnv(db) });
    expect((await server.request('/readyz')).status).toBe(200);
    await expectGracefulShutdown(server);
  });
});
