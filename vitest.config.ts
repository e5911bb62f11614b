import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    // Every test file talks to real Redis and MariaDB with its own database and key prefix
    // (see test/support), so files can run in parallel.
    pool: 'forks',
    globalSetup: ['test/support/global-setup.ts', 'test/support/web-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    env: { NODE_ENV: 'test' },
  },
});
