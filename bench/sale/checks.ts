/** Everything a sale promised, read back from MySQL and Redis once its order worker has drained. */
import type { World } from '../harness/index.js';
import type { Check } from './check.js';
import type { Sale } from './sale.js';
import { readSaleFromMysql, readVersions, streamBacklog } from './read-back.js';
import { soldOutChecks } from './sold-out-ledger.js';

/** The app's seckill strategy (SECKILL_STRATEGY): only async keeps stock in Redis apart from MySQL's. */
export type Strategy = 'async' | 'sync';

/**
 * Everything the sale promised, read back from MySQL and Redis after the drain. Exported for the
 * harness's own tests, which show that each check can fail.
 */
export async function checkSale(
  world: Pick<World, 'db' | 'sale' | 'redis' | 'stream'>,
  strategy: Strategy,
  vouchers: readonly string[],
  stock: number,
  sale: Pick<Sale, 'accepted'> & Partial<Pick<Sale, 'ledger' | 'versionsBefore'>>,
): Promise<Check[]> {
  const { perVoucher, orderIds, mysqlStock } = await readSaleFromMysql(world.db, vouchers);
  const redisStock = new Map<string, number | undefined>();
  for (const voucher of vouchers) redisStock.set(voucher, (await world.sale.reads.read(voucher))?.stock);
  const backlog = await streamBacklog(world);

  const orders = perVoucher.reduce((sum, row) => sum + Number(row.orders), 0);
  const sold = vouchers.reduce((sum, voucher) => sum + (stock - (mysqlStock.get(voucher) ?? stock)), 0);
  const lost = [...sale.accepted].filter((id) => !orderIds.has(id));
  const unexpected = [...orderIds].filter((id) => !sale.accepted.has(id));
  const overs = vouchers.filter((voucher) => {
    const row = perVoucher.find((r) => r.voucher_id === voucher);
    return Number(row?.orders ?? 0) > stock || (mysqlStock.get(voucher) ?? 0) < 0 || (redisStock.get(voucher) ?? 0) < 0;
  });
  const twice = perVoucher.filter((row) => row.orders !== row.users);
  const drift = vouchers.filter((voucher) => redisStock.get(voucher) !== mysqlStock.get(voucher));

  const checks: Check[] = [
    {
      name: 'orders in MySQL = successes returned',
      pass: orders === sale.accepted.size && lost.length === 0 && unexpected.length === 0,
      detail: `${orders} orders, ${sale.accepted.size} successes; ${lost.length} answered but missing, ${unexpected.length} never answered`,
    },
    { name: 'stock sold = orders', pass: sold === orders, detail: `${sold} units taken from MySQL stock for ${orders} orders` },
    {
      name: 'no oversell',
      pass: overs.length === 0,
      detail: overs.length === 0 ? `no voucher above its stock of ${stock}` : `vouchers ${overs.slice(0, 5).join(', ')} oversold`,
    },
    {
      name: 'no user twice',
      pass: twice.length === 0,
      detail: twice.length === 0 ? 'one order per user and voucher' : `${twice.length} vouchers with a repeated buyer`,
    },
  ];
  if (sale.ledger && sale.versionsBefore) {
    const after = await readVersions(world, vouchers);
    // A version unread (a voucher Redis did not hold) could hide any give-back: counted as unbounded.
    const givenBack = new Map(
      vouchers.map((voucher) => {
        const units = (after.get(voucher) ?? Number.NaN) - (sale.versionsBefore!.get(voucher) ?? Number.NaN);
        return [voucher, Number.isFinite(units) ? units : Number.POSITIVE_INFINITY];
      }),
    );
    checks.push(...soldOutChecks(sale.ledger, vouchers, stock, mysqlStock, givenBack));
  }
  if (strategy === 'async') {
    checks.push({
      name: 'MySQL stock = Redis stock',
      pass: drift.length === 0,
      detail:
        drift.length === 0
          ? `all ${vouchers.length} vouchers agree`
          : `${drift.length} vouchers differ, e.g. ${drift[0]!}: MySQL ${mysqlStock.get(drift[0]!) ?? 'none'}, Redis ${redisStock.get(drift[0]!) ?? 'none'}`,
    });
  }
  checks.push(
    {
      name: 'nothing pending',
      pass: backlog.pending === 0 && backlog.queued === 0,
      detail: `${backlog.pending} pending entries, ${backlog.queued} queued orders`,
    },
    { name: 'no dead letters', pass: backlog.dead === 0, detail: `${backlog.dead} entries in the dead-letter streams` },
  );
  return checks;
}
