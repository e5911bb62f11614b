/**
 * The door of `npm run bench`'s HTTP scenarios, one per file: `baseline` and `shop-hot` (no sale),
 * the sales `seckill-async`, `seckill-sync` and `seckill-gated` (seckill.ts), `seckill-rabbitmq`
 * and `seckill-semaphore`, the shop read from Redis and at the edge (`shop-redis`,
 * `edge-shop-l1`, `edge-shop-l2`: edge-shop.ts), and the sale through the edge (`app-sold-out`,
 * `edge-sold-out`, `proxy-order`, `edge-order`: edge-sale.ts). Each is prepared (servers started, vouchers made), measured by the
 * harness with the others, then finished (its results and checks).
 */
export { prepareBaseline } from './baseline.js';
export { prepareOrders, prepareSoldOut, type EdgeSaleResult, type EdgeSaleScenario } from './edge-sale.js';
export { prepareEdgeShop, prepareShopRedis, type EdgeShopResult } from './edge-shop.js';
export type { HttpResult, PreparedScenario } from './prepared-scenario.js';
export { prepareSale } from './seckill.js';
export { prepareRabbitSale } from './seckill-rabbitmq.js';
export type { SeckillResult } from './seckill-result.js';
export { prepareSemaphoreSale } from './seckill-semaphore.js';
export { prepareShopHot } from './shop-hot.js';
