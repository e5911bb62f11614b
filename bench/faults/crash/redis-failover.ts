/**
 * Fault 2: SIGKILL a Redis master in the middle of a sale; its replica is promoted.
 *
 * Cluster: 3 masters + 3 replicas (kit/redis-cluster.ts), cluster-node-timeout 1 s;
 * three app instances on it (REDIS_CLUSTER_NODES). The victim is the master of the shard
 * `{seckill:N}` of the voucher whose sale begins right after the fault: stock, buyers, queued hash
 * and stream of every voucher ≡ N mod 4.
 *
 * Replication is asynchronous: what the master acknowledged and had not yet sent to its replica
 * is gone after the promotion: accepted orders (stream entry + queued), buyer marks, stock
 * decrements, acknowledgements. On loopback the replica lags by well under a millisecond, so a
 * plain kill rarely loses anything; to show the window honestly the `stale replica` variants
 * widen it on purpose: STALE_MS before the master is killed the replica is SIGSTOPped and the
 * master drops its replication link (CLIENT KILL TYPE replica: the stopped replica cannot
 * reconnect, and without the cut it would still read what sat in its socket buffer), then the
 * replica is SIGCONTed right after the kill, so the cluster promotes a replica STALE_MS behind. With SECKILL_REPLICA_ACKS=1 each accepted order waits (WAIT,
 * up to SECKILL_REPLICA_TIMEOUT_MS = 100 ms) for the replica; while it is stopped every WAIT
 * times out and the order is still answered (seckill_replica_ack_timeouts_total counts them):
 * those, and only those, can be lost.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { reconcileSeckill } from '../../../src/modules/seckill/index.js';
import { startRedisCluster } from '../../../kit/redis-cluster.js';
import {
  createFaultWorld,
  driveSale,
  prepareSale,
  saleChecks,
  saleFigures,
  saleRow,
  startInstances,
  stopInstances,
  timeDrain,
  withCleanup,
  type FaultScenario,
  sumMetric,
} from '../harness/index.js';

const STALE_MS = 1_500;

export const redisFailover: FaultScenario = {
  name: 'redis-failover',
  variants: [
    'SECKILL_REPLICA_ACKS=0, plain kill',
    'SECKILL_REPLICA_ACKS=1, plain kill',
    'SECKILL_REPLICA_ACKS=0, stale replica',
    'SECKILL_REPLICA_ACKS=1, stale replica',
    'SECKILL_REPLICA_ACKS=1, stale replica, repair at failover',
  ],
  run: (variant, size) =>
    withCleanup(async (defer) => {
      const acks = /ACKS=1/.test(variant) ? '1' : '0';
      const stale = variant.includes('stale');
      const repairAtFailover = variant.includes('repair at failover');
      const cluster = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 1_000 });
      defer(() => cluster.stop());
      const world = await createFaultWorld({ redisClusterNodes: cluster.nodes, users: 150 });
      defer(() => world.destroy());
      const instances = await startInstances(3, { ...world.env, SECKILL_REPLICA_ACKS: acks, SECKILL_REPLICA_TIMEOUT_MS: '100' });
      defer(() => stopInstances(instances));
      const durationSeconds = size === 'test' ? 10 : 14;
      const setup = await prepareSale(world, { rate: 300, durationSeconds, stock: 50 });
      // The victim: the master of the voucher whose sale starts next after the fault (request i
      // buys voucher ⌊i / users⌋), so that its whole sale falls inside the stale window.
      const faultAtSeconds = durationSeconds * 0.35;
      const nextVoucher = setup.vouchers[Math.floor((faultAtSeconds * setup.rate) / world.users.length) + 1]!;
      const slot = await keySlot(cluster.nodes[0]!, world.sale.keys.voucher(nextVoucher).stream);
      const { master, replicas } = await cluster.shardOf(slot);
      const replica = replicas[0]!;

      // Set by the event: a `: number | null = null` declaration would make TypeScript see only null.
      let failoverMs = null as number | null;
      let replicaStoppedMs = 0;
      let repairedAtFailover = '–';
      const load = await driveSale(instances, setup, [
        {
          atSeconds: faultAtSeconds,
          run: async () => {
            if (stale) {
              const stoppedAt = performance.now();
              cluster.process(replica).kill('SIGSTOP');
              // What the master already wrote to the link sits in the stopped replica's socket
              // buffer and would still be read after SIGCONT: cut the link on the master's side,
              // so that everything from now on exists only on the master.
              await killReplicaLinks(master);
              await sleep(STALE_MS);
              cluster.process(master).kill('SIGKILL');
              cluster.process(replica).kill('SIGCONT');
              replicaStoppedMs = Math.round(performance.now() - stoppedAt);
            } else {
              cluster.process(master).kill('SIGKILL');
            }
            const killedAt = performance.now();
            // Failed over = another node serves the slot and every live node says ok again (right
            // after the kill the others still say ok: they have not noticed yet).
            await until(async () => (await cluster.shardOf(slot)).master !== master, 30_000);
            await cluster.waitUntilHealthy(30_000);
            failoverMs = Math.round(performance.now() - killedAt);
            if (repairAtFailover) {
              // What an operator (or a hook on the failover event) would do at once: Redis from MySQL, under the live sale.
              const repairStarted = performance.now();
              const report = await reconcileSeckill({ db: world.db, sale: world.sale }, { repair: true, voucherIds: setup.vouchers });
              repairedAtFailover = `${report.repaired} in ${Math.round(performance.now() - repairStarted)} ms`;
            }
          },
        },
      ]);
      const drainMs = await timeDrain(world);
      const figures = await saleFigures(world, setup);
      const ackTimeouts = await sumMetric(instances, 'seckill_replica_ack_timeouts_total');
      const deps = { db: world.db, sale: world.sale };
      const before = await reconcileSeckill(deps, { repair: false, voucherIds: setup.vouchers });
      const repair = await reconcileSeckill(deps, { repair: true, voucherIds: setup.vouchers });
      const after = await reconcileSeckill(deps, { repair: false, voucherIds: setup.vouchers });
      const checks = saleChecks(figures, drainMs).filter(
        (check) => !['no accepted order lost', 'no dead letters', 'MySQL stock = orders'].includes(check.name),
      );
      checks.push(
        {
          name: 'failover completed',
          pass: failoverMs !== null,
          detail: failoverMs === null ? 'no failover seen' : `cluster ok ${failoverMs} ms after the kill`,
        },
        {
          name: 'zero drift after repair',
          pass: after.drifted.length === 0,
          detail: `${before.drifted.length} drifted, ${repair.repaired} repaired, ${after.drifted.length} after`,
        },
      );
      if (acks === '1') {
        checks.push({
          name: "lost ≤ orders answered without a replica's ack",
          pass: figures.lost <= ackTimeouts,
          detail: `${figures.lost} lost, ${ackTimeouts} WAIT timeouts`,
        });
      }
      return {
        scenario: 'redis-failover',
        variant,
        figures: {
          ...saleRow(figures, load, drainMs),
          replicaStoppedMs,
          failoverMs: failoverMs ?? 'timeout',
          repairedAtFailover,
          non2xx: load.non2xx,
          ackTimeouts,
          deadLetters: figures.deadLetters,
          driftBefore: before.drifted.length,
          mysqlOnlyOrders: before.drifted.reduce((sum, drift) => sum + drift.missingBuyers.length, 0),
          driftAfter: after.drifted.length,
        },
        checks,
      };
    }),
};

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`no failover within ${timeoutMs} ms`);
    await sleep(50);
  }
}

async function killReplicaLinks(masterPort: number): Promise<void> {
  const redis = new Redis({ host: '127.0.0.1', port: masterPort });
  try {
    await redis.call('CLIENT', 'KILL', 'TYPE', 'replica');
  } finally {
    redis.disconnect();
  }
}

async function keySlot(node: string, key: string): Promise<number> {
  const [host, port] = node.split(':');
  const redis = new Redis({ host: host!, port: Number(port) });
  try {
    return Number(await redis.call('CLUSTER', 'KEYSLOT', key));
  } finally {
    redis.disconnect();
  }
}
