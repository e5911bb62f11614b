/**
 * `npm run bench -- hot-voucher`'s door (docs/bench-hot-voucher.md): one voucher on one Redis core
 * (one-core.ts), then from B buckets on a Redis Cluster (buckets.ts), run and printed by cli.ts.
 */
export { main, runHotVoucher, type HotVoucherReport } from './cli.js';
