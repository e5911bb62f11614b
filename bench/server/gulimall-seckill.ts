/**
 * gulimall's seckill design as a route of the bench server (`POST /bench/seckill-semaphore/:id`,
 * the `seckill-semaphore` scenario: scenarios/seckill-semaphore.ts): the sale's stock is held in a
 * distributed semaphore (Redisson's RSemaphore there, ours here), one permit per unit, set when
 * the sale is published. A buy is
 *
 *   1. the buyer mark: SET NX of user + voucher, expiring with the sale (gulimall's
 *      `userId_sessionId_skuId` SETNX): refused if already there;
 *   2. `semaphore.tryAcquire(1, 100 ms)`: refused as sold out if no permit came;
 *   3. an order id, and the order written (gulimall sends it to RabbitMQ for the order service
 *      to write; here it is written to MySQL before answering, as the sync strategy does).
 *
 * Three Redis round trips and no atomicity across them, against one reserve.lua call for ours.
 * It lives in the bench server, not in the app: it is a comparison.
 */
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../src/infra/db.js';
import type { RedisClient } from '../../src/infra/redis.js';
import { fail, ok } from '../../src/http/result.js';
import { IdGenerator } from '../../src/lib/id/index.js';
import { LockClient } from '../../src/lib/lock/index.js';
import { OrderRepository, REFUSALS } from '../../src/modules/seckill/index.js';
import { SessionStore } from '../../src/modules/users/index.js';

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
