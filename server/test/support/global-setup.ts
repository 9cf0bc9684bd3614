/**
 * vitest global setup: one log folder per run (test-artifacts/logs/<run>/, gitignored) that every
 * test app and child process archives its log lines into (support/log-archive.ts), and, when the
 * run ends, the PII/secret scan of that folder (support/log-scan.ts): any finding fails the run.
 * The last few runs' folders are kept for inspection; older ones are removed.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describeFindings, scanLogDirectory } from './log-scan.js';

const KEEP_RUNS = 5;

export default function setup(): () => void {
  const root = path.resolve(import.meta.dirname, '../../../test-artifacts/logs');
  mkdirSync(root, { recursive: true });
  const run = `${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`;
  const dir = path.join(root, run);
  mkdirSync(dir);
  for (const old of readdirSync(root).sort().slice(0, -KEEP_RUNS)) rmSync(path.join(root, old), { recursive: true, force: true });
  // Read by the test workers (forked after this runs), never by the service.
  process.env.CDS_TEST_LOG_DIR = dir;

  return () => {
    const { files, lines, findings } = scanLogDirectory(dir);
    if (findings.length > 0) {
      throw new Error(`PII, keys or secrets in the service's logs of this run (${findings.length} findings in ${files} files, ${lines} lines; folder ${dir}):\n${describeFindings(findings)}`);
    }
    console.log(`log scan: ${lines} log lines in ${files} files, no PII, key or secret (${path.relative(process.cwd(), dir)})`);
  };
}
