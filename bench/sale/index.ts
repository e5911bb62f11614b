/**
 * The sale's door: the requests of a sale and what their answers said (sale.ts, sold-out-ledger.ts),
 * what it left in Redis and MySQL (read-back.ts) and the checks of everything it promised
 * (checks.ts). The bench's scenarios, the fault scenarios, `growth` and `hot-voucher` all sell
 * through it.
 */
export type { Check } from './check.js';
export { checkSale, type Strategy } from './checks.js';
export { readSaleFromMysql, readVersions, streamBacklog, waitForDrain, type SaleInMysql } from './read-back.js';
export { orderBody } from './order-body.js';
export { Sale } from './sale.js';
export { SoldOutLedger, soldOutChecks, type SaleAnswer, type VoucherAnswers } from './sold-out-ledger.js';
