/**
 * Fault 8 (RabbitMQ): SIGKILL, mid-sale, the node that leads the order queue (a quorum queue with a
 * member on each of the 3 nodes); the other two keep its majority and elect a new leader.
 *
 * The clients connect to the first node of RABBITMQ_URL, which is also where the queue was
 * declared and so where its leader starts: the kill drops every connection at once as well as the
 * leader. Publishes in flight get no confirm (their stream entries stay pending and are published
 * again: a copy the queue already had is dropped by a writer), messages in hand come back to the
 * queue, and the clients reconnect to the next node of the list. The killed node stays down until
 * the next run needs the cluster whole.
 */
import { driveSale, prepareSale, saleChecks, saleFigures, saleRow, withCleanup, type FaultScenario } from '../harness/index.js';
import {
  unexpectedAnswers,
  brokerCounters,
  drainBroker,
  orderQueueState,
  stopSharedCluster,
  leftoverChecks,
  startBrokerSale,
  timeUntilWritten,
  brokerNeverNeededCheck,
} from './broker.js';

export const rabbitmqNodeKill: FaultScenario = {
  name: 'rabbitmq-node-kill',
  variants: ['SIGKILL the order queue leader'],
  close: stopSharedCluster,
  run: (variant, size) =>
    withCleanup(async (defer) => {
      const sale = await startBrokerSale(defer);
      const { cluster, world, instances } = sale;
      const durationSeconds = size === 'test' ? 8 : 14;
      const setup = await prepareSale(world, { rate: 300, durationSeconds, stock: 50 });
      // Asked now: under the sale's load a rabbitmqctl call takes seconds. Nothing moves the leader until the kill.
      const leaderBefore = (await orderQueueState(sale)).leader;
      const victim = cluster.portOf(leaderBefore);
      let killedAt = 0;
      let writtenMs = null as number | null;
      const load = await driveSale(instances, setup, [
        {
          atSeconds: durationSeconds * 0.4,
          run: async () => {
            const acceptedBefore = [...setup.sale.accepted];
            killedAt = performance.now();
            await cluster.kill(victim, 'SIGKILL');
            writtenMs = await timeUntilWritten(world, acceptedBefore);
          },
        },
      ]);
      const { drainMs, left } = await drainBroker(sale);
      const figures = await saleFigures(world, setup);
      const counters = await brokerCounters(instances);
      const queue = await orderQueueState(sale);
      const acceptedAfterKill = setup.sale.acceptedBetween(killedAt, load.endedAt);
      const checks = saleChecks(figures, drainMs);
      checks.push(
        ...leftoverChecks(left),
        {
          name: 'a new leader on the majority',
          pass: queue.leader !== leaderBefore && queue.online.length === 2 && queue.members.length === 3,
          detail: `leader ${leaderBefore} killed; now ${queue.leader}, ${queue.online.length} of ${queue.members.length} members online`,
        },
        brokerNeverNeededCheck(setup.sale, load),
        {
          name: 'orders accepted before the kill written',
          pass: writtenMs !== null,
          detail: writtenMs === null ? 'not within 90 s' : `${writtenMs} ms after the kill`,
        },
      );
      return {
        scenario: 'rabbitmq-node-kill',
        variant,
        figures: {
          ...saleRow(figures, load, drainMs),
          killedAtSeconds: Math.round((killedAt - load.startedAt) / 100) / 10,
          acceptedAfterKill,
          non2xx: load.non2xx,
          unexpectedAnswers: unexpectedAnswers(setup.sale),
          writtenAfterFaultMs: writtenMs ?? 'timeout',
          duplicatesDropped: counters.duplicatesDropped,
          publishesNotConfirmed: counters.publishesNotConfirmed,
        },
        checks,
      };
    }),
};
