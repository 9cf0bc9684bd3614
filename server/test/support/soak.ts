/**
 * Runs the traffic soak (soak/run.mjs) as a child process and reads its report, for the suites
 * that run its quick forms (operations/soak-quick.test.ts). The report goes to a temporary folder,
 * never to soak/results/.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeTempDir, runNodeFile } from './server-process.js';

const SOAK = fileURLToPath(new URL('../../../soak/run.mjs', import.meta.url));

export interface SoakRun {
  code: number | null;
  /** The Markdown report; empty when the soak failed before writing one. */
  report: string;
  /** The report's JSON path (`<out>.json`). */
  jsonFile: string;
  /** The end of its output and the start of its report: what an assertion on `code` should print. */
  diagnostics: string;
}

export async function runSoak(args: string[]): Promise<SoakRun> {
  const out = path.join(makeTempDir('cds-soak-'), 'quick');
  const run = await runNodeFile(SOAK, [...args, '--out', out], {}, { timeoutMs: 400_000 });
  let report = '';
  try {
    report = readFileSync(`${out}.md`, 'utf8');
  } catch {
    // no report: the soak failed before writing one; its output says why
  }
  return { code: run.code, report, jsonFile: `${out}.json`, diagnostics: `${run.stdout.slice(-3000)}\n${run.stderr.slice(-3000)}\n${report.slice(0, 4000)}` };
}
