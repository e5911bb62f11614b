/** Every fault scenario, in the order of docs/RELIABILITY.md. */
import type { FaultScenario } from './harness.js';
import { killApp } from './kill-app.js';
import { lockPause } from './lock-pause.js';
import { mysqlOutage } from './mysql-outage.js';
import { redisFailover } from './redis-failover.js';
import { redisRestart } from './redis-restart.js';

export const SCENARIOS: FaultScenario[] = [killApp, redisFailover, redisRestart, mysqlOutage, lockPause];
