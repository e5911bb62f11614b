/**
 * What SECKILL_REPLICA_ACKS costs at the Redis call itself: accepted reserve.lua calls per second
 * and their latency, with acks = 0 (answer at once) and acks = 1 (group-committed WAIT), on a
 * Redis whose masters have a replica. Slices alternate so background load hits both alike.
 *
 *   npx tsx bench/costs/replica-acks.ts redis://127.0.0.1:6380/0          standalone master with a replica
 *   npx tsx bench/costs/replica-acks.ts 127.0.0.1:7001,127.0.0.1:7002     Redis Cluster (e.g. scripts/topology.sh)
 *
 * Keys go under a prefix of their own and are deleted afterwards.
 */
import { build } from 'hdr-histogram-js';
import { closeRedis, createRedis, type RedisClient } from '../../src/infra/redis.js';
import { buildSale, type Sale, SaleKeys } from '../../src/modules/seckill/index.js';

const target = process.argv[2] ?? 'redis://127.0.0.1:6379/0';
const parallelism = [1, 100];
const sliceMs = 1500;
const slices = 4;
const shards = 4;
const prefix = `bench:acks:${process.pid}:`;
const isCluster = !target.startsWith('redis');
const redis: RedisClient = createRedis({
  redisUrl: isCluster ? 'redis://127.0.0.1:6379/0' : target,
  redisClusterNodes: isCluster ? target.split(',') : [],
  redisKeyPrefix: prefix,
});
const voucherIds = Array.from({ length: shards }, (_, shard) => String(1000 + shard));
let nextOrder = 1;

async function run(sale: Sale, loops: number, ms: number, latencies: ReturnType<typeof build>): Promise<number> {
  const end = Date.now() + ms;
  let done = 0;
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (Date.now() < end) {
        const id = nextOrder++;
        const started = process.hrtime.bigint();
        const { outcome } = await sale.batches.reserve({ orderId: String(id), userId: String(id), voucherId: voucherIds[id % shards]! });
        latencies.recordValue(Number(process.hrtime.bigint() - started) / 1000); // µs
        if (outcome !== 'accepted') throw new Error(`unexpected ${outcome}`);
        done += 1;
      }
    }),
  );
  return done;
}

let timeouts = 0;
try {
  const stores = {
    'acks=0': buildSale(redis, new SaleKeys(shards)),
    'acks=1': buildSale(redis, new SaleKeys(shards), {
      replicaAcks: {
        acks: 1,
        timeoutMs: 1000,
        onTimeout: (n) => {
          timeouts += n;
        },
      },
    }),
  };
  const now = Date.now();
  for (const voucherId of voucherIds) {
    await stores['acks=0'].publisher.publish({ voucherId, stock: 100_000_000, begin: new Date(now - 60_000), end: new Date(now + 3_600_000) });
  }
  console.log(`| target | calls in flight | mode | accepted/s | p50 µs | p99 µs |\n|---|---|---|---|---|---|`);
  for (const loops of parallelism) {
    const totals = Object.fromEntries(Object.keys(stores).map((mode) => [mode, { ops: 0, ms: 0, latencies: build() }]));
    for (const store of Object.values(stores)) await run(store, loops, 300, build()); // warm-up
    for (let slice = 0; slice < slices; slice++) {
      for (const [mode, store] of Object.entries(stores)) {
        const started = Date.now();
        totals[mode]!.ops += await run(store, loops, sliceMs, totals[mode]!.latencies);
        totals[mode]!.ms += Date.now() - started;
      }
    }
    for (const [mode, total] of Object.entries(totals)) {
      const rate = Math.round((total.ops / total.ms) * 1000);
      console.log(
        `| ${isCluster ? 'cluster' : 'standalone'} | ${loops} | ${mode} | ${rate} | ${Math.round(total.latencies.getValueAtPercentile(50))} | ${Math.round(total.latencies.getValueAtPercentile(99))} |`,
      );
    }
  }
  console.log(`WAIT timeouts (acks=1): ${timeouts}`);
  await stores['acks=1'].close();
} finally {
  const store = buildSale(redis, new SaleKeys(shards));
  for (const voucherId of voucherIds) {
    const keys = store.keys.voucher(voucherId);
    await redis.del(keys.voucher);
    await redis.del(keys.buyers);
    await redis.del(keys.stream);
    await redis.del(keys.queued);
  }
  await closeRedis(redis);
}
