/**
 * gulimall's seckill design beside ours (the `seckill-semaphore` scenario, run when named): the
 * bench server's route (server/gulimall-seckill.ts) holds a sale's stock as semaphore permits,
 * set here when the sale is published, and takes the buyer mark, a permit and the order in three
 * Redis round trips. What it costs in correctness: a buyer marked and then refused a permit can
 * never try again, and a permit taken whose order is not written (the process dies, MySQL refuses
 * it) is gone: the sale undersells. The `no undersell` check looks for that.
 */
import { LockClient } from '../../src/lib/lock/index.js';
import { startServer, workPerOrder, type BenchOptions, type World } from '../harness/index.js';
import { checkSale, readVersions, Sale, type Check } from '../sale/index.js';
import { stockSemaphore } from '../server/index.js';
import type { PreparedScenario } from './prepared-scenario.js';
import { saleSliceWork } from './sale-metrics.js';
import type { SeckillResult } from './seckill-result.js';

/** The sale of the `seckill-semaphore` scenario: vouchers whose stock is set as semaphore permits. */
export async function prepareSemaphoreSale(options: BenchOptions, world: World): Promise<PreparedScenario<SeckillResult>> {
  const name = 'seckill-semaphore';
  const server = await startServer({ env: { ...world.env, SECKILL_WORKER: 'false' } });
  const stop = () => server.stop();
  try {
    const plannedRequests = (2.5 + 2 * options.durationSeconds) * 25_000;
    const voucherCount = Math.min(500, Math.ceil(plannedRequests / options.users));
    const vouchers = await world.createVouchers(voucherCount, options.stock);
    // gulimall sets the permits when it uploads the sessions of the next three days.
    const locks = new LockClient(world.redis);
    for (const voucher of vouchers) await locks.semaphore(stockSemaphore(voucher)).trySetPermits(options.stock);
    await locks.close();
    const sale = new Sale(vouchers, world.users, (voucher) => `/bench/seckill-semaphore/${voucher}`);
    // Its route gives no permit back: the versions stay, and the sold-out checks allow no unit back.
    sale.versionsBefore = await readVersions(world, vouchers);
    return {
      targets: [{ name, url: server.url, serverPid: server.child.pid, source: sale, sliceWork: saleSliceWork(world, server.url, sale, options) }],
      stop,
      finish: async (measurements) => {
        const { saturation, fixedRate, slices } = measurements.get(name)!;
        await stop();
        const checks = await checkSale(world, 'sync', vouchers, options.stock, sale);
        checks.splice(4, 0, ...(await undersellChecks(world, vouchers, options.stock, options.users)));
        return {
          scenario: name,
          strategy: 'semaphore',
          saturation,
          fixedRate,
          slices,
          vouchers: voucherCount,
          stockPerVoucher: options.stock,
          accepted: sale.accepted.size,
          refused: sale.refused,
          drainMs: 0,
          work: workPerOrder(slices),
          checks,
          pass: checks.every((check) => check.pass),
        };
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Every voucher offered to all its buyers (all but the last one reached) must have sold
 * min(stock, buyers) units: fewer means permits were taken without an order (undersold), and
 * the semaphore must hold exactly the units not sold. ("Sold out" while units were left: the
 * sold-out checks of every sale, sale/sold-out-ledger.ts soldOutChecks.)
 */
async function undersellChecks(world: World, vouchers: readonly string[], stock: number, buyers: number): Promise<Check[]> {
  const locks = new LockClient(world.redis);
  try {
    const rows = await Promise.all(
      vouchers.map(async (voucher) => {
        const orders = Number(
          (
            await world.db
              .selectFrom('tb_voucher_order')
              .select((eb) => eb.fn.countAll().as('n'))
              .where('voucher_id', '=', voucher)
              .executeTakeFirst()
          )?.n ?? 0,
        );
        const permits = await locks.semaphore(stockSemaphore(voucher)).availablePermits();
        return { voucher, orders, permits };
      }),
    );
    const reached = rows.findLastIndex((row) => row.orders > 0 || row.permits < stock);
    const full = rows.slice(0, Math.max(0, reached));
    const expected = Math.min(stock, buyers);
    const under = full.filter((row) => row.orders < expected);
    const leaked = rows.filter((row) => row.permits + row.orders !== stock);
    return [
      {
        name: 'no undersell',
        pass: under.length === 0 && leaked.length === 0,
        detail:
          `${full.length} vouchers offered to all ${buyers} buyers: ${under.length} sold fewer than ${expected}; ` +
          `${leaked.length} with permits taken but no order (permits + orders ≠ stock)`,
      },
    ];
  } finally {
    await locks.close();
  }
}
