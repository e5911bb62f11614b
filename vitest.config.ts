import { defineConfig } from 'vitest/config';

// Three tiers (docs/testing.md), each a Vitest project: `vitest run --project unit` runs one.
// The options here are shared: `extends: true` gives them to each project.
export default defineConfig({
  test: {
    environment: 'node',
    // Test files that use services get their own database and key prefix (test/support/test-env.ts),
    // so files run in parallel.
    pool: 'forks',
    // Two files at a time even on two cores (Vitest's default there is one): most of a file's time
    // is spent waiting on Redis, MariaDB, child processes and timers, not on the CPU.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll retries for up to 10 s: pages, workers and flushes update asynchronously, and
    // more slowly while the whole suite runs.
    expect: { poll: { timeout: 10_000 } },
    env: { NODE_ENV: 'test' },
    projects: [
      {
        extends: true,
        // No Redis, no MariaDB, no global setup: runs anywhere, in seconds.
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'] },
      },
      {
        extends: true,
        // Real Redis and MariaDB: the global setup fails fast, naming the one that is missing.
        // Then the app logs of the whole run are scanned for phones and tokens in clear (log-scan.ts).
        test: { name: 'integration', include: ['test/integration/**/*.test.ts'], globalSetup: ['test/support/global-setup.ts', 'test/support/log-scan.ts'] },
      },
      {
        extends: true,
        // The services, plus web/dist (built when stale) and Debian's Chromium (installed when missing).
        // One file at a time, after the other tiers (groupOrder): each starts several processes and
        // measures timings (faults, topology, bench) that a neighbour's load would distort.
        test: {
          name: 'system',
          sequence: { groupOrder: 1 },
          fileParallelism: false,
          include: ['test/system/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts', 'test/support/web-setup.ts', 'test/support/log-scan.ts'],
        },
      },
    ],
  },
});
