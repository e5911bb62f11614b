import type { RedisClient } from '../../../infra/redis.js';
import type { BucketRef } from '../keys.js';
import type { SaleContext } from './sale-context.js';
import { parseTransfer, type PendingTransfer } from './transfers.js';

/** A voucher's sale as the reconciliation reads it, atomically (one hash slot). */
export interface SaleSnapshot {
  stock: number | null;
  /** userId → bitmask of the slots its live orders hold. */
  holders: Map<string, number>;
  /** orderId → user and slot of this voucher's entries in the shard's queued hash. */
  queued: Map<string, { userId: string; slot: number }>;
}

/** One bucket of a bucketed sale as the reconciliation reads it, atomically (one MULTI on its lane). */
export interface BucketSnapshot {
  /** The bucket's hash exists. */
  exists: boolean;
  stock: number;
  /** Units its refills took and have not settled. */
  pending: number;
  /** userId → slot bitmask, of the users homing to it. */
  holders: Map<string, number>;
  /** orderId → user and slot of the voucher's entries in the lane's queued hash. */
  queued: Map<string, { userId: string; slot: number }>;
  /** The voucher's transfers taken from this bucket, not yet settled. */
  transfers: PendingTransfer[];
  /** Which of the orders asked about have their release marker in this bucket's lane. */
  released: Set<string>;
}

/** The sale's state in Redis read whole and atomically, for the reconciliation to compare with MySQL. */
export class SaleSnapshots {
  constructor(private readonly sale: Pick<SaleContext, 'redis' | 'keys'>) {}

  /** The voucher's stock, its buyers' slots and the shard's queued orders of it, read atomically (one hash slot). */
  async snapshot(voucherId: string): Promise<SaleSnapshot> {
    const keys = this.sale.keys.voucher(voucherId);
    const replies = await execAll(this.sale.redis.multi().hget(keys.voucher, 'stock').hgetall(keys.buyers).hgetall(keys.queued));
    const [stock, masks, queuedAll] = replies as [string | null, Record<string, string>, Record<string, string>];
    return { stock: stock === null ? null : Number(stock), holders: masksOf(masks), queued: queuedOf(voucherId, queuedAll) };
  }

  /**
   * One bucket of a bucketed sale read atomically (its lane's hash slot): stock, pending, its
   * users' slots, the lane's queued orders and transfers of the voucher from it, and the release
   * markers of `releaseIds` (orders of users homing to it).
   */
  async bucketSnapshot(voucherId: string, bucket: BucketRef, releaseIds: readonly string[] = []): Promise<BucketSnapshot> {
    const { redis, keys: saleKeys } = this.sale;
    const keys = saleKeys.bucket(voucherId, bucket);
    const multi = redis
      .multi()
      .hmget(keys.voucher, 'stock', 'pending')
      .hgetall(keys.buyers)
      .hgetall(keys.queued)
      .hgetall(saleKeys.transfers(saleKeys.laneShard(bucket)));
    for (const orderId of releaseIds) multi.exists(saleKeys.releaseMarker({ orderId, voucherId }, bucket));
    const [[stock, pending], masks, queuedAll, records, ...markers] = (await execAll(multi)) as [
      [string | null, string | null],
      Record<string, string>,
      Record<string, string>,
      Record<string, string>,
      ...number[],
    ];
    const transfers = Object.entries(records)
      .map(([transferId, record]) => parseTransfer(transferId, record))
      .filter((transfer) => transfer.voucherId === voucherId && transfer.of === bucket.of && transfer.from === bucket.index);
    return {
      exists: stock !== null,
      stock: Number(stock ?? 0),
      pending: Number(pending ?? 0),
      holders: masksOf(masks),
      queued: queuedOf(voucherId, queuedAll),
      transfers,
      released: new Set(releaseIds.filter((_, index) => markers[index] === 1)),
    };
  }

  /** Which of the voucher's orders have had their unit given back (their release marker exists; in `bucket`'s lane for a bucketed sale). */
  async releasedOrders(voucherId: string, orderIds: string[], bucket?: BucketRef): Promise<Set<string>> {
    const { redis, keys } = this.sale;
    const results = await Promise.all(orderIds.map((orderId) => redis.exists(keys.releaseMarker({ orderId, voucherId }, bucket))));
    return new Set(orderIds.filter((_, index) => results[index] === 1));
  }
}

/** A MULTI's replies, or its first error thrown. */
async function execAll(multi: ReturnType<RedisClient['multi']>): Promise<unknown[]> {
  const replies = await multi.exec();
  if (!replies) throw new Error('the Redis read of the sale was aborted');
  const failure = replies.find(([error]) => error);
  if (failure) throw failure[0]!;
  return replies.map(([, reply]) => reply);
}

/** A buyer-slots hash read: userId → slot bitmask. */
const masksOf = (masks: Record<string, string>): Map<string, number> => new Map(Object.entries(masks).map(([userId, mask]) => [userId, Number(mask)] as const));

/** The voucher's entries of a queued hash ("userId:voucherId:slot:acceptedMs"): orderId → user and slot. */
function queuedOf(voucherId: string, queuedAll: Record<string, string>): Map<string, { userId: string; slot: number }> {
  const queued = new Map<string, { userId: string; slot: number }>();
  for (const [orderId, value] of Object.entries(queuedAll)) {
    const [userId = '', ofVoucher = '', slot = '1'] = value.split(':');
    if (ofVoucher === voucherId) queued.set(orderId, { userId, slot: Number(slot) });
  }
  return queued;
}
