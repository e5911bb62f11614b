/** What a sale left in Redis and MySQL, read back for its checks: versions, the order backlog, the orders. */
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { World } from '../harness/index.js';

/** Each voucher's `restocks` version: every step that gives units back (release, raise, repair) adds one to it. */
export async function readVersions(world: Pick<World, 'redis' | 'sale'>, vouchers: readonly string[]): Promise<Map<string, number>> {
  const versions = await Promise.all(vouchers.map((voucher) => world.redis.hget(world.sale.keys.voucher(voucher).voucher, 'restocks')));
  return new Map(vouchers.map((voucher, index) => [voucher, Number(versions[index] ?? Number.NaN)]));
}

/** True once every accepted order is in MySQL: nothing queued, nothing pending in any shard. */
export async function waitForDrain(world: Pick<World, 'redis' | 'stream'>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { queued, pending } = await streamBacklog(world);
    if (queued === 0 && pending === 0) return true;
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
}

export async function streamBacklog(world: Pick<World, 'redis' | 'stream'>): Promise<{ queued: number; pending: number; dead: number }> {
  const { redis, stream } = world;
  const stats = await stream.stats();
  const pending = stats.reduce((sum, shard) => sum + shard.pending, 0);
  const dead = stats.reduce((sum, shard) => sum + shard.deadLetters, 0);
  let queued = 0;
  for (const shard of stream.keys.allShards()) queued += await redis.hlen(stream.keys.shard(shard).queued);
  return { queued, pending, dead };
}

export interface SaleInMysql {
  /** Orders and distinct buyers per voucher (vouchers without orders are absent). */
  perVoucher: Array<{ voucher_id: string; orders: string; users: string }>;
  orderIds: Set<string>;
  mysqlStock: Map<string, number>;
}

/** What MySQL holds of a sale's vouchers: the record the checks hold the answers against. */
export async function readSaleFromMysql(db: World['db'], vouchers: readonly string[]): Promise<SaleInMysql> {
  const { rows: perVoucher } = await sql<{ voucher_id: string; orders: string; users: string }>`
    SELECT voucher_id, COUNT(*) AS orders, COUNT(DISTINCT user_id) AS users
    FROM tb_voucher_order WHERE voucher_id IN (${sql.join(vouchers)}) GROUP BY voucher_id`.execute(db);
  const orderIds = new Set((await db.selectFrom('tb_voucher_order').select('id').where('voucher_id', 'in', vouchers).execute()).map((row) => row.id));
  const mysqlStock = new Map(
    (await db.selectFrom('tb_seckill_voucher').select(['voucher_id', 'stock']).where('voucher_id', 'in', vouchers).execute()).map((row) => [
      row.voucher_id,
      row.stock,
    ]),
  );
  return { perVoucher, orderIds, mysqlStock };
}
