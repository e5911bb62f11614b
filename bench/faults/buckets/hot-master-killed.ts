/**
 * `SECKILL_REPLICA_ACKS=1, hot bucket's master killed` and its stale-replica variant: the master
 * of bucket 0, the one receiving every give, SIGKILLed mid-sale (scenario.ts).
 */
import calculateSlot from 'cluster-key-slot';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { streamBacklog } from '../../sale/index.js';
import { driveSale, sumMetric, type FaultRun, type Size } from '../harness/index.js';
import { createBucketedVoucher, HOT, type BucketBed } from './bed.js';
import { newSale } from './bucket-sale.js';
import { judge } from './judge.js';
import { until } from './until.js';

export const PLAIN_KILL = "SECKILL_REPLICA_ACKS=1, hot bucket's master killed";
export const STALE_KILL = "SECKILL_REPLICA_ACKS=1, hot bucket's master killed, replica 1.5 s stale";
const STALE_MS = 1_500;
/**
 * What a replica promoted 1.5 s stale breaks whatever the refills do (crash/redis-failover.ts drops the
 * same): orders it accepted after WAIT timeouts and the worker wrote are gone from Redis, which sells
 * their units again; MySQL refuses those (dead letters: answered accepted, not in MySQL), and each
 * dead letter gives its unit back, so a later order may follow a "sold out". The rollback is
 * consistent within the bucket, though: Redis's count (buyers + units held = stock) still holds
 * unless a refill step was lost, and that is what the variant judges.
 */
const BROKEN_BY_A_STALE_REPLICA = new Set(['no accepted order lost', 'no dead letters', 'every unit sold', 'no false sold out', 'MySQL = accepted']);

/**
 * SIGKILL of the master serving bucket 0 at a quarter of the load, once it holds a give (after STALE_MS of a stopped,
 * cut-off replica in the stale variant), with the markers of the gives it holds read just before:
 * a give the promoted replica lacks is "rolled back"; its units are lost when its donor settled
 * it anyway (the marker then stays absent), safe when the sweep returned them (marker `returned`).
 */
export async function hotMasterKilled(bed: BucketBed, size: Size, stale: boolean): Promise<FaultRun> {
  const { world, instances, cluster } = bed;
  const stock = size === 'test' ? 360 : 900;
  const rate = size === 'test' ? 150 : 200;
  const durationSeconds = size === 'test' ? 6 : 12;
  const deadLettersBefore = (await streamBacklog(world)).dead;
  const ackTimeoutsBefore = await sumMetric(instances, 'seckill_replica_ack_timeouts_total');
  const voucherId = await createBucketedVoucher(world, stock);
  const setup = newSale(bed, voucherId, stock, rate, durationSeconds);
  const hotKey = world.sale.keys.bucket(voucherId, HOT).voucher;
  const slot = calculateSlot(hotKey);
  const { master, replicas } = await cluster.shardOf(slot);
  const replica = replicas[0]!;
  const prefix = world.env.REDIS_KEY_PREFIX ?? '';

  let failoverMs = null as number | null;
  let replicaStoppedMs = 0;
  let givesAtKill: string[] = [];
  let givesRolledBack: string[] = [];
  const load = await driveSale(instances, setup, [
    {
      atSeconds: durationSeconds * 0.25,
      run: async () => {
        // Killed once the master holds a give of this sale: a refill has reached the hot bucket (on a slow machine the first may come late).
        await until(async () => (await onNode(master, (node) => givenMarkers(node, prefix))).length > 0, 10_000);
        if (stale) {
          const stoppedAt = performance.now();
          cluster.process(replica).kill('SIGSTOP');
          await onNode(master, (node) => node.call('CLIENT', 'KILL', 'TYPE', 'replica'));
          await sleep(STALE_MS);
          replicaStoppedMs = Math.round(performance.now() - stoppedAt);
        }
        givesAtKill = await onNode(master, (node) => givenMarkers(node, prefix));
        cluster.process(master).kill('SIGKILL');
        if (stale) cluster.process(replica).kill('SIGCONT');
        const killedAt = performance.now();
        if (!(await until(async () => (await cluster.shardOf(slot)).master !== master, 30_000))) return;
        await cluster.waitUntilHealthy(30_000);
        failoverMs = Math.round(performance.now() - killedAt);
        const promoted = (await cluster.shardOf(slot)).master;
        const kept = new Set(await onNode(promoted, (node) => givenMarkers(node, prefix)));
        givesRolledBack = givesAtKill.filter((key) => !kept.has(key));
      },
    },
  ]);
  const judged = await judge(bed, setup, load, deadLettersBefore);
  const { figures } = judged;
  const checks = stale ? judged.checks.filter((check) => !BROKEN_BY_A_STALE_REPLICA.has(check.name)) : judged.checks;
  // Once drained: a rolled-back give whose transfer the sweep ended is `returned`; one its refill settled has no marker (its units are gone).
  const outcomes = await Promise.all(givesRolledBack.map((key) => world.redis.get(key.slice(prefix.length))));
  const givesLost = outcomes.filter((outcome) => outcome === null).length;
  const ackTimeouts = (await sumMetric(instances, 'seckill_replica_ack_timeouts_total')) - ackTimeoutsBefore;
  checks.push(
    { name: 'failover completed', pass: failoverMs !== null, detail: failoverMs === null ? 'no failover seen' : `cluster ok ${failoverMs} ms after the kill` },
    {
      name: 'no give lost',
      pass: givesLost === 0,
      detail: `${givesRolledBack.length} of ${givesAtKill.length} gives rolled back by the failover, ${givesLost} of them settled (units gone)`,
    },
    {
      name: "lost ≤ orders answered without a replica's ack",
      pass: Number(figures.lost) <= ackTimeouts,
      detail: `${Number(figures.lost)} lost, ${ackTimeouts} WAIT timeouts`,
    },
  );
  return {
    scenario: 'buckets',
    variant: stale ? STALE_KILL : PLAIN_KILL,
    figures: {
      ...figures,
      replicaStoppedMs,
      failoverMs: failoverMs ?? 'timeout',
      ackTimeouts,
      givesAtKill: givesAtKill.length,
      givesRolledBack: givesRolledBack.length,
      givesLost,
    },
    checks,
  };
}

/** Keys of the transfer markers set to `given` on one node (SCAN of its own keys). */
async function givenMarkers(node: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await node.scan(cursor, 'MATCH', `${prefix}*:transfer-in:*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  const values = keys.length === 0 ? [] : await node.mget(...keys);
  return keys.filter((_, index) => values[index] === 'given');
}

async function onNode<T>(port: number, work: (node: Redis) => Promise<T>): Promise<T> {
  const node = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  node.on('error', () => undefined);
  try {
    return await work(node);
  } finally {
    node.disconnect();
  }
}
