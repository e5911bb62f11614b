/** Every fault scenario, in the order of docs/RELIABILITY.md: crashes first, then gray failures, then an administrator's changes under load. */
import { bandwidthLimit } from './bandwidth-limit.js';
import { bucketFaults } from './buckets.js';
import { connectionReset } from './connection-reset.js';
import type { FaultScenario } from './harness.js';
import { killApp } from './kill-app.js';
import { lockPause } from './lock-pause.js';
import { mysqlOutage } from './mysql-outage.js';
import { mysqlStall } from './mysql-stall.js';
import { rabbitmqNodeKill } from './rabbitmq-node-kill.js';
import { rabbitmqOutage } from './rabbitmq-outage.js';
import { rabbitmqWriterKill } from './rabbitmq-writer-kill.js';
import { redisFailover } from './redis-failover.js';
import { redisLatency } from './redis-latency.js';
import { redisRestart } from './redis-restart.js';
import { redisStall } from './redis-stall.js';
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
