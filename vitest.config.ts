import { defineConfig } from 'vitest/config';

// One runner for every workspace. Integration suites start real SQLite/PostgreSQL/Redis and
// real servers, so they run in forked processes with generous timeouts; nothing here is timed.
export default defineConfig({
  test: {
    include: ['server/test/**/*.test.ts', 'sdks/node/test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
