import { defineConfig } from 'vitest/config';
import LongestProjectsFirst from './test/support/sequencer.js';

// The suite as Vitest projects (docs/testing.md): `vitest run --project unit` runs one.
// The options here are shared: `extends: true` gives them to each project.
export default defineConfig({
  test: {
    environment: 'node',
    // Test files that use services get their own database and key prefix (test/support/test-env.ts),
    // so files run in parallel.
    pool: 'forks',
    // Four files at a time even on two cores (Vitest's default there is one): most of a file's
    // time is spent waiting on Redis, MariaDB, child processes and timers, not on the CPU; with
    // four, the first group keeps both cores busy (docs/testing.md).
    maxWorkers: 4,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll retries for up to 10 s: pages, workers and flushes update asynchronously, and
    // more slowly while the whole suite runs.
    expect: { poll: { timeout: 10_000 } },
    env: { NODE_ENV: 'test' },
    // The long files of a group first (sequencer.ts).
    sequence: { sequencer: LongestProjectsFirst },
    // Beside Vitest's summary, each file's time with its hooks, for `npm run docs:testing`
    // (test-results/suite-report.json).
    reporters: ['default', './test/support/suite-report.ts'],
    projects: [
      {
        extends: true,
        // The static checks (types, lint, format) as tests: they share the first group's two
        // workers with the tests that mostly wait, instead of running before them.
        test: { name: 'checks', include: ['test/checks/**/*.test.ts'], testTimeout: 600_000 },
      },
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
        // The product as deployed, with nothing timed against a deadline: the browser tests and the
        // scale-out topology, beside the integration files. Needs web/dist (built when stale) and
        // Debian's Chromium (installed when missing).
        test: {
          name: 'system',
          include: ['test/system/web/**/*.test.ts', 'test/system/topology/**/*.test.ts', 'test/system/edge/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts', 'test/support/web-setup.ts', 'test/support/log-scan.ts'],
        },
      },
      {
        extends: true,
        // Load and deadlines: the fault scenarios and the benchmark harness drive sales at app
        // processes; the fault scenarios judge answers against the request deadline, which the
        // first group's load would distort. They run after it (groupOrder), two at a time: each
        // scenario offers a fixed rate (200–300 requests/s) that leaves most of a core to the other.
        // The harness saturates the machine on purpose, so it goes first, beside the RabbitMQ
        // scenarios, whose checks count orders, never time them (sequencer.ts). One server build
        // compiled for all of them (bench-server-setup.ts).
        test: {
          name: 'load',
          sequence: { groupOrder: 1 },
          maxWorkers: 2,
          include: ['test/system/faults/**/*.test.ts', 'test/system/bench/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts', 'test/support/bench-server-setup.ts', 'test/support/log-scan.ts'],
        },
      },
    ],
  },
});
