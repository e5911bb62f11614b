import { setTimeout as sleep } from 'node:timers/promises';
import { ConsumerStatus, type AsyncMessage } from 'rabbitmq-client';
import type { Log } from '../../../infra/logging.js';
import { isTransient } from '../../../infra/transient-errors.js';
import type { OrderRepository, PersistOutcome } from '../record/order-repository.js';
import type { SaleSettlement } from '../sale/sale-settlement.js';
import type { AcceptedOrder, QueuedOrder } from '../types.js';
import type { OrderStream } from '../writer/order-stream.js';
import type { BrokerConnection } from './broker-connection.js';
import { QueueConsumer } from './queue-consumer.js';
import { decodeOrderMessage, type SaleTopology } from './rabbit-topology.js';

export interface DeadLettersOptions {
  /** SECKILL_MAX_DELIVERIES: what a message dead-lettered for its delivery limit was delivered. */
  maxDeliveries: number;
  /** Wait before trying again while MySQL or Redis is away. */
  retryDelayMs?: number;
  log: Log;
  onResult?: (result: PersistOutcome | 'dead-letter') => void;
  onWritten?: (orders: AcceptedOrder[]) => void;
}

/** Dead letters handled at once: they are rare, and each costs a MySQL transaction. */
const IN_HAND = 4;

/**
 * Consumes the dead-letter queue (orders the writers failed to write `maxDeliveries` times, or
 * rejected). Each order is tried once more, alone: an order MySQL takes now (or already has) is
 * not a dead letter, and only one MySQL refuses for its own sake is given up. Then, as the order
 * worker does with the stream's dead letters: its unit and slot go back (release.lua, exactly once
 * per order however often this runs), and it is recorded in its shard's dead-letter stream
 * `{seckill:N}:orders:dead` (seckill_dead_letters counts them), then acknowledged. A crash in
 * between does it again: the release is a no-op then, the record may appear twice.
 */
export class DeadLetters {
  private readonly consumer: QueueConsumer;

  constructor(
    broker: BrokerConnection,
    topology: SaleTopology,
    private readonly stream: OrderStream,
    private readonly settlement: SaleSettlement,
    private readonly orders: OrderRepository,
    private readonly options: DeadLettersOptions,
  ) {
    const { deadLetterQueue, exchanges, queueBindings } = topology;
    this.consumer = new QueueConsumer(
      broker,
      { queue: deadLetterQueue, exchanges, queueBindings, inHand: IN_HAND, name: 'dead letters', log: options.log },
      (message) => this.handle(message),
    );
  }

  start(): void {
    this.consumer.start();
  }

  async stop(): Promise<void> {
    await this.consumer.stop();
  }

  private get running(): boolean {
    return this.consumer.running;
  }

  private async handle(message: AsyncMessage): Promise<ConsumerStatus> {
    const decoded = decodeOrderMessage(message);
    if (decoded === null) {
      // Nothing to give back: the relay publishes orders only.
      this.options.log.error({ messageId: message.messageId, body: message.body as unknown }, 'dead letters: a message that is no order; dropped');
      return ConsumerStatus.ACK;
    }
    const { id, order, fields } = decoded;
    // A bucketed voucher's order came from its bucket's lane, not from its voucher's shard.
    const shard = await this.settlement.streamShardOf(order);
    const written = await this.retrying(() => this.writeOnceMore(order));
    if (typeof written === 'string') {
      if (written === 'user-has-order') await this.retrying(() => this.settlement.release(order));
      else await this.retrying(() => this.settlement.forgetQueued([order]));
      this.options.log.warn({ order, outcome: written }, 'dead letters: a dead-lettered order was written after all (or was already)');
      this.options.onResult?.(written);
      if (written === 'created') this.options.onWritten?.([order]);
      return ConsumerStatus.ACK;
    }
    const error = written.refused;
    const deliveries = message.headers?.['x-first-death-reason'] === 'delivery_limit' ? this.options.maxDeliveries : 1;
    await this.retrying(() => this.settlement.release(order));
    await this.retrying(() => this.stream.deadLetter(shard, id, [fields], [order], deliveries, error));
    this.options.onResult?.('dead-letter');
    this.options.log.error({ order, deliveries, error }, 'dead letters: order given up, its unit and slot given back, recorded in the dead-letter stream');
    return ConsumerStatus.ACK;
  }

  /** What MySQL says of the order now, or why it refuses it for its own sake; throws while MySQL is away. */
  private async writeOnceMore(order: QueuedOrder & { acceptedMs: number }): Promise<PersistOutcome | { refused: string }> {
    try {
      return await this.orders.persist(order);
    } catch (error) {
      if (isTransient(error)) throw error;
      return { refused: String(error) };
    }
  }

  /** A step retried while MySQL or Redis is away; given back to the queue when stopping. */
  private async retrying<T>(step: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await step();
      } catch (error) {
        if (!this.running) throw error;
        this.options.log.warn({ err: error }, 'dead letters: MySQL or Redis unavailable; retrying');
        await sleep(this.options.retryDelayMs ?? 1000);
      }
    }
  }
}
