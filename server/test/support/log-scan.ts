/**
 * "Logs captured during the whole suite contain no PII, key or secret" (issue 11 item 4).
 *
 * How it works: every log line the service writes during a test run is archived (support/
 * log-archive.ts: the in-process LogCapture of every test app, and stderr of every `cds` child
 * process) under `test-artifacts/logs/<run>/`. When the run ends, vitest's global teardown
 * (support/global-setup.ts) scans that folder with `scanLogText` and fails the run on any finding,
 * naming the file, the line number and the kind of finding, never the value itself.
 *
 * What counts, precisely (test data is synthetic, so the rules can be strict):
 * - api_key:        a full key, `svc_test_`/`svc_live_` + 40 base62 characters
 * - signing_secret: `whsec_` + 20 or more characters
 * - verify_token:   a hosted-page token, `/verify/` + 43 base64url characters (the logger masks
 *                   the path to `/verify/[token]`)
 * - ssn:            four digits in a field named ssn/ssn_last4/ssnLast4 (JSON or key=value)
 * - dob:            a date from 1900 to 2009 (log timestamps are this century; test applicants
 *                   are adults born last century), or any value of a dob/date_of_birth field
 * - phone:          an E.164 number, `+` and 10 to 15 digits
 * - email:          an email address
 * - street:         a house number and a street name (`12 Beacon Street`, `1 Market St`)
 * - password:       the passwords the portal tests use
 * Allowed, because proven harmless: masked forms (`***1234`, `•••• 0123`, `r•••@example.com`),
 * `[redacted]` values, and the documented sandbox magic numbers are not PII of anyone but are
 * still reported when they sit in an ssn field (the rule is about the field, not the digits).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export interface LogFinding {
  kind: string;
  file: string;
  line: number;
}

/** The passwords portal tests sign up and sign in with (support/portal-client.ts and suites). */
export const TEST_PASSWORDS = ['correct horse battery', 'another long passphrase'];

const RULES: Array<[string, RegExp]> = [
  ['api_key', /svc_(?:test|live)_[0-9A-Za-z]{40}(?![0-9A-Za-z])/],
  ['signing_secret', /whsec_[A-Za-z0-9+/=_-]{20,}/],
  ['verify_token', /\/verify\/[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/],
  ['ssn', /ssn(?:_?last_?4)?\\?["']?\s*[:=]\s*\\?["']?\d{4}(?!\d)/i],
  ['dob', /(?<![\d-])(?:19\d\d|200\d)-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?![\d])/],
  ['dob', /(?:dob|date_?of_?birth|birth_?date)\\?["']?\s*[:=]\s*\\?["']?\d/i],
  ['phone', /(?<![\w+])\+[1-9]\d{9,14}(?!\d)/],
  ['email', /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/],
  ['street', /\b\d{1,5}\s+(?:[A-Z][a-z]+\s+){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Boulevard|Blvd|Drive|Dr|Way|Court|Ct|Place|Pl)\b/],
];

/** Harmless look-alikes removed before the rules run. */
const ALLOWED: RegExp[] = [
  /[*•]{2,}\s?\d{2,4}/g, // masked digits: ***1234, •••• 0123
  /\b\w•{2,}@[\w.-]+/g, // masked email: r•••@example.com
  /\[redacted\]/g,
];

/** Kinds of finding in one text (a log line or a whole file), with 1-based line numbers. */
export function scanLogText(text: string, file = '<text>', extraSecrets: readonly string[] = TEST_PASSWORDS): LogFinding[] {
  const findings: LogFinding[] = [];
  text.split('\n').forEach((raw, i) => {
    let line = raw;
    for (const allowed of ALLOWED) line = line.replace(allowed, ' ');
    for (const [kind, rule] of RULES) if (rule.test(line)) findings.push({ kind, file, line: i + 1 });
    for (const secret of extraSecrets) if (line.includes(secret)) findings.push({ kind: 'password', file, line: i + 1 });
  });
  return findings;
}

/** Scan every `.log` file of a run folder. */
export function scanLogDirectory(dir: string): { files: number; lines: number; findings: LogFinding[] } {
  let files = 0;
  let lines = 0;
  const findings: LogFinding[] = [];
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.log')).sort()) {
    const text = readFileSync(path.join(dir, name), 'utf8');
    files++;
    lines += text.split('\n').filter(Boolean).length;
    findings.push(...scanLogText(text, name));
  }
  return { files, lines, findings };
}

/** A report that names where, never what (the report itself lands in CI logs). */
export function describeFindings(findings: readonly LogFinding[], limit = 40): string {
  const shown = findings.slice(0, limit).map((f) => `  ${f.file}:${f.line}  ${f.kind}`);
  return [...shown, ...(findings.length > limit ? [`  … and ${findings.length - limit} more`] : [])].join('\n');
}
