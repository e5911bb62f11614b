/** Every fault scenario, in the order of docs/RELIABILITY.md. */
import type { FaultScenario } from './harness.js';
import { killApp } from './kill-app.js';
import { mysqlOutage } from './mysql-outage.js';

export const SCENARIOS: FaultScenario[] = [killApp, mysqlOutage];
