/**
 * Fault 6 (RabbitMQ): an order writer SIGKILLed mid-batch, holding unacknowledged messages.
 *
 * Three app instances on the 3-node cluster (broker.ts), each with the relay and a
 * writer inside (prefetch 200). On loopback a writer holds a message for a few milliseconds, so to
 * kill it holding a batch every time, the victim reaches MySQL through a proxy cut at least HOLD_MS
 * before the kill: its batch's commit fails, and it keeps the batch and what arrives meanwhile in hand,
 * unacknowledged (a writer never gives messages back while MySQL is away). SIGKILL closes its
 * connection: the broker puts its unacknowledged messages back in the queue (one delivery more
 * each) and the other writers write them. Its relay's unconfirmed stream entries are taken over
 * (XAUTOCLAIM after 2 s) and published again: a copy already in the queue is dropped by a writer.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  driveSale,
  mysqlAddress,
  prepareSale,
  saleChecks,
  saleFigures,
  saleRow,
  throughProxy,
  withCleanup,
  type FaultScenario,
  type Instance,
} from '../harness/index.js';
import {
  brokerCounters,
  drainBroker,
  stopSharedCluster,
  leftoverChecks,
  startBrokerSale,
  timeUntilWritten,
  type BrokerSale,
  unexpectedAnswers,
} from './broker.js';
import { startTcpProxy, type TcpProxy } from '../proxy/index.js';

const HOLD_MS = 1_500;
const VICTIM = 1;

export const rabbitmqWriterKill: FaultScenario = {
  name: 'rabbitmq-writer-kill',
  variants: ['SECKILL_RABBITMQ_PREFETCH=200'],
  close: stopSharedCluster,
  run: (variant, size) =>
    withCleanup(async (defer) => {
      let proxy: TcpProxy | undefined;
      const sale = await startBrokerSale(defer, async (world) => {
        const started = await startTcpProxy(mysqlAddress(world.env.MYSQL_URL!));
        proxy = started;
        defer(() => started.close());
        return (index): Record<string, string> => (index === VICTIM ? { MYSQL_URL: throughProxy(world.env.MYSQL_URL!, started.port) } : {});
      });
      const { world, instances } = sale;
      const durationSeconds = size === 'test' ? 8 : 20;
      const setup = await prepareSale(world, { rate: 300, durationSeconds, stock: 50 });
      const victim: Instance = instances[VICTIM]!;
      // Found now: under the sale's load each rabbitmqctl call takes seconds.
      const victimConnections = await connectionsOf(sale, victim.consumer);
      let killedAt = 0;
      let heldAtKill = 0;
      let writtenMs = null as number | null;
      const load = await driveSale(instances, setup, [
        {
          atSeconds: durationSeconds * 0.2,
          run: async () => {
            proxy!.cut();
            // Read while the hold lasts: what it holds can only grow until the kill (it cannot ack without MySQL).
            [heldAtKill] = await Promise.all([unacknowledgedOn(sale, victimConnections), sleep(HOLD_MS)]);
            const acceptedBefore = [...setup.sale.accepted];
            killedAt = performance.now();
            victim.child.kill('SIGKILL');
            writtenMs = await timeUntilWritten(world, acceptedBefore);
          },
        },
      ]);
      const { drainMs, left } = await drainBroker(sale);
      const figures = await saleFigures(world, setup);
      const counters = await brokerCounters(instances.filter((instance) => instance !== victim));
      const checks = saleChecks(figures, drainMs);
      checks.push(
        ...leftoverChecks(left),
        {
          name: 'accepted, unanswered ≤ requests without an answer',
          pass: figures.acceptedUnanswered <= load.unanswered,
          detail: `${figures.acceptedUnanswered} orders in MySQL nobody was told of; ${load.unanswered} requests got no answer`,
        },
        {
          name: 'the writer died holding messages',
          pass: heldAtKill > 0,
          detail: `${heldAtKill} unacknowledged messages on its channels just before the kill`,
        },
        {
          name: 'orders accepted before the kill written',
          pass: writtenMs !== null,
          detail: writtenMs === null ? 'not within 90 s' : `${writtenMs} ms after the kill`,
        },
      );
      return {
        scenario: 'rabbitmq-writer-kill',
        variant,
        figures: {
          ...saleRow(figures, load, drainMs),
          unanswered: load.unanswered,
          unexpectedAnswers: unexpectedAnswers(setup.sale),
          killedAtSeconds: Math.round((killedAt - load.startedAt) / 100) / 10,
          heldAtKill,
          writtenAfterFaultMs: writtenMs ?? 'timeout',
          duplicatesDropped: counters.duplicatesDropped,
          publishesNotConfirmed: counters.publishesNotConfirmed,
        },
        checks,
      };
    }),
};

const asJson = (vhost: string) => ['-p', vhost, '--formatter', 'json'];

/** The broker's ids (pids) of the consumer's connections (named `hmdp seckill <consumer>`), once it has one (within 30 s). */
async function connectionsOf(sale: Pick<BrokerSale, 'cluster' | 'vhost'>, consumer: string): Promise<Set<string>> {
  const name = `hmdp seckill ${consumer}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const connections = JSON.parse(await sale.cluster.rabbitmqctl(['list_connections', 'pid', 'client_properties', ...asJson(sale.vhost.name)])) as Array<{
      pid: string;
      client_properties: Array<[string, string, unknown]>;
    }>;
    const ours = connections
      .filter((connection) => connection.client_properties.some(([key, , value]) => key === 'connection_name' && value === name))
      .map((connection) => connection.pid);
    if (ours.length > 0) return new Set(ours);
    if (Date.now() > deadline) throw new Error(`${consumer} had no connection to RabbitMQ within 30 s`);
    await sleep(500);
  }
}

/** Unacknowledged messages on the channels of these connections. */
async function unacknowledgedOn(sale: Pick<BrokerSale, 'cluster' | 'vhost'>, connections: Set<string>): Promise<number> {
  const channels = JSON.parse(await sale.cluster.rabbitmqctl(['list_channels', 'connection', 'messages_unacknowledged', ...asJson(sale.vhost.name)])) as Array<{
    connection: string;
    messages_unacknowledged: number;
  }>;
  return channels.filter((channel) => connections.has(channel.connection)).reduce((sum, channel) => sum + channel.messages_unacknowledged, 0);
}
