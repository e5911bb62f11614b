/**
 * Fault 1: SIGKILL one of three app instances in the middle of a sale. Its order worker dies with
 * the entries it had read and not yet acknowledged; the other instances' workers take them over
 * (XAUTOCLAIM after SECKILL_CLAIM_IDLE_MS = 2 s) and write them, once, thanks to the order id
 * being the primary key. Requests in flight to the killed instance get no answer; some of them
 * had already been accepted by Redis: they must be in MySQL all the same ("accepted, unanswered").
 *
 * On loopback a worker holds an entry for about a millisecond between XREADGROUP and XACK, so a
 * kill at a random moment almost never leaves anything to take over. To test the take-over every
 * time, the victim reaches MySQL through a proxy that is cut HOLD_MS before the kill: its worker
 * keeps reading its share of the stream and cannot write it, so it dies holding pending entries.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  createFaultWorld,
  driveSale,
  mysqlAddress,
  prepareSale,
  saleChecks,
  saleFigures,
  saleRow,
  startInstances,
  stopInstances,
  sumLogField,
  throughProxy,
  timeDrain,
  withCleanup,
  type FaultScenario,
  type Instance,
} from '../harness/index.js';
import { startTcpProxy } from '../proxy/index.js';
import type { World } from '../../harness/index.js';
import { ORDER_GROUP } from '../../../src/modules/seckill/index.js';

/** The victim's MySQL is cut this long before it is killed (see below). */
const HOLD_MS = 1_500;

export const killApp: FaultScenario = {
  name: 'kill-app',
  variants: ['SECKILL_CLAIM_IDLE_MS=2000'],
  run: (variant, size) =>
    withCleanup(async (defer) => {
      const world = await createFaultWorld({ users: 150 });
      defer(() => world.destroy());
      const proxy = await startTcpProxy(mysqlAddress(world.env.MYSQL_URL!));
      defer(() => proxy.close());
      const victimIndex = 1;
      const instances = await startInstances(3, world.env, (index): Record<string, string> =>
        index === victimIndex ? { MYSQL_URL: throughProxy(world.env.MYSQL_URL!, proxy.port) } : {},
      );
      defer(() => stopInstances(instances));
      const durationSeconds = size === 'test' ? 8 : 14;
      const setup = await prepareSale(world, { rate: 300, durationSeconds, stock: 50 });
      const victim: Instance = instances[victimIndex]!;
      let killedAt = 0;
      let pendingOnVictim = 0;
      let takenOverMs = 0;
      const load = await driveSale(instances, setup, [
        {
          atSeconds: durationSeconds * 0.4,
          run: async () => {
            proxy.cut();
            await sleep(HOLD_MS);
            pendingOnVictim = await pendingOf(world, victim.consumer);
            killedAt = performance.now();
            victim.child.kill('SIGKILL');
            while ((await pendingOf(world, victim.consumer)) > 0) await sleep(50);
            takenOverMs = Math.round(performance.now() - killedAt);
          },
        },
      ]);
      const drainMs = await timeDrain(world);
      const figures = await saleFigures(world, setup);
      const claimed = sumLogField(
        instances.filter((instance) => instance !== victim),
        /took over entries of an unresponsive consumer/,
        'count',
      );
      const checks = saleChecks(figures, drainMs);
      checks.push({
        name: 'accepted, unanswered ≤ requests without an answer',
        pass: figures.acceptedUnanswered <= load.unanswered,
        detail: `${figures.acceptedUnanswered} orders in MySQL nobody was told of; ${load.unanswered} requests got no answer`,
      });
      return {
        scenario: 'kill-app',
        variant,
        figures: {
          ...saleRow(figures, load, drainMs),
          unanswered: load.unanswered,
          killedAtSeconds: Math.round((killedAt - load.startedAt) / 100) / 10,
          pendingOnVictim,
          takeOvers: claimed,
          takenOverMs,
        },
        checks: [
          ...checks,
          {
            name: 'the victim died holding entries, all taken over',
            pass: pendingOnVictim > 0 && claimed >= pendingOnVictim,
            detail: `${pendingOnVictim} pending on the victim, ${claimed} taken over`,
          },
        ],
      };
    }),
};

/** Entries pending on one consumer, over every shard. */
async function pendingOf(world: Pick<World, 'redis' | 'stream'>, consumer: string): Promise<number> {
  let pending = 0;
  for (const shard of world.stream.keys.allShards()) {
    const consumers = (await world.redis.xpending(world.stream.keys.shard(shard).stream, ORDER_GROUP).catch(() => [0, null, null, []])) as [
      number,
      unknown,
      unknown,
      Array<[string, string]> | null,
    ];
    pending += Number(consumers[3]?.find(([name]) => name === consumer)?.[1] ?? 0);
  }
  return pending;
}
