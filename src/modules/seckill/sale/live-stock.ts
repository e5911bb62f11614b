import type { RedisClient } from '../../../infra/redis.js';

/** A sale hash as the near cache keeps it: a sale's (or a bucket's) stock and pending units, or a layout record's B. */
export interface LiveStock {
  stock: number | null;
  pending: number;
  buckets: number;
  pttl: number;
}

/**
 * A sale hash's stock, pending, buckets and PTTL, through the near cache's tracked connection
 * (module-level: no closure per read). The voucher lists and the sold-out memory read a sale hash
 * only through it, so the one near cache entry per hash has one shape.
 */
export async function fetchLiveStock(tracked: RedisClient, key: string): Promise<LiveStock> {
  const [[stock, pending, buckets], pttl] = await Promise.all([tracked.hmget(key, 'stock', 'pending', 'buckets'), tracked.pttl(key)]);
  return { stock: stock === null ? null : Number(stock), pending: Number(pending ?? 0), buckets: Number(buckets ?? 1), pttl };
}

/** Kept while the hash holds a sale or a layout, and no longer than its Redis TTL. */
export const KEEP_LIVE_STOCK = {
  cacheIf: ({ stock, buckets }: LiveStock): boolean => stock !== null || buckets > 1,
  ttlMs: ({ pttl }: LiveStock): number | undefined => (pttl === -1 ? undefined : pttl),
};

/** Nothing left in this hash: it holds a sale (or bucket) with no stock and no units on their way. */
export const holdsNothing = (reading: LiveStock | undefined): boolean =>
  reading !== undefined && reading.stock !== null && reading.stock <= 0 && reading.pending <= 0;
