/**
 * Gray fault: a thin pipe. For 20 s each connection between the app instances and Redis carries
 * at most KB_PER_SECOND KiB/s each way (a saturated link or a noisy neighbour), below what the
 * sale's rate needs, so replies queue behind each other.
 */
import type { FaultScenario } from '../harness/index.js';
import { runGrayScenario } from './run-gray-scenario.js';

const KB_PER_SECOND = 32;

export const bandwidthLimit: FaultScenario = {
  name: 'bandwidth-limit',
  variants: [`${KB_PER_SECOND} KiB/s per connection`],
  run: (variant, size) =>
    runGrayScenario({
      scenario: 'bandwidth-limit',
      variant,
      size,
      faultMs: { test: 4_000, report: 20_000 },
      fault: {
        begin: async ({ redis }) => redis.addToxic('thin', { type: 'bandwidth', kbPerSecond: KB_PER_SECOND }),
        end: async ({ redis }) => redis.removeToxic('thin'),
        reportRedisThroughput: true,
      },
    }),
};
