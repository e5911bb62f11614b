/** What a sale's server and Redis say beyond its answers: the Redis work per accepted order, and the write lag. */
import { scrapeMetrics, startSliceWork, type BenchOptions, type World } from '../harness/index.js';
import { waitForDrain, type Sale } from '../sale/index.js';
import type { SeckillResult } from './seckill-result.js';

/**
 * p50 and p99 of seckill_order_write_lag_seconds from the server's /metrics: the upper bound of
 * the bucket that holds the quantile (the histogram's resolution), in ms.
 */
export async function scrapeWriteLag(url: string): Promise<SeckillResult['writeLag']> {
  const response = await scrapeMetrics(url).catch(() => undefined);
  if (!response?.ok) return undefined;
  const text = await response.text();
  const buckets = [...text.matchAll(/^seckill_order_write_lag_seconds_bucket\{le="([^"]+)"\} (\S+)$/gm)].map((match) => ({
    le: match[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(match[1]),
    count: Number(match[2]),
  }));
  const count = buckets.at(-1)?.count ?? 0;
  if (count === 0) return undefined;
  const quantile = (q: number) => (buckets.find((bucket) => bucket.count >= q * count)?.le ?? Number.POSITIVE_INFINITY) * 1000;
  return { p50: quantile(0.5), p99: quantile(0.99), count };
}

/** Counts a sale's Redis commands per accepted order over each saturation slice (harness/redis-work.ts). */
export function saleSliceWork(
  world: Pick<World, 'redis' | 'stream'>,
  url: string,
  sale: Pick<Sale, 'accepted'>,
  options: Pick<BenchOptions, 'drainTimeoutSeconds'>,
) {
  return () =>
    startSliceWork({
      redis: world.redis,
      url,
      accepted: () => sale.accepted.size,
      drained: () => waitForDrain(world, options.drainTimeoutSeconds * 1000),
    });
}
