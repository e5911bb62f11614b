/**
 * What the bucket fault scenarios (scenario.ts) share: a Redis Cluster of 3 masters + 3 replicas
 * (kit/redis-cluster.ts, cluster-node-timeout 1 s), a world on it (database, key prefix, users),
 * and three app instances with buckets on (SECKILL_MAX_BUCKETS=8) and SECKILL_REPLICA_ACKS=1.
 * Started once per process by the first run that needs it and kept while every node and instance
 * lives: a run of its own costs a voucher, not a cluster (a 3+3 start and three instances take
 * 10–20 s here). A failover leaves a master dead, so the next run starts a new bed.
 *
 * The world's store and streams are rebuilt with the bucket lanes: the drain, the backlog and the
 * sweep's records then cover the lanes' streams and queued hashes.
 */
import { randomBytes } from 'node:crypto';
import { buildSale, homeBucket, OrderStream, SaleKeys } from '../../../src/modules/seckill/index.js';
import { startRedisCluster, type TestCluster } from '../../../kit/redis-cluster.js';
import type { BenchUser, World } from '../../harness/index.js';
import { createFaultWorld, startInstances, stopInstances, type Instance, type Size } from '../harness/index.js';

/** The voucher's buckets: one per master of the kit's cluster (B = 3 lands on 3 masters, seckill-buckets.md). */
export const BUCKETS = 3;
/** The bucket nine buyers in ten home to: every refill gives to it. */
export const HOT = { index: 0, of: BUCKETS };
/**
 * Users made for the world, by size: about a third home to each bucket and the skewed order takes
 * nine in ten from bucket 0's, so a world of U users gives about 0.37 U buyers, more than any run's stock.
 */
const WORLD_USERS: Record<Size, number> = { test: 1_500, report: 3_600 };

export interface BucketBed {
  cluster: TestCluster;
  /** The world, its store and stream with the bucket lanes. */
  world: World;
  instances: Instance[];
  size: Size;
  /** Buyers in the order they come: nine in ten home to bucket 0 (the hot bucket), the tenth to bucket 1 or 2. */
  buyers: BenchUser[];
}

let shared: Promise<BucketBed> | undefined;

/** The process's bed of that size with every node and instance alive (started on first use, again after a failover). */
export async function bucketBed(size: Size): Promise<BucketBed> {
  const current = shared ? await shared.catch(() => undefined) : undefined;
  if (current && current.size === size && whole(current)) return current;
  shared = undefined;
  if (current) await tearDown(current);
  const starting = startBed(size);
  shared = starting;
  try {
    return await starting;
  } catch (error) {
    shared = undefined;
    throw error;
  }
}

/** Stops the shared bed, if one was started (npm run faults and the test call it at the end). */
export async function stopBucketBed(): Promise<void> {
  const current = shared ? await shared.catch(() => undefined) : undefined;
  shared = undefined;
  if (current) await tearDown(current);
}

const running = (child: { exitCode: number | null; signalCode: NodeJS.Signals | null }): boolean => child.exitCode === null && child.signalCode === null;

function whole(bed: BucketBed): boolean {
  return (
    bed.cluster.nodes.every((node) => running(bed.cluster.process(Number(node.split(':')[1])))) && bed.instances.every((instance) => running(instance.child))
  );
}

async function startBed(size: Size): Promise<BucketBed> {
  const cluster = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 1_000 });
  let world: World | undefined;
  try {
    const plain = await createFaultWorld({ redisClusterNodes: cluster.nodes, users: WORLD_USERS[size] });
    const keys = new SaleKeys(Number(plain.env.SECKILL_STREAM_SHARDS), true);
    world = { ...plain, sale: buildSale(plain.redis, keys), stream: new OrderStream(plain.redis, keys) };
    const instances = await startInstances(3, {
      ...world.env,
      SECKILL_MAX_BUCKETS: '8',
      SECKILL_REPLICA_ACKS: '1',
      SECKILL_REPLICA_TIMEOUT_MS: '100',
      // The system test's size sweeps sooner than a deployment (10 s, every 5 s): the same path, seconds fewer to wait.
      ...(size === 'test' ? { SECKILL_TRANSFER_SWEEP_AFTER_MS: '4000', SECKILL_TRANSFER_SWEEP_EVERY_MS: '1000' } : {}),
    });
    return { cluster, world, instances, size, buyers: skewed(world.users) };
  } catch (error) {
    await world?.destroy();
    await cluster.stop();
    throw error;
  }
}

async function tearDown(bed: BucketBed): Promise<void> {
  await stopInstances(bed.instances);
  await bed.world.destroy();
  await bed.cluster.stop();
}

/** The users reordered so that buyer i homes to bucket 0 unless i mod 10 = 9 (then to 1 or 2), for as long as both kinds last. */
function skewed(users: readonly BenchUser[]): BenchUser[] {
  const hot = users.filter((user) => homeBucket(user.id, BUCKETS) === 0);
  const cold = users.filter((user) => homeBucket(user.id, BUCKETS) !== 0);
  const buyers: BenchUser[] = [];
  for (let i = 0; ; i += 1) {
    const next = i % 10 === 9 ? cold.shift() : hot.shift();
    if (!next) return buyers;
    buyers.push(next);
  }
}

/**
 * A seckill voucher of `stock` units over BUCKETS buckets, on sale from a minute ago for an hour,
 * in MySQL and published to Redis (each bucket its share, then the layout).
 */
export async function createBucketedVoucher(world: World, stock: number): Promise<string> {
  const begin = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000);
  const end = new Date(begin.getTime() + 3600_000);
  const title = `Bucketed voucher ${randomBytes(4).toString('hex')}`;
  const { insertId } = await world.db
    .insertInto('tb_voucher')
    .values({ shop_id: world.shopId, title, pay_value: '100', actual_value: '200', type: 1 })
    .executeTakeFirstOrThrow();
  const voucherId = String(insertId);
  await world.db
    .insertInto('tb_seckill_voucher')
    .values({ voucher_id: voucherId, stock, total_stock: stock, begin_time: begin, end_time: end, buckets: BUCKETS })
    .execute();
  await world.sale.publisher.publish({ voucherId, stock, total: stock, begin, end, buckets: BUCKETS });
  return voucherId;
}
