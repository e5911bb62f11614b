/**
 * The gray failures' door (docs/reliability-gray.md): the dependency is not gone but slow, hung,
 * flaky or thin, behind a toxic proxy, each scenario a toxic applied in the middle of a sale by
 * run-gray-scenario.ts: Redis stalled, Redis latency, MySQL stalled, connections reset, a
 * bandwidth limit.
 */
export { bandwidthLimit } from './bandwidth-limit.js';
export { connectionReset } from './connection-reset.js';
export { mysqlStall } from './mysql-stall.js';
export { redisLatency } from './redis-latency.js';
export { redisStall } from './redis-stall.js';
