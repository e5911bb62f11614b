/**
 * Fault 7 (RabbitMQ): the broker stopped for 10 s in the middle of a sale: every node of the 3-node
 * cluster gets SIGTERM (a clean shutdown, what `rabbitmqctl stop` or a service stop does), stays
 * down STOPPED_MS once all have exited, then all three are started again and boot from their data.
 *
 * The decision never waits on the broker: the API keeps accepting into the Redis streams (the
 * outbox), /api/health says `degraded` with `rabbitmq: down`, the relays read nothing while
 * disconnected. Once the nodes are back, the clients reconnect (waits of 0.5 s growing to 5 s),
 * the relays publish the backlog and the writers write it. What the queue held when the nodes
 * stopped (confirmed: on disk on a majority) is still there after the restart.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { driveSale, prepareSale, saleChecks, saleFigures, saleRow, sumMetric, withCleanup, type FaultScenario, type Instance } from '../harness/index.js';
import { ORDER_QUEUE } from '../../../src/modules/seckill/index.js';
import { accepting } from '../../../kit/ports.js';
import {
  brokerCounters,
  drainBroker,
  stopSharedCluster,
  leftoverChecks,
  startBrokerSale,
  timeUntilWritten,
  brokerNeverNeededCheck,
  unexpectedAnswers,
} from './broker.js';

const STOPPED_MS = 10_000;

export const rabbitmqOutage: FaultScenario = {
  name: 'rabbitmq-outage',
  variants: ['all 3 nodes stopped 10 s'],
  close: stopSharedCluster,
  run: (variant, size) =>
    withCleanup(async (defer) => {
      const sale = await startBrokerSale(defer);
      const { cluster, world, instances } = sale;
      const stopAtSeconds = size === 'test' ? 2 : 4;
      // The load covers the stop and the 10 s down (report size: most boots too); the catch-up is timed either way.
      const durationSeconds = stopAtSeconds + STOPPED_MS / 1000 + (size === 'test' ? 4 : 20);
      const setup = await prepareSale(world, { rate: 300, durationSeconds, stock: 50 });

      let stoppingAt = 0;
      let backAt = 0;
      let shutdownMs = 0;
      let bootMs = 0;
      let queuedAtStop = 0;
      let healthDuring = '';
      let firstNodeMs = 0;
      let caughtUpMs = null as number | null;
      const load = await driveSale(instances, setup, [
        {
          atSeconds: stopAtSeconds,
          run: async () => {
            queuedAtStop = await sumMetric([instances[0]!], 'seckill_rabbitmq_queue_messages', `queue="${ORDER_QUEUE}"`);
            stoppingAt = performance.now();
            await cluster.stopAll();
            shutdownMs = Math.round(performance.now() - stoppingAt);
            await sleep(STOPPED_MS / 2);
            healthDuring = await rabbitmqHealth(instances[0]!);
            await sleep(STOPPED_MS / 2);
            // Timed from the first node taking connections again: the clients reconnect while the others boot.
            const acceptedBefore = [...setup.sale.accepted];
            const starting = performance.now();
            const booted = cluster.startMissing();
            booted.catch(() => undefined); // awaited below
            firstNodeMs = await firstPortOpen(cluster.ports, starting);
            backAt = performance.now();
            caughtUpMs = await timeUntilWritten(world, acceptedBefore);
            await booted;
            bootMs = Math.round(performance.now() - starting);
          },
        },
      ]);
      const { drainMs, left } = await drainBroker(sale);
      const figures = await saleFigures(world, setup);
      const counters = await brokerCounters(instances);
      const acceptedDuringOutage = setup.sale.acceptedBetween(stoppingAt, backAt);
      const checks = saleChecks(figures, drainMs);
      checks.push(
        ...leftoverChecks(left),
        { name: 'accepting while the broker was down', pass: acceptedDuringOutage > 0, detail: `${acceptedDuringOutage} orders accepted` },
        brokerNeverNeededCheck(setup.sale, load),
        { name: 'health names RabbitMQ down', pass: healthDuring === 'degraded/down', detail: `status/rabbitmq during the outage: ${healthDuring}` },
        {
          name: 'caught up once the broker was back',
          pass: caughtUpMs !== null,
          detail:
            caughtUpMs === null ? 'not within 90 s' : `every order accepted before the start written ${caughtUpMs} ms after the first node took connections`,
        },
      );
      return {
        scenario: 'rabbitmq-outage',
        variant,
        figures: {
          ...saleRow(figures, load, drainMs),
          queuedInBrokerAtStop: queuedAtStop,
          shutdownMs,
          bootMs,
          outageSeconds: Math.round((backAt - stoppingAt) / 100) / 10,
          acceptedDuringOutage,
          non2xx: load.non2xx,
          unexpectedAnswers: unexpectedAnswers(setup.sale),
          firstNodeMs,
          brokerBackToWrittenMs: caughtUpMs ?? 'timeout',
          duplicatesDropped: counters.duplicatesDropped,
          publishesNotConfirmed: counters.publishesNotConfirmed,
        },
        checks,
      };
    }),
};

/** `status/rabbitmq` from the instance's /api/health. */
async function rabbitmqHealth(instance: Instance): Promise<string> {
  const body = (await (await fetch(`${instance.url}/api/health`)).json()) as { data?: { status?: string; rabbitmq?: string } };
  return `${body.data?.status ?? '?'}/${body.data?.rabbitmq ?? '?'}`;
}

/** Ms from `since` until one of the ports takes a connection (polled every 50 ms). */
async function firstPortOpen(ports: readonly number[], since: number): Promise<number> {
  for (;;) {
    if ((await Promise.all(ports.map(accepting))).some(Boolean)) return Math.round(performance.now() - since);
    if (performance.now() - since > 120_000) throw new Error('no RabbitMQ node took connections within 120 s of the start');
    await sleep(50);
  }
}
