/**
 * Redis memory per item: sessions and buyers of one voucher, written with the app's own key
 * formats (the modules' keys.ts, the sale's own script) into a redis-server of the run's own,
 * `used_memory` read before and after.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { closeRedis, createRedis } from '../../src/infra/redis.js';
import { buildSale, SaleKeys } from '../../src/modules/seckill/index.js';
import { sessionKeyOfDigest, tokenDigest, userSessionsKey } from '../../src/modules/users/index.js';
import type { RedisServer } from '../../kit/redis-servers.js';
import type { MemoryRow } from './report.js';

async function usedMemory(redis: Pick<Redis, 'info'>): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
}

/** Sessions as SessionStore.create writes them: the session hash and the user's index of sessions, each with its TTL. */
export async function sessionMemory(redis: Redis, sizes: number[]): Promise<MemoryRow[]> {
  const rows: MemoryRow[] = [];
  const deadline = Date.now() + 12 * 3600_000;
  for (const count of sizes) {
    await redis.flushall();
    const before = await usedMemory(redis);
    for (let start = 0; start < count; start += 5_000) {
      const pipeline = redis.pipeline();
      for (let k = start; k < Math.min(count, start + 5_000); k++) {
        const digest = tokenDigest(randomBytes(32).toString('base64url'));
        const userId = String(1_000_000 + k);
        const key = sessionKeyOfDigest(digest);
        // hmdp's default nick name: "user_" and ten random characters.
        pipeline.hset(key, { id: userId, nickName: `user_${randomBytes(8).toString('base64url').slice(0, 10)}`, icon: '', role: 'user', deadline });
        pipeline.expire(key, 1800);
        pipeline.sadd(userSessionsKey(userId), digest);
        pipeline.expire(userSessionsKey(userId), 12 * 3600);
      }
      await pipeline.exec();
    }
    rows.push({ count, bytesPerItem: Math.round(((await usedMemory(redis)) - before) / count) });
  }
  return rows;
}

/** Buyers of one voucher through the sale's own reserve.lua, then with the worker's part done (stream and queue emptied). */
export async function buyerMemory(server: RedisServer, sizes: number[]): Promise<Array<MemoryRow & { bytesPerQueuedOrder: number }>> {
  const client = createRedis({ redisUrl: server.url, redisClusterNodes: [], redisKeyPrefix: '' });
  const keys = new SaleKeys(4);
  const sale = buildSale(client, keys);
  const rows: Array<MemoryRow & { bytesPerQueuedOrder: number }> = [];
  try {
    for (const [i, count] of sizes.entries()) {
      await client.flushall();
      const voucherId = String(1_000 + i);
      const begin = new Date(Date.now() - 60_000);
      await sale.publisher.publish({ voucherId, stock: count, begin, end: new Date(begin.getTime() + 6 * 3600_000) });
      const before = await usedMemory(client);
      for (let start = 0; start < count; start += 5_000) {
        const batch = Array.from({ length: Math.min(5_000, count - start) }, (_, j) => start + j);
        // Order ids as the id generator makes them: 19 digits.
        await Promise.all(
          batch.map((k) => sale.batches.reserve({ orderId: String(7_000_000_000_000_000_000n + BigInt(k)), userId: String(1_000 + k), voucherId })),
        );
      }
      const queued = await usedMemory(client);
      const { stream, queued: queue } = keys.voucher(voucherId);
      await client.del(stream, queue);
      const taken = await usedMemory(client);
      rows.push({ count, bytesPerItem: Math.round((taken - before) / count), bytesPerQueuedOrder: Math.round((queued - before) / count) });
    }
  } finally {
    await closeRedis(client);
  }
  return rows;
}
