import { defineConfig } from 'vitest/config';

// One runner for every workspace. Integration suites start real SQLite/PostgreSQL/Redis and
// real servers, so they run in forked processes with generous timeouts; nothing here is timed.
// The global setup archives every service log line of the run and fails the run if any of them
// holds PII, a key or a secret (server/test/support/log-scan.ts).
export default defineConfig({
  test: {
    include: ['server/test/**/*.test.ts', 'sdks/node/test/**/*.test.ts'],
    pool: 'forks',
    globalSetup: ['server/test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
