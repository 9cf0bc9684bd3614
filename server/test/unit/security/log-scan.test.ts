/**
 * The end-of-run log scan (support/log-scan.ts) finds each kind of PII, key and secret it promises
 * to, in the shapes a pino line would carry them, and passes the masked and redacted forms the
 * service is allowed to log. Without this, a scan that found nothing would prove nothing.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/lib/logger.js';
import { describeFindings, scanLogDirectory, scanLogText } from '../../support/log-scan.js';
import { LogCapture } from '../../support/test-app.js';

const kinds = (text: string) => scanLogText(text).map((f) => f.kind);

describe('log scan', () => {
  it.each([
    ['api_key', '{"msg":"auth","key":"svc_live_0123456789abcdefghijABCDEFGHIJ0123456789"}'],
    ['api_key', 'Bearer svc_test_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd'],
    ['signing_secret', '{"secret":"whsec_q83vEjYxN2w1c3RzZWNyZXQxMjM0NTY3OA=="}'],
    ['verify_token', '{"req":{"url":"/verify/Do7m7yfX0vwRNdACKRYbcpfktBdf9B8EqwCrh0GDZ3s/code"}}'],
    ['ssn', '{"consumer":{"ssn_last4":"6184"}}'],
    ['ssn', '{"ssnLast4": "6184"}'],
    ['ssn', 'identity check ssn=6184 failed'],
    ['ssn', '{"err":"{\\"ssn\\":\\"6184\\"}"}'],
    ['dob', '{"consumer":{"dob":"1981-04-17"}}'],
    ['dob', 'applicant born 1981-04-17'],
    ['phone', '{"to":"+16175550147"}'],
    ['email', '{"to":"sasha.phone@example.net"}'],
    ['street', '{"address":{"line1":"12 Beacon Street"}}'],
    ['street', 'ships to 1 Market St, San Francisco'],
    ['password', '{"body":{"password":"correct horse battery"}}'],
  ])('finds %s in %s', (kind, line) => {
    expect(kinds(line)).toContain(kind);
  });

  it('passes what the service may log: masked, redacted, ids, timestamps, amounts, hashes', () => {
    const harmless = [
      '{"level":30,"time":"2026-05-04T08:00:00.000Z","service":"cds","reqId":"req_sHPe7w01psCpb5MfVtl8","req":{"method":"POST","url":"/v1/decisions/bnpl","remoteAddress":"127.0.0.1"},"msg":"incoming request"}',
      '{"req":{"url":"/verify/[token]/code"}}',
      '{"applicant":{"email":"r•••@example.com","phone":"•••• 0123"},"ssn":"***1234"}',
      '{"consumer":{"ssn_last4":"[redacted]","dob":"[redacted]","email":"[redacted]","phone":"[redacted]"}}',
      '{"decision_id":"0b7c0f2e-4a43-4f55-9d8a-0c7d0b1c2d3e","amount":"1250.00","key_hash":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}',
      '{"msg":"webhook delivery failed","error_detail":"hooks.attacker.example resolves to a loopback address (127.0.0.1)"}',
      '{"last4":"0123","key_prefix":"svc_test_"}',
    ].join('\n');
    expect(scanLogText(harmless)).toEqual([]);
  });

  it('finds what a real pino logger writes when PII is logged, through the LogCapture every test app uses', () => {
    const capture = new LogCapture({ archive: false }); // it logs PII on purpose: kept out of the run's scan
    const logger = createLogger('info', capture);
    // Deeper than the redaction paths reach: exactly the slip the scan exists to catch.
    logger.info({ request: { applicant: { contact: { email: 'leak.test@example.org', phone: '+14155550199' } } } }, 'oops');
    logger.flush?.();
    return new Promise<void>((resolve) => setImmediate(() => {
      expect(capture.text).toContain('leak.test@example.org');
      expect(kinds(capture.text).sort()).toEqual(['email', 'phone']);
      resolve();
    }));
  });

  it('scans a run folder and reports where, never what', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cds-logscan-'));
    writeFileSync(path.join(dir, 'suite-a.app.log'), '{"msg":"ok"}\n{"consumer":{"dob":"1976-09-23"}}\n');
    writeFileSync(path.join(dir, 'suite-b.child.log'), '{"msg":"fine"}\n');
    writeFileSync(path.join(dir, 'notes.txt'), '+16175550147');
    const result = scanLogDirectory(dir);
    expect(result).toMatchObject({ files: 2, lines: 3 });
    expect(result.findings).toEqual([{ kind: 'dob', file: 'suite-a.app.log', line: 2 }, { kind: 'dob', file: 'suite-a.app.log', line: 2 }]);
    const report = describeFindings(result.findings);
    expect(report).toContain('suite-a.app.log:2  dob');
    expect(report).not.toContain('1976');
  });
});
