#!/usr/bin/env node
/**
 * `npm run soak`: the traffic soak (soak/run.mjs, with every argument passed on), then the fuzz
 * soak when the repository has one (`npm run soak:fuzz`). Both run even if the first fails, so
 * one report never hides the other; the exit code is the first non-zero one.
 *
 *   npm run soak -- --minutes 10          (build, traffic for 10 minutes, then the fuzz run)
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const scripts = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts ?? {};

const runs = [{ name: 'traffic soak', command: process.execPath, args: [path.join(ROOT, 'soak', 'run.mjs'), ...process.argv.slice(2)] }];
if (scripts['soak:fuzz']) runs.push({ name: 'fuzz soak', command: process.platform === 'win32' ? 'npm.cmd' : 'npm', args: ['run', 'soak:fuzz'] });
else process.stderr.write('npm run soak: no soak:fuzz script in package.json; running the traffic soak only\n');

let exitCode = 0;
const results = [];
for (const run of runs) {
  const r = spawnSync(run.command, run.args, { cwd: ROOT, stdio: 'inherit' });
  const code = r.status ?? 1;
  results.push(`${run.name}: ${code === 0 ? 'passed' : `FAILED (exit ${code}${r.signal ? `, ${r.signal}` : ''})`}`);
  if (code !== 0 && exitCode === 0) exitCode = code;
}
process.stdout.write(`\n${results.join('\n')}\n`);
process.exit(exitCode);
