/**
 * gulimall's seckill design beside ours (the `seckill-semaphore` scenario, run when named):
 * the sale's stock is held in a distributed semaphore (Redisson's RSemaphore there, ours here),
 * one permit per unit, set when the sale is published. A buy is
 *
 *   1. the buyer mark: SET NX of user + voucher, expiring with the sale (gulimall's
 *      `userId_sessionId_skuId` SETNX): refused if already there;
 *   2. `semaphore.tryAcquire(1, 100 ms)`: refused as sold out if no permit came;
 *   3. an order id, and the order written (gulimall sends it to RabbitMQ for the order service
 *      to write; here it is written to MySQL before answering, as the sync strategy does).
 *
 * Three Redis round trips and no atomicity across them, against one reserve.lua call for ours.
 * What it costs in correctness: a buyer marked in step 1 and refused in step 2 can never try
 * again, and a permit taken in step 2 whose order is not written in step 3 (the process dies,
 * MySQL refuses it) is gone: the sale undersells. The `no undersell` check looks for that.
 * The route lives in the bench server (bench/server.ts), not in the app: it is a comparison.
 */
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../src/infra/db.js';
import type { RedisClient } from '../../src/infra/redis.js';
import { fail, ok } from '../../src/http/result.js';
import { IdGenerator } from '../../src/lib/id/index.js';
import { LockClient } from '../../src/lib/lock/index.js';
import { OrderRepository, REFUSALS } from '../../src/modules/seckill/index.js';
import { SessionStore } from '../../src/modules/users/index.js';
import type { PreparedScenario } from './shop-hot.js';
import type { BenchOptions } from '../harness/options.js';
import { startServer } from '../harness/processes.js';
import { checkSale, readVersions, Sale, saleSliceWork, type Check, type SeckillResult } from '../sale/checks.js';
import { workPerOrder } from '../harness/redis-work.js';
import type { World } from '../harness/world.js';

/** The semaphore holding a voucher's stock (gulimall: `seckill:stock:<randomCode>`). */
export const stockSemaphore = (voucherId: string): string => `seckill-stock:${voucherId}`;
const buyerMark = (voucherId: string, userId: string): string => `gulimall:bought:{${voucherId}}:${userId}`;
/** gulimall's mark lives until the end of the sale session; the bench's sales last hours. */
const MARK_TTL_MS = 6 * 3600_000;
/** gulimall: `semaphore.tryAcquire(num, 100, TimeUnit.MILLISECONDS)`. */
const ACQUIRE_WAIT_MS = 100;
/**
 * BENCH_GULIMALL_CRASH_RATE (0 to 1, default 0): the share of buys whose process "dies" between
 * the permit and the order (the connection is dropped, nothing more happens), as an instance
 * killed mid-sale would. reserve.lua has no such window: its order is in the stream already.
 */
const CRASH_RATE = Number(process.env.BENCH_GULIMALL_CRASH_RATE ?? 0);

interface GulimallDeps {
  redis: RedisClient;
  db: Db;
  sessionTtlSeconds: number;
}

/** Adds `POST /bench/seckill-semaphore/:voucherId` to the bench server. */
export function registerGulimallSeckill(app: FastifyInstance, deps: GulimallDeps): { close(): Promise<void> } {
  const { redis, db } = deps;
  const locks = new LockClient(redis);
  const sessions = new SessionStore(redis, deps.sessionTtlSeconds);
  const ids = new IdGenerator(redis);
  const orders = new OrderRepository(db);
  app.post<{ Params: { voucherId: string } }>('/bench/seckill-semaphore/:voucherId', async (request, reply) => {
    const user = await sessions.touch(request.headers.authorization ?? '');
    if (!user) return reply.code(401).send(fail('Not logged in'));
    const { voucherId } = request.params;
    if ((await redis.set(buyerMark(voucherId, user.id), '1', 'PX', MARK_TTL_MS, 'NX')) === null) return fail(REFUSALS.alreadyBought);
    // Redisson's tryAcquire(1, 100 ms) makes its first attempt whatever it takes, then waits what
    // is left of the 100 ms; ours bounds every attempt by waitMs, which under overload refuses
    // buyers while stock is left. So: one unbounded try (waitMs 0), then the wait.
    const stock = locks.semaphore(stockSemaphore(voucherId));
    if (!(await stock.tryAcquire()) && !(await stock.tryAcquire({ waitMs: ACQUIRE_WAIT_MS }))) return fail(REFUSALS.soldOut);
    if (CRASH_RATE > 0 && Math.random() < CRASH_RATE) {
      request.raw.socket.destroy();
      return reply.hijack();
    }
    const orderId = String(await ids.nextId('order'));
    const outcome = await orders.persist({ orderId, userId: user.id, voucherId });
    return outcome === 'created' ? ok(orderId) : fail(REFUSALS.alreadyBought);
  });
  return { close: () => locks.close() };
}

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
 * sold-out checks of every sale, seckill.ts soldOutChecks.)
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
