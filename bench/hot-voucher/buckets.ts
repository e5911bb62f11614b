/**
 * `npm run bench -- hot-voucher`'s bucketed sales (docs/bench-hot-voucher.md, issue 30): one
 * voucher sold out from B = 1, 2, 3 buckets on a Redis Cluster of 3 masters + 3 replicas started
 * here on free ports (kit/redis-cluster.ts) and stopped by pid at the end.
 *
 * For each B, with buyers spread evenly over the buckets, and once more for the largest B with
 * nine buyers in ten homing to bucket 0 (the skew refills exist for), the driver (this process, through the app's sale decider: one sale per connection, as
 * one per app instance, batched at the app's SECKILL_RESERVE_BATCH_MAX) sells a voucher of `stock`
 * units to distinct buyers until every loop has been told "sold out": demand above stock, the
 * sold-out boundary crossed under full concurrency. Measured from the first order to the one that
 * took the last unit:
 *   - each master's CPU (/proc/<pid>/stat) per accepted order of the voucher;
 *   - the projected ceiling: 1e6 / (µs per order of the busiest master), the rate at which that
 *     master's one core would be busy all the time, the first limit the sale meets (each master is
 *     one single-threaded process, one core);
 *   - refills (units moved between buckets) and bucket readings per 1,000 orders;
 *   - what the last 1 % of the stock took: requests answered, reserve.lua attempts and refills,
 *     and its time against an average 1 %.
 * Then the sale checks: units conserved, every unit sold, no false sold out, nothing pending.
 */
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { closeRedis, createRedis, type RedisClient } from '../../src/infra/redis.js';
import { buildSale, SaleKeys } from '../../src/modules/seckill/index.js';
import { startRedisCluster, type TestCluster } from '../../kit/redis-cluster.js';
import { bucketedChecks } from './bucketed-checks.js';
import type { BucketedOptions, BucketedRow } from './bucketed-row.js';
import { round2 } from './round.js';
import { lastPercent, sellOut } from './sell-out.js';
import { traceStore } from './store-trace.js';

const VOUCHER = '4242';
const WARM_UP_VOUCHER = '4241';

export async function measureBucketed(options: BucketedOptions): Promise<BucketedRow[]> {
  const cluster = await startRedisCluster({ masters: 3, replicas: 1 });
  const masters = cluster.nodes.slice(0, 3).map((node) => Number(node.split(':')[1]));
  const nodeClients = masters.map((port) => new Redis({ port, host: '127.0.0.1' }));
  const clients = Array.from({ length: options.connections }, () => createRedis({ redisUrl: '', redisClusterNodes: cluster.nodes, redisKeyPrefix: '' }));
  try {
    const rows: BucketedRow[] = [];
    const most = Math.max(...options.buckets);
    const sales = [
      ...options.buckets.map((buckets) => ({ buckets, buyers: 'even' as const })),
      ...(most > 1 ? [{ buckets: most, buyers: 'skewed' as const }] : []),
    ];
    for (const sale of sales) {
      await Promise.all(nodeClients.map((client) => client.flushall()));
      rows.push(await oneBucketedSale(sale, { cluster, masters, clients, nodeClients }, options));
    }
    const base = rows.find((row) => row.buckets === 1 && row.buyers === 'even')?.projectedCeiling ?? Number.NaN;
    for (const row of rows) row.ceilingVsOneBucket = round2(row.projectedCeiling / base);
    return rows;
  } finally {
    await Promise.all(clients.map((client) => closeRedis(client)));
    nodeClients.forEach((client) => client.disconnect());
    await cluster.stop();
  }
}

interface ClusterParts {
  cluster: TestCluster;
  masters: number[];
  clients: RedisClient[];
  nodeClients: Redis[];
}

async function oneBucketedSale(
  layout: { buckets: number; buyers: BucketedRow['buyers'] },
  parts: ClusterParts,
  options: BucketedOptions,
): Promise<BucketedRow> {
  const { buckets, buyers } = layout;
  const keys = new SaleKeys(4, true);
  const counts = { batches: 0, batchOrders: 0 };
  const onBatch = (size: number) => {
    counts.batches += 1;
    counts.batchOrders += size;
  };
  const stores = parts.clients.map((client) => buildSale(client, keys, { maxBatch: options.batchMax, onBatch }));
  const traces = stores.map(traceStore);
  const publish = async (voucherId: string, stock: number) => {
    const begin = new Date(Date.now() - 60_000);
    await stores[0]!.publisher.publish({ voucherId, stock, begin, end: new Date(begin.getTime() + 6 * 3600_000), buckets });
    for (const store of stores) await store.layouts.bucketsOf(voucherId);
  };
  // Warm-up (scripts loaded on every master, the driver's JIT), then a clean slate for the measured sale.
  const warmUpStock = Math.max(500, Math.ceil(options.stock / 50));
  await publish(WARM_UP_VOUCHER, warmUpStock);
  await sellOut(stores, { voucherId: WARM_UP_VOUCHER, stock: warmUpStock, buckets, buyers }, options, 1_000_000_000);
  await Promise.all(parts.nodeClients.map((client) => client.flushall()));
  for (const trace of traces) trace.clear();
  Object.assign(counts, { batches: 0, batchOrders: 0 });

  await publish(VOUCHER, options.stock);
  const pids = parts.cluster.nodes.map((node) => parts.cluster.process(Number(node.split(':')[1])).pid!);
  const sale = await sellOut(stores, { voucherId: VOUCHER, stock: options.stock, buckets, buyers }, options, 2_000_000_000, pids);
  const accepted = sale.acceptedAt.length;
  const perOrder = (micros: number) => round2(micros / accepted);
  const cpu = pids.map((pid, index) => sale.cpuAtLastUnit[index]! - sale.cpuAtStart[index]!);
  const mastersOf = await bucketMasters(parts.cluster, keys, buckets);
  const masters = parts.masters.map((port, index) => ({
    port,
    buckets: mastersOf.flatMap((master, bucket) => (master === port ? [bucket] : [])),
    microsPerOrder: perOrder(cpu[index]!),
  }));
  const busiest = Math.max(...masters.map((master) => master.microsPerOrder));
  const seconds = (sale.lastUnitAt - sale.startedAt) / 1000;
  const all = traces.flatMap((trace) => trace.reserveCalls);
  const moves = traces.flatMap((trace) => trace.moves);
  const checks = await bucketedChecks(parts.clients[0]!, keys, VOUCHER, buckets, options.stock, sale);
  return {
    buckets,
    buyers,
    stock: options.stock,
    accepted,
    seconds: round2(seconds),
    ordersPerSecond: Math.round(accepted / seconds),
    masters,
    replicasMicrosPerOrder: perOrder(cpu.slice(parts.masters.length).reduce((sum, micros) => sum + micros, 0)),
    projectedCeiling: Math.round(1e6 / busiest),
    ceilingVsOneBucket: Number.NaN,
    reservesPerOrder: round2(all.length / accepted),
    ordersPerScriptRun: round2(counts.batchOrders / counts.batches),
    refillsPer1000: round2((moves.length * 1000) / accepted),
    bucketReadingsPer1000: round2((traces.reduce((sum, trace) => sum + trace.rounds(), 0) * 1000) / accepted),
    retries: sale.retries,
    lastPercent: lastPercent(sale, all, moves),
    checks,
    pass: checks.every((check) => check.pass),
  };
}

/** The master serving each bucket's keys (bucket b at index b). */
async function bucketMasters(cluster: TestCluster, keys: SaleKeys, buckets: number): Promise<number[]> {
  const keyOf = (index: number) => (buckets > 1 ? keys.bucket(VOUCHER, { index, of: buckets }).voucher : keys.voucher(VOUCHER).voucher);
  return Promise.all(Array.from({ length: buckets }, async (_, index) => (await cluster.shardOf(calculateSlot(keyOf(index)))).master));
}
