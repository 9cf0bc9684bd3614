// `npm run bench [-- --quick ...]`: the API benchmark (bench/run.mjs, which takes the arguments),
// then webhook delivery throughput (bench/webhooks.mjs; fewer events with --quick), the multi-node
// shape under load (bench/scale-out.mjs; shorter with --quick; skipped without PostgreSQL and
// Redis), and, with `--memory N`, the memory run over N decisions (bench/memory.mjs, SQLite).
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
const quick = args.includes('--quick');
const webhooks = run('./webhooks.mjs', quick ? ['--events', '500'] : []);
const scaleOut = run('./scale-out.mjs', quick ? ['--duration', '5', '--warm-up', '1', '--out', 'scale-out-quick'] : []);
const memory = memoryDecisions ? run('./memory.mjs', ['--decisions', memoryDecisions]) : 0;
process.exit(api || webhooks || scaleOut || memory);
