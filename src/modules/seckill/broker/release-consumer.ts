import { setTimeout as sleep } from 'node:timers/promises';
import { ConsumerStatus, type AsyncMessage } from 'rabbitmq-client';
import type { Log } from '../../../infra/logging.js';
import type { DueOrder } from '../types.js';
import { GroupCommit } from '../writer/group-commit.js';
import type { BrokerConnection } from './broker-connection.js';
import { ConsumerStopping, QueueConsumer } from './queue-consumer.js';
import { decodeDueMessage, type UnpaidTopology } from './rabbit-topology.js';

export interface ReleaseConsumerOptions {
  /** Due orders this consumer holds (basic.qos): those that arrive together are cancelled in one transaction. */
  prefetch: number;
  /** The canceller's conditional cancellation (unpaid-order-canceller.ts `cancelDue`): throws when MySQL fails. */
  cancelDue: (orders: readonly DueOrder[]) => Promise<unknown>;
  /** Wait before trying again while MySQL is away. */
  retryDelayMs?: number;
  log: Log;
}

/**
 * Consumes the release queue `seckill.unpaid.release` (orders whose payment window ended, from the
 * delay queue) in every process that runs the sale's jobs with SECKILL_QUEUE=rabbitmq. The orders in
 * hand go to the canceller together (a group commit, as the writers' orders do), which cancels
 * those still unpaid and gives their units back exactly once; each message is acked after. A paid
 * order is left alone, and an order cancelled by another consumer or the sweep is a no-op: two
 * consumers of the same queue, or a redelivery after a crash, cancel nothing twice.
 *
 * MySQL away: the messages are kept in hand and tried again every `retryDelayMs`, never returned
 * to the queue, where they would come straight back.
 */
export class ReleaseConsumer {
  private readonly consumer: QueueConsumer;
  private readonly cancellations: GroupCommit<DueOrder>;

  constructor(
    broker: BrokerConnection,
    topology: UnpaidTopology,
    private readonly options: ReleaseConsumerOptions,
  ) {
    const { releaseQueue, exchanges, queueBindings } = topology;
    this.consumer = new QueueConsumer(
      broker,
      { queue: releaseQueue, exchanges, queueBindings, inHand: options.prefetch, requeue: true, name: 'release queue', log: options.log },
      (message) => this.handle(message),
    );
    this.cancellations = new GroupCommit(
      async (orders) => {
        await options.cancelDue(orders);
      },
      {
        maxItems: options.prefetch,
        // A failed cancellation is MySQL's, never an order's own: the group fails together and is tried again.
        isTransient: () => true,
      },
    );
  }

  start(): void {
    this.consumer.start();
  }

  /** Stops taking messages; those in hand are finished, or given back when MySQL is away. */
  async stop(): Promise<void> {
    await this.consumer.stop();
  }

  private get running(): boolean {
    return this.consumer.running;
  }

  private async handle(message: AsyncMessage): Promise<ConsumerStatus> {
    const order = decodeDueMessage(message);
    if (order === null) {
      this.options.log.error({ messageId: message.messageId, body: message.body as unknown }, 'release queue: a message that is no due order; dropped');
      return ConsumerStatus.ACK;
    }
    for (;;) {
      try {
        await this.cancellations.submit([order]);
        return ConsumerStatus.ACK;
      } catch (error) {
        if (!this.running) throw new ConsumerStopping('stopping while the cancellation fails', { cause: error });
        this.options.log.warn({ err: error, orderId: order.orderId }, 'release queue: cancelling a due order failed; retrying (the order stays in hand)');
        await sleep(this.options.retryDelayMs ?? 1000);
      }
    }
  }
}
