/**
 * The fault harness's door: several app instances (instances.ts) sharing one Redis and one MySQL
 * database (fault-world.ts); a sale driven over HTTP spread over them (timed-sale.ts,
 * drive-sale.ts); events (the fault) at given seconds into the load; then the drain and the
 * figures and checks every scenario reports (sale-figures.ts).
 */
export { withCleanup } from './cleanup.js';
export { driveSale, prepareSale, timeDrain, type FaultEvent, type LoadResult, type SaleSetup } from './drive-sale.js';
export { createFaultWorld, mysqlAddress, mysqlServerUrl, sharedRedisUrl, throughProxy } from './fault-world.js';
export { countLogs, startInstances, stopInstances, sumLogField, sumMetric, type Instance } from './instances.js';
export { saleChecks, saleFigures, saleRow, type SaleFigures } from './sale-figures.js';
export type { FaultRun, FaultScenario, Figures, Size } from './scenario.js';
export { TimedSale } from './timed-sale.js';
