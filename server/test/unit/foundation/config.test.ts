import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/config.js';

const tmp = () => mkdtempSync(path.join(tmpdir(), 'cds-config-'));

describe('configuration', () => {
  it('has a safe default for every variable of the embedded setup', () => {
    const dir = tmp();
    const c = loadConfig({}, dir);
    expect(c.port).toBe(3000);
    expect(c.host).toBe('127.0.0.1');
    expect(c.databaseUrl).toBeNull();
    expect(c.redisUrl).toBeNull();
    expect(c.publicBaseUrl).toBe('http://localhost:3000');
    expect(c.webhookAllowPrivateNetworks).toBe(false);
    expect(c.webhookRetryDelaysMs).toBeNull();
    expect(c.rateLimits).toEqual({ livePerSecond: 100, sandboxPerSecond: 25 });
    expect(c.dataDir).toBe(path.join(dir, 'data'));
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('generates the encryption key once into the data folder, readable only by its owner', () => {
    const dir = tmp();
    const first = loadConfig({}, dir);
    const second = loadConfig({}, dir);
    expect(first.dataEncryptionKey.equals(second.dataEncryptionKey)).toBe(true);
    expect(first.dataEncryptionKeySource).toBe('generated-file');
    const file = path.join(dir, 'data', 'encryption.key');
    expect(readFileSync(file, 'utf8').trim()).toHaveLength(64);
    expect(statSync(file).mode & 0o077).toBe(0);
  });

  it('requires DATA_ENCRYPTION_KEY in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' }, tmp())).toThrow(/DATA_ENCRYPTION_KEY is required/);
    const key = Buffer.alloc(32, 7);
    expect(loadConfig({ NODE_ENV: 'production', DATA_ENCRYPTION_KEY: key.toString('base64') }, tmp()).dataEncryptionKey.equals(key)).toBe(true);
  });

  it('names every bad variable in one error', () => {
    try {
      loadConfig({ PORT: 'abc', DATABASE_URL: 'mysql://x', REDIS_URL: 'http://x', RATE_LIMIT_LIVE_PER_S: '0', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'yes', TLS_CERT_FILE: '/nope', DATA_ENCRYPTION_KEY: 'short' }, tmp());
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const text = (err as Error).message;
      for (const name of ['PORT', 'DATABASE_URL', 'REDIS_URL', 'RATE_LIMIT_LIVE_PER_S', 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', 'TLS_CERT_FILE and TLS_KEY_FILE', 'DATA_ENCRYPTION_KEY']) {
        expect(text).toContain(name);
      }
    }
  });

  it('reads the scale-out settings of each role, with defaults and bounds', () => {
    const defaults = loadConfig({}, tmp());
    expect(defaults.databasePoolSize).toBe(10);
    expect(defaults.databaseStatementTimeoutMs).toBe(15_000);
    expect(loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '0' }, tmp()).databaseStatementTimeoutMs).toBe(0);
    expect(defaults.httpRequestTimeoutMs).toBe(300_000);
    expect(loadConfig({ HTTP_REQUEST_TIMEOUT_MS: '30000' }, tmp()).httpRequestTimeoutMs).toBe(30_000);
    expect(() => loadConfig({ HTTP_REQUEST_TIMEOUT_MS: '0' }, tmp())).toThrow(/HTTP_REQUEST_TIMEOUT_MS must be a whole number from 1000/);
    expect(defaults.webhookDelivery).toEqual({ concurrency: 64, perEndpointConcurrency: 8 });
    expect(defaults.shutdownDrainMs).toBe(0);
    expect(defaults.trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '2' }, tmp()).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.5, 10.1.0.0/16,loopback,fd00::/8' }, tmp()).trustProxy).toEqual(['10.0.0.5', '10.1.0.0/16', 'loopback', 'fd00::/8']);
    for (const bad of ['0', 'yes', '10.0.0.0/33', '10.0.0.5/8/1', 'lb.internal']) expect(() => loadConfig({ TRUST_PROXY: bad }, tmp())).toThrow(/TRUST_PROXY/);
    const set = loadConfig({ DATABASE_POOL_SIZE: '4', WEBHOOK_CONCURRENCY: '16', WEBHOOK_ENDPOINT_CONCURRENCY: '2', SHUTDOWN_DRAIN_MS: '15000' }, tmp());
    expect(set.databasePoolSize).toBe(4);
    expect(set.webhookDelivery).toEqual({ concurrency: 16, perEndpointConcurrency: 2 });
    expect(set.shutdownDrainMs).toBe(15_000);
    try {
      loadConfig({ DATABASE_POOL_SIZE: '0', DATABASE_STATEMENT_TIMEOUT_MS: '15s', WEBHOOK_CONCURRENCY: 'many', WEBHOOK_ENDPOINT_CONCURRENCY: '-1', SHUTDOWN_DRAIN_MS: '1h' }, tmp());
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      for (const name of ['DATABASE_POOL_SIZE', 'DATABASE_STATEMENT_TIMEOUT_MS', 'WEBHOOK_CONCURRENCY', 'WEBHOOK_ENDPOINT_CONCURRENCY', 'SHUTDOWN_DRAIN_MS']) expect((err as Error).message).toContain(name);
    }
  });

  it("reads where SQLite's writer thread runs: auto by default, always or off, nothing else", () => {
    expect(loadConfig({}, tmp()).sqliteWriterThread).toBe('auto');
    expect(loadConfig({ CDS_SQLITE_WRITER_THREAD: 'always' }, tmp()).sqliteWriterThread).toBe('always');
    expect(loadConfig({ CDS_SQLITE_WRITER_THREAD: 'off' }, tmp()).sqliteWriterThread).toBe('off');
    for (const bad of ['1', '0', 'yes', 'ALWAYS']) expect(() => loadConfig({ CDS_SQLITE_WRITER_THREAD: bad }, tmp()), bad).toThrow(/CDS_SQLITE_WRITER_THREAD must be auto, always or off/);
  });

  it('takes a shortened webhook retry schedule for soaks, refuses a malformed one, and refuses any in production', () => {
    expect(loadConfig({ WEBHOOK_RETRY_DELAYS_MS: '1000, 5000,30000' }, tmp()).webhookRetryDelaysMs).toEqual([1000, 5000, 30000]);
    for (const bad of ['1000,,2000', '50', '1000,abc', '-1', '1.5', Array.from({ length: 21 }, () => '1000').join(',')]) {
      expect(() => loadConfig({ WEBHOOK_RETRY_DELAYS_MS: bad }, tmp()), bad).toThrow(/WEBHOOK_RETRY_DELAYS_MS must be 1 to 20/);
    }
    expect(loadConfig({ WEBHOOK_RETRY_DELAYS_MS: '' }, tmp()).webhookRetryDelaysMs).toBeNull(); // empty is unset, like every variable
    const key = Buffer.alloc(32, 7).toString('base64');
    expect(() => loadConfig({ NODE_ENV: 'production', DATA_ENCRYPTION_KEY: key, WEBHOOK_RETRY_DELAYS_MS: '1000' }, tmp())).toThrow(/cannot be set when NODE_ENV=production/);
  });
});
