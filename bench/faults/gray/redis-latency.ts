/**
 * Gray fault: Redis slow. Every reply from Redis to the app instances is held 100 ms ± 50 ms
 * (uniform jitter, order kept) for 20 s: a congested network or an overloaded Redis host. Each
 * order costs a few round trips to Redis, so answers slow to a few hundred ms but should stay
 * within the deadline.
 */
import type { FaultScenario } from '../harness/index.js';
import { runGrayScenario } from './run-gray-scenario.js';

export const redisLatency: FaultScenario = {
  name: 'redis-latency',
  variants: ['100 ± 50 ms'],
  run: (variant, size) =>
    runGrayScenario({
      scenario: 'redis-latency',
      variant,
      size,
      faultMs: { test: 4_000, report: 20_000 },
      fault: {
        begin: async ({ redis }) => redis.addToxic('latency', { type: 'latency', latencyMs: 100, jitterMs: 50 }, 'downstream'),
        end: async ({ redis }) => redis.removeToxic('latency'),
      },
    }),
};
