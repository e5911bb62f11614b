/**
 * `seckill-rabbitmq`: the async strategy with its orders written through RabbitMQ
 * (`SECKILL_QUEUE=rabbitmq`: the stream as outbox, a relay to a quorum queue, writers behind it),
 * beside `seckill-async`'s stream worker. It runs in a world of its own (database, key prefix,
 * users) on the run's Redis, and a vhost of its own on the machine's RabbitMQ: sharing the async
 * scenario's streams, each server's writers would take the other's orders. The broker's CPU is
 * counted with the serving processes'.
 */
import { brokerPid, createOwnVhost, type OwnVhost } from '../../kit/rabbitmq-vhosts.js';
import { createOwnWorld, type BenchOptions, type World } from '../harness/index.js';
import type { PreparedScenario } from './prepared-scenario.js';
import { prepareSale } from './seckill.js';
import type { SeckillResult } from './seckill-result.js';

export async function prepareRabbitSale(options: BenchOptions, redisUrl: string): Promise<PreparedScenario<SeckillResult>> {
  let vhost: OwnVhost | undefined;
  let world: World | undefined;
  let cleaned: Promise<void> | undefined;
  const cleanUp = () =>
    (cleaned ??= (async () => {
      await world?.destroy();
      await vhost?.delete();
    })());
  try {
    vhost = await createOwnVhost('hmdp_bench_');
    world = await createOwnWorld({ ...options, redisUrl, name: `hmdp_bench_${process.pid}_rabbitmq` });
    const sale = await prepareSale('async', options, world, undefined, false, { url: vhost.url, pid: await brokerPid() });
    return {
      targets: sale.targets,
      finish: async (measurements) => {
        try {
          return await sale.finish(measurements);
        } finally {
          await cleanUp();
        }
      },
      stop: async () => {
        await sale.stop();
        await cleanUp();
      },
    };
  } catch (error) {
    await cleanUp();
    throw error;
  }
}
