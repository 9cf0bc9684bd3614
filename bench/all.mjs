// `npm run bench [-- --quick ...]`: the API benchmark (bench/run.mjs, which takes the arguments)
// and then webhook delivery throughput (bench/webhooks.mjs; fewer events with --quick).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const here = (f) => fileURLToPath(new URL(f, import.meta.url));
const run = (file, extra) => spawnSync(process.execPath, [here(file), ...extra], { stdio: 'inherit' }).status ?? 1;

const api = run('./run.mjs', args);
const webhooks = run('./webhooks.mjs', args.includes('--quick') ? ['--events', '500'] : []);
process.exit(api || webhooks);
