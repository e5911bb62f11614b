/**
 * Gray fault: flaky connections. For 20 s every open connection from the app instances to Redis
 * and to MySQL is reset (TCP RST) once a second, mid-sale: requests and worker writes in flight
 * lose their connection, clients reconnect (new connections are let through), and an order whose
 * reply was lost may be accepted by Redis all the same ("accepted, unanswered").
 */
import type { FaultScenario } from './harness.js';
import { runGrayScenario } from './gray.js';

const EVERY_MS = 1_000;

export const connectionReset: FaultScenario = {
  name: 'connection-reset',
  variants: ['Redis + MySQL, every 1 s'],
  run: (variant, size) => {
    let timer: NodeJS.Timeout | undefined;
    return runGrayScenario({
      scenario: 'connection-reset',
      variant,
      size,
      faultMs: { test: 6_000, report: 20_000 },
      fault: {
        begin: (proxies) => {
          const resetBoth = () => {
            proxies.redis.reset();
            proxies.mysql.reset();
          };
          resetBoth();
          timer = setInterval(resetBoth, EVERY_MS);
        },
        end: () => clearInterval(timer),
        figures: ({ redis, mysql }) => ({ redisResets: redis.connectionsReset, mysqlResets: mysql.connectionsReset }),
      },
    });
  },
};
