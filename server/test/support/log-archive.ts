/**
 * Archives every log line the service writes during a test run, for the end-of-run PII scan
 * (support/log-scan.ts). The run folder comes from CDS_TEST_LOG_DIR, set by vitest's global setup
 * (support/global-setup.ts) before the test workers start; without it (a suite run some other way)
 * nothing is archived. One file per test file and source, appended synchronously: log lines are
 * few and small, and a crash must not lose the lines that came before it.
 */
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';

const runDir = process.env.CDS_TEST_LOG_DIR;

/** The current test file's name (for the archive's file names), or the process id outside a test. */
function suiteName(): string {
  try {
    const testPath = expect.getState().testPath;
    if (testPath) return path.basename(testPath).replace(/\.test\.ts$/, '');
  } catch {
    // Outside a test (e.g. a global hook): fall through.
  }
  return `pid${process.pid}`;
}

/** Returns a function that appends lines to `<run>/<suite>.<source>.log`, or null when not archiving. */
export function logArchive(source: string): ((lines: readonly string[]) => void) | null {
  if (!runDir) return null;
  const file = path.join(runDir, `${suiteName()}.${source}.log`);
  return (lines) => {
    if (lines.length > 0) appendFileSync(file, `${lines.join('\n')}\n`);
  };
}
