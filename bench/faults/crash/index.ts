/**
 * The crash faults' door (docs/RELIABILITY.md): a process or a dependency gone mid-sale. Fault 1,
 * an app instance SIGKILLed (kill-app.ts); 2, a Redis master SIGKILLed (redis-failover.ts); 3,
 * Redis restarted from its AOF (redis-restart.ts); 4, MySQL unreachable (mysql-outage.ts); 5, a
 * lock holder paused past its lease (lock-pause.ts, its holders in fenced-writer.ts processes).
 */
export { killApp } from './kill-app.js';
export { lockPause } from './lock-pause.js';
export { mysqlOutage } from './mysql-outage.js';
export { redisFailover } from './redis-failover.js';
export { redisRestart } from './redis-restart.js';
