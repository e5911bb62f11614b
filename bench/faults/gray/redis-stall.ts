/**
 * Gray fault: Redis hangs. The proxy between the app instances and Redis holds every byte both
 * ways (open connections and new ones) for 20 s, then lets them through in order: what a Redis
 * stuck in a long command, a stalled VM or a black-holed network path looks like to a client.
 * Nothing is refused and nothing resets, so only the app's own deadline can answer a request
 * meanwhile (503 with Retry-After), never the Redis client.
 */
import type { FaultScenario } from '../harness/index.js';
import { runGrayScenario } from './run-gray-scenario.js';

export const redisStall: FaultScenario = {
  name: 'redis-stall',
  variants: ['stall'],
  run: (variant, size) =>
    runGrayScenario({
      scenario: 'redis-stall',
      variant,
      size,
      faultMs: { test: 4_000, report: 20_000 },
      fault: {
        begin: async ({ redis }) => redis.addToxic('stall', { type: 'stall' }),
        end: async ({ redis }) => redis.removeToxic('stall'),
      },
    }),
};
