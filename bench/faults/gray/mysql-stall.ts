/**
 * Gray fault: MySQL hangs. The proxy between the app instances and MariaDB holds every byte both
 * ways for 20 s (unlike mysql-outage, nothing is refused or reset: queries just get no answer),
 * then lets them through in order. The order path does not touch MySQL, so the API should keep
 * accepting; the order workers' writes wait, and are written once MySQL answers again.
 */
import type { FaultScenario } from '../harness/index.js';
import { runGrayScenario } from './run-gray-scenario.js';

export const mysqlStall: FaultScenario = {
  name: 'mysql-stall',
  variants: ['stall'],
  run: (variant, size) =>
    runGrayScenario({
      scenario: 'mysql-stall',
      variant,
      size,
      faultMs: { test: 4_000, report: 20_000 },
      fault: {
        begin: async ({ mysql }) => mysql.addToxic('stall', { type: 'stall' }),
        end: async ({ mysql }) => mysql.removeToxic('stall'),
      },
    }),
};
