import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Vitest's own order (slowest first once it has timings, largest file first before) puts the
 * quick soaks' small file last in a fresh clone, where it then ran alone for two minutes at the
 * end (a clean clone's suite 236 s -> 377 s). The soaks go first: they run beside the others.
 * The Chromium suites go last: with timings they are the slowest files, so they ran beside the
 * soaks, and a Chromium beside six soak processes starved the SQLite soak's server of the CPU
 * (2 of 4 full runs on 2026-12-02: its event loop 0.98 busy on 0.2 of a core, creates timing out
 * after 30 s; the soak alone and a clean clone's order passed).
 */
class SoakFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const soak = sorted.filter((f) => /[/\\]soak-quick\.test\.ts$/.test(f.moduleId));
    const browser = sorted.filter((f) => /\.browser\.test\.ts$/.test(f.moduleId));
    return [...soak, ...sorted.filter((f) => !soak.includes(f) && !browser.includes(f)), ...browser];
  }
}

// One runner for every workspace. Integration suites start real SQLite/PostgreSQL/Redis and
// real servers, so they run in forked processes with generous timeouts; nothing here is timed.
// One file per core at once: vitest's default leaves a core free (one file at a time on the
// 2-core CI machine), but these files mostly wait on sockets, disks and Chromium, so two at once
// halve the run (468 s -> 243 s on 2 cores). Files never share state: every file makes its own
// databases, data folders, ports, tenants and keys (support/databases.ts, support/server-process.ts).
// At most four at once: two files at once peaked at 25 PostgreSQL connections (pg_stat_activity
// sampled every 0.3 s through a whole run), and PostgreSQL's default limit is 100.
// Files share their worker process (`isolate: false`): each worker imports the server's modules
// once instead of once per file. A fresh import cost every file 2 to 3 s (a 120-file run spent
// 283 of its 988 worker-seconds importing; 8 min 16 s -> 6 min 31 s on 2 cores). It is safe here
// because the files keep nothing process-wide: no module mocks, no stubbed globals or environment,
// and the server's module-level caches hold only compiled, immutable documents and statements
// (db/statements.ts's registry of statement texts then holds both dialects' texts; tests that read
// it pick PostgreSQL's).
// The global setup archives every service log line of the run and fails the run if any of them
// holds PII, a key or a secret (server/test/support/log-scan.ts).
export default defineConfig({
  test: {
    include: ['server/test/**/*.test.ts', 'sdks/node/test/**/*.test.ts'],
    pool: 'forks',
    poolOptions: { forks: { isolate: false } },
    maxWorkers: Math.min(availableParallelism(), 4),
    minWorkers: 1,
    sequence: { sequencer: SoakFirst },
    globalSetup: ['server/test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
