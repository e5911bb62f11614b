/** Every fault scenario, in the order of docs/RELIABILITY.md: crashes first, then gray failures, then an administrator's changes under load. */
import { bandwidthLimit } from './gray/bandwidth-limit.js';
import { bucketFaults } from './buckets/scenario.js';
import { connectionReset } from './gray/connection-reset.js';
import type { FaultScenario } from './harness/instances.js';
import { killApp } from './crash/kill-app.js';
import { lockPause } from './crash/lock-pause.js';
import { mysqlOutage } from './crash/mysql-outage.js';
import { mysqlStall } from './gray/mysql-stall.js';
import { rabbitmqNodeKill } from './rabbitmq/rabbitmq-node-kill.js';
import { rabbitmqOutage } from './rabbitmq/rabbitmq-outage.js';
import { rabbitmqWriterKill } from './rabbitmq/rabbitmq-writer-kill.js';
import { redisFailover } from './crash/redis-failover.js';
import { redisLatency } from './gray/redis-latency.js';
import { redisRestart } from './crash/redis-restart.js';
import { redisStall } from './gray/redis-stall.js';
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
