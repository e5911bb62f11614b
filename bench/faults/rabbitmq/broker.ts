/**
 * What the RabbitMQ fault scenarios share (rabbitmq-writer-kill.ts, rabbitmq-outage.ts,
 * rabbitmq-node-kill.ts): scripts/topology.sh's 3-node cluster (kit/rabbitmq-cluster.ts), started
 * once per process by the first run that needs it and made whole again (its stopped nodes started)
 * before each run; a vhost of the run's own on it; three app instances with SECKILL_QUEUE=rabbitmq
 * and RABBITMQ_URL naming the three nodes; and what "nothing pending" means on this path: the Redis
 * streams and queued hashes drained, and the order and dead-letter queues empty (ready and
 * unacknowledged).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { startRabbitmqCluster, type ClusterVhost, type QueueState, type RabbitmqCluster } from '../../../kit/rabbitmq-cluster.js';
import { DEAD_LETTER_QUEUE, ORDER_QUEUE } from '../../../src/modules/seckill/index.js';
import type { Check, Sale } from '../../sale/index.js';
import type { World } from '../../harness/index.js';
import { createFaultWorld, startInstances, stopInstances, sumMetric, timeDrain, type Instance, type LoadResult } from '../harness/index.js';

let shared: Promise<RabbitmqCluster> | undefined;
/**
 * Vhosts of finished runs whose cluster had a node down: deleting a vhost then waits ~20 s on the
 * dead member of its quorum queue. They are deleted once the cluster is whole again, or go with it.
 */
let vhostsLeft: ClusterVhost[] = [];

/** The process's cluster with its three nodes running (started on first use). */
export async function wholeCluster(): Promise<RabbitmqCluster> {
  shared ??= startRabbitmqCluster();
  let cluster: RabbitmqCluster;
  try {
    cluster = await shared;
  } catch (error) {
    shared = undefined;
    throw error;
  }
  if (!(await cluster.whole())) await cluster.startMissing();
  for (const vhost of vhostsLeft.splice(0)) await vhost.delete();
  return cluster;
}

/** Stops the shared cluster, if one was started (npm run faults and the test call it at the end); its vhosts go with its folder. */
export async function stopSharedCluster(): Promise<void> {
  const cluster = shared;
  shared = undefined;
  vhostsLeft = [];
  if (cluster) await (await cluster).stop();
}

export interface BrokerSale {
  cluster: RabbitmqCluster;
  vhost: ClusterVhost;
  world: World;
  instances: Instance[];
}

/**
 * The cluster whole, a vhost and a world of the run's own, three instances on them. `instanceEnv`,
 * given the world, prepares what the instances need and says each one's own settings (e.g. MySQL
 * through a proxy). Everything is undone through `defer` (the vhost, when the run left a node
 * down, once the cluster is whole again or with the cluster).
 */
export async function startBrokerSale(
  defer: (cleanup: () => Promise<unknown>) => void,
  instanceEnv: (world: World) => Promise<(index: number) => Record<string, string>> = () => Promise.resolve(() => ({})),
): Promise<BrokerSale> {
  const cluster = await wholeCluster();
  const vhost = await cluster.addVhost();
  defer(async () => {
    if (await cluster.whole()) await vhost.delete();
    else vhostsLeft.push(vhost);
  });
  const world = await createFaultWorld({ users: 150 });
  defer(() => world.destroy());
  const envOf = await instanceEnv(world);
  const instances = await startInstances(3, { ...world.env, SECKILL_QUEUE: 'rabbitmq', RABBITMQ_URL: vhost.url }, envOf);
  defer(() => stopInstances(instances));
  return { cluster, vhost, world, instances };
}

/** Messages (ready and unacknowledged) in the order and dead-letter queues, asked of a running node. */
export async function queueMessages(sale: Pick<BrokerSale, 'cluster' | 'vhost'>): Promise<{ orders: number; dead: number }> {
  const queues = await sale.cluster.queues(sale.vhost.name);
  const messages = (name: string) => queues.find((queue) => queue.name === name)?.messages ?? 0;
  return { orders: messages(ORDER_QUEUE), dead: messages(DEAD_LETTER_QUEUE) };
}

/** The order queue as the cluster reports it, once its first user declared it (within 30 s). */
export async function orderQueueState(sale: Pick<BrokerSale, 'cluster' | 'vhost'>): Promise<QueueState> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const queue = (await sale.cluster.queues(sale.vhost.name)).find((candidate) => candidate.name === ORDER_QUEUE);
    if (queue) return queue;
    if (Date.now() > deadline) throw new Error(`${ORDER_QUEUE} was not declared within 30 s`);
    await sleep(500);
  }
}

/**
 * The drain on this path: nothing queued or pending in Redis (ms from now, null after 60 s), then
 * the queues empty: a second copy of an order (republished after a lost confirm) may still be on
 * its way to a writer, which drops it. `left` also counts the users' queued-order sets, which the
 * writers empty with the queued hashes.
 */
export async function drainBroker(sale: BrokerSale): Promise<{ drainMs: number | null; left: Leftovers }> {
  const started = performance.now();
  const redisDrainMs = await timeDrain(sale.world);
  let left = await leftovers(sale);
  while (left.orders + left.dead > 0 && performance.now() - started < 60_000) {
    await sleep(500);
    left = await leftovers(sale);
  }
  const empty = left.orders + left.dead === 0;
  return { drainMs: redisDrainMs === null || !empty ? null : Math.round(performance.now() - started), left };
}

interface Leftovers {
  /** Messages (ready and unacknowledged) in the order and dead-letter queues. */
  orders: number;
  dead: number;
  /** Entries of the users' queued-order sets, over the shards. */
  queuedByUser: number;
}

async function leftovers(sale: BrokerSale): Promise<Leftovers> {
  const { orders, dead } = await queueMessages(sale);
  const { redis, stream } = sale.world;
  let queuedByUser = 0;
  for (const shard of stream.keys.allShards()) queuedByUser += await redis.zcard(stream.keys.shard(shard).queuedByUser);
  return { orders, dead, queuedByUser };
}

/**
 * Ms until every one of `orderIds` is a MySQL row (polled every 100 ms), or null after `timeoutMs`:
 * how long the orders accepted before a moment took to be written, whatever the sale does meanwhile.
 */
export async function timeUntilWritten(world: World, orderIds: readonly string[], timeoutMs = 90_000): Promise<number | null> {
  const started = performance.now();
  let missing = [...orderIds];
  while (missing.length > 0) {
    const found = new Set<string>();
    for (let i = 0; i < missing.length; i += 1000) {
      const rows = await world.db
        .selectFrom('tb_voucher_order')
        .select('id')
        .where('id', 'in', missing.slice(i, i + 1000))
        .execute();
      for (const row of rows) found.add(row.id);
    }
    missing = missing.filter((id) => !found.has(id));
    if (missing.length === 0) break;
    if (performance.now() - started > timeoutMs) return null;
    await sleep(100);
  }
  return Math.round(performance.now() - started);
}

/** Copies the writers of `instances` dropped (already in MySQL) and publishes the relays saw fail (published again). */
export async function brokerCounters(instances: readonly Instance[]): Promise<{ duplicatesDropped: number; publishesNotConfirmed: number }> {
  const duplicatesDropped = await sumMetric(instances, 'seckill_worker_entries_total', 'result="duplicate"');
  const published = await sumMetric(instances, 'seckill_relay_publishes_total');
  const confirmed = await sumMetric(instances, 'seckill_relay_publishes_total', 'outcome="confirmed"');
  return { duplicatesDropped, publishesNotConfirmed: published - confirmed };
}

export function leftoverChecks(left: Leftovers): Check[] {
  return [
    {
      name: 'RabbitMQ queues empty',
      pass: left.orders === 0 && left.dead === 0,
      detail: `${left.orders} messages in ${ORDER_QUEUE}, ${left.dead} in ${DEAD_LETTER_QUEUE}`,
    },
    { name: "users' queued-order sets empty", pass: left.queuedByUser === 0, detail: `${left.queuedByUser} entries left` },
  ];
}

/** The answers that were no API answer of 200, by status and message, e.g. `503 outcome unknown ×3` (– when none). */
export function unexpectedAnswers(sale: Pick<Sale, 'unexpected'>): string {
  const entries = Object.entries(sale.unexpected);
  return entries.length === 0 ? '–' : entries.map(([answer, count]) => `${answer} ×${count}`).join('; ');
}

/**
 * The order path never waits on the broker: no request unanswered and none answered 5xx. Other
 * non-2xx answers are the sale's own limits (a load generator that fell behind on a starved host
 * sends its late requests at once, and a buyer's burst limit answers 429), listed in the detail.
 */
export function brokerNeverNeededCheck(sale: Pick<Sale, 'unexpected'>, load: Pick<LoadResult, 'unanswered'>): Check {
  const serverErrors = Object.entries(sale.unexpected)
    .filter(([answer]) => Number(answer.split(' ')[0]) >= 500)
    .reduce((sum, [, count]) => sum + count, 0);
  return {
    name: 'the order path never needed the broker',
    pass: serverErrors === 0 && load.unanswered === 0,
    detail: `${serverErrors} answers 5xx, ${load.unanswered} unanswered; non-2xx answers: ${unexpectedAnswers(sale)}`,
  };
}
