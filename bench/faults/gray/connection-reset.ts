/**
 * Gray fault: flaky connections. For 20 s every open connection from the app instances to Redis
 * and to MySQL is reset (TCP RST) once a second, mid-sale: requests and worker writes in flight
 * lose their connection, clients reconnect (new connections are let through), and an order whose
 * reply was lost may be accepted by Redis all the same ("accepted, unanswered").
 */
import type { FaultScenario } from '../harness/index.js';
import { runGrayScenario, type Proxies } from './run-gray-scenario.js';

const EVERY_MS = 1_000;

export const connectionReset: FaultScenario = {
  name: 'connection-reset',
  variants: ['Redis + MySQL, every 1 s'],
  run: (variant, size) => {
    let timer: NodeJS.Timeout | undefined;
    const resetBoth = (proxies: Proxies) => Promise.all([proxies.redis.reset(), proxies.mysql.reset()]);
    return runGrayScenario({
      scenario: 'connection-reset',
      variant,
      size,
      faultMs: { test: 4_000, report: 20_000 },
      fault: {
        begin: async (proxies) => {
          await resetBoth(proxies);
          timer = setInterval(() => void resetBoth(proxies).catch(() => undefined), EVERY_MS);
        },
        end: async () => {
          clearInterval(timer);
          await Promise.resolve();
        },
        figures: async ({ redis, mysql }) => ({
          redisResets: (await redis.stats()).connectionsReset,
          mysqlResets: (await mysql.stats()).connectionsReset,
        }),
      },
    });
  },
};
