// `npm run bench [-- --quick ...]`: the API benchmark (bench/run.mjs, which takes the arguments),
// then webhook delivery throughput (bench/webhooks.mjs; fewer events with --quick), and, with
// `--memory N`, the memory run over N decisions (bench/memory.mjs, SQLite).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const memoryAt = args.indexOf('--memory');
const memoryDecisions = memoryAt >= 0 ? args.splice(memoryAt, 2)[1] : null;
if (memoryAt >= 0 && !/^\d+$/.test(memoryDecisions ?? '')) {
  process.stderr.write('--memory needs a number of decisions, e.g. --memory 1000000\n');
  process.exit(2);
}
const here = (f) => fileURLToPath(new URL(f, import.meta.url));
const run = (file, extra) => spawnSync(process.execPath, [here(file), ...extra], { stdio: 'inherit' }).status ?? 1;

const api = run('./run.mjs', args);
const webhooks = run('./webhooks.mjs', args.includes('--quick') ? ['--events', '500'] : []);
const memory = memoryDecisions ? run('./memory.mjs', ['--decisions', memoryDecisions]) : 0;
process.exit(api || webhooks || memory);
