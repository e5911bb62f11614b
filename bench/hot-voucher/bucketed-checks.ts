/** The checks of a bucketed sale, read back from Redis. */
import type { RedisClient } from '../../src/infra/redis.js';
import type { SaleKeys } from '../../src/modules/seckill/index.js';
import { soldOutChecks, type Check } from '../sale/index.js';
import type { SaleRun } from './sell-out.js';

/**
 * The sale's promises, read back from Redis: units conserved (accepted + left = stock, none
 * oversold), every unit sold and no false sold out (sale/sold-out-ledger.ts soldOutChecks; nothing is given
 * back here), every accepted order queued for the worker and each buyer recorded once, nothing
 * pending between buckets and no transfer left open.
 */
export async function bucketedChecks(redis: RedisClient, keys: SaleKeys, voucher: string, buckets: number, stock: number, sale: SaleRun): Promise<Check[]> {
  const refs = buckets > 1 ? Array.from({ length: buckets }, (_, index) => ({ index, of: buckets })) : [undefined];
  const sales = refs.map((bucket) => keys.saleOf(voucher, bucket));
  const fields = await Promise.all(sales.map((sale) => redis.hmget(sale.voucher, 'stock', 'pending')));
  const left = fields.reduce((sum, [units, pending]) => sum + Number(units ?? Number.NaN) + Number(pending ?? 0), 0);
  const pending = fields.reduce((sum, [, units]) => sum + Number(units ?? 0), 0);
  const queued = (await Promise.all([...new Set(sales.map((sale) => sale.queued))].map((key) => redis.hlen(key)))).reduce((a, b) => a + b, 0);
  const buyers = (await Promise.all(sales.map((sale) => redis.hlen(sale.buyers)))).reduce((a, b) => a + b, 0);
  const transfers = (await Promise.all(keys.laneShards().map((lane) => redis.hlen(keys.transfers(lane))))).reduce((a, b) => a + b, 0);
  const accepted = sale.acceptedAt.length;
  return [
    {
      name: 'units conserved, none oversold',
      pass: accepted <= stock && accepted + left === stock,
      detail: `${accepted} accepted + ${left} left = ${accepted + left} of ${stock}`,
    },
    ...soldOutChecks(sale.ledger, [voucher], stock, new Map([[voucher, left]])),
    {
      name: 'every accepted order queued, each buyer once',
      pass: queued === accepted && buyers === accepted,
      detail: `${queued} queued orders and ${buyers} buyers for ${accepted} accepted`,
    },
    { name: 'nothing pending', pass: pending === 0 && transfers === 0, detail: `${pending} units pending between buckets, ${transfers} transfers open` },
  ];
}
