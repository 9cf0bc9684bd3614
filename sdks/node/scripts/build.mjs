// Build both module formats with tsc alone (no bundler): clean dist/, emit dist/esm and dist/cjs with
// their .d.ts, then mark dist/cjs as CommonJS (the package itself is "type": "module").
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync(path.join(root, 'dist'), { recursive: true, force: true });
for (const project of ['tsconfig.esm.json', 'tsconfig.cjs.json']) {
  execFileSync(process.execPath, [tsc, '-p', path.join(root, project)], { stdio: 'inherit' });
}
mkdirSync(path.join(root, 'dist', 'cjs'), { recursive: true });
writeFileSync(path.join(root, 'dist', 'cjs', 'package.json'), JSON.stringify({ type: 'commonjs' }) + '\n');
writeFileSync(path.join(root, 'dist', 'esm', 'package.json'), JSON.stringify({ type: 'module' }) + '\n');
