/** Every fault scenario, in the order of docs/RELIABILITY.md: crashes first, then gray failures, then an administrator's changes under load. */
import { bandwidthLimit, connectionReset, mysqlStall, redisLatency, redisStall } from './gray/index.js';
import { bucketFaults } from './buckets/index.js';
import type { FaultScenario } from './harness/index.js';
import { killApp, lockPause, mysqlOutage, redisFailover, redisRestart } from './crash/index.js';
import { rabbitmqNodeKill, rabbitmqOutage, rabbitmqWriterKill } from './rabbitmq/index.js';
import { saleControls } from './sale-controls.js';

export const SCENARIOS: FaultScenario[] = [
  killApp,
  redisFailover,
  redisRestart,
  // One Redis Cluster and three instances for its variants, while no failover has broken them.
  bucketFaults,
  mysqlOutage,
  lockPause,
  // One RabbitMQ cluster for the three, in this order: the node kill leaves a node down, the outage restarts all three.
  rabbitmqWriterKill,
  rabbitmqOutage,
  rabbitmqNodeKill,
  redisStall,
  redisLatency,
  mysqlStall,
  connectionReset,
  bandwidthLimit,
  saleControls,
];
