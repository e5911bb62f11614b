import { setTimeout as sleep } from 'node:timers/promises';
import { ConsumerStatus, type AsyncMessage } from 'rabbitmq-client';
import type { Log } from '../../../infra/logging.js';
import type { OrderRepository, PersistOutcome } from '../record/order-repository.js';
import type { SaleSettlement } from '../sale/sale-settlement.js';
import type { AcceptedOrder, NewOrder, QueuedOrder } from '../types.js';
import { GroupCommit } from '../writer/group-commit.js';
import { isUnavailable } from '../writer/order-worker.js';
import { BrokenCircuitError, WriteBreaker, type WriteBreakerOptions } from '../writer/write-breaker.js';
import type { BrokerConnection } from './broker-connection.js';
import { ConsumerStopping, QueueConsumer } from './queue-consumer.js';
import { decodeOrderMessage, type SaleTopology } from './rabbit-topology.js';

export interface QueueWriterOptions {
  /** Unacknowledged messages this writer holds (basic.qos); all of them are written together when they arrive together. */
  prefetch: number;
  /** Wait before giving back a message whose write failed for its own sake (it comes back, one delivery more). */
  retryDelayMs?: number;
  log: Log;
  /** Told of every finished message (created, duplicate, user-has-order) and failed attempt, as the order worker tells its entries. */
  onResult?: (result: PersistOutcome | 'failed') => void;
  /** Told of the orders each write put in MySQL (they are `created` now). */
  onWritten?: (orders: AcceptedOrder[]) => void;
  breaker?: WriteBreakerOptions;
}

/**
 * An order writer on the RabbitMQ order queue: up to `prefetch` messages in hand (basic.qos, the
 * notes' "能者多劳": a writer that writes faster takes more), written to MySQL together through the
 * order worker's group commit and circuit breaker, acknowledged after the commit. Then, as the
 * worker does, the order leaves the queued hash and its owner hears `created`.
 *
 * MySQL or Redis away: the messages are kept in hand (unacknowledged) and written once it is back,
 * never given back to the queue, where each return would count towards the delivery limit: an
 * outage never turns orders into dead letters. An order that fails for its own sake (MySQL lacks
 * the stock) goes back after `retryDelayMs`; after the delivery limit the queue dead-letters it
 * (dead-letters.ts). A redelivered order (the relay's duplicate, an ack lost) is a no-op.
 */
export class QueueWriter {
  private readonly consumer: QueueConsumer;
  readonly breaker: WriteBreaker;
  readonly writes: GroupCommit<NewOrder>;
  /** The queued records of written orders, removed together (SaleSettlement.forgetQueued). */
  private readonly forgetting: GroupCommit<QueuedOrder>;

  constructor(
    broker: BrokerConnection,
    topology: SaleTopology,
    private readonly settlement: SaleSettlement,
    private readonly orders: OrderRepository,
    private readonly options: QueueWriterOptions,
  ) {
    const { orderQueue, exchanges, queueBindings } = topology;
    this.consumer = new QueueConsumer(
      broker,
      { queue: orderQueue, exchanges, queueBindings, inHand: options.prefetch, requeue: true, name: 'order writer', log: options.log },
      (message) => this.handle(message),
    );
    this.breaker = new WriteBreaker(() => orders.ping(), {
      ...options.breaker,
      onStateChange: (state) => {
        options.breaker?.onStateChange?.(state);
        if (state === 'open') options.log.error('order writer: MySQL writes keep failing; circuit open, orders stay in hand until a probe succeeds');
        if (state === 'closed') options.log.info('order writer: MySQL probe succeeded; circuit closed, writing again');
      },
    });
    this.writes = new GroupCommit((group) => this.breaker.write(() => this.orders.persistAllNew(group)), {
      maxItems: options.prefetch,
      isTransient: isUnavailable,
    });
    // The written orders leave the queued records together too: one MULTI per shard for the
    // messages written meanwhile, not one per message. A failure fails them all (each retries).
    this.forgetting = new GroupCommit((written) => this.settlement.forgetQueued(written), { maxItems: options.prefetch, isTransient: () => true });
  }

  start(): void {
    this.consumer.start();
  }

  /** Stops taking messages; those in hand are finished, or given back when MySQL or Redis is away. */
  async stop(): Promise<void> {
    await this.consumer.stop();
  }

  private get running(): boolean {
    return this.consumer.running;
  }

  private async handle(message: AsyncMessage): Promise<ConsumerStatus> {
    const decoded = decodeOrderMessage(message);
    if (decoded === null) {
      this.options.log.error({ messageId: message.messageId }, 'order writer: a message that is no order; dead-lettered');
      return ConsumerStatus.DROP;
    }
    const { order } = decoded;
    const outcome = await this.write(order);
    if (outcome === 'user-has-order') {
      // Redis had lost the slot mark (failover); MySQL's unique key kept the rule. Give the unit back.
      this.options.log.warn({ order }, 'order writer: user already has a live order in this slot; order dropped');
      await this.untilDone(() => this.settlement.release(order));
    }
    // In MySQL now: no longer queued (GET order reads MySQL first, so this may lag without harm).
    await this.untilDone(() => this.forgetting.submit([order]));
    this.options.onResult?.(outcome);
    if (outcome === 'created') this.options.onWritten?.([order]);
    return ConsumerStatus.ACK;
  }

  /**
   * Written with the messages in hand (group commit), else alone (`persist` tells a redelivery and
   * a conflict apart). MySQL away: waits in hand. Failed for its own sake: throws after a pause.
   */
  private async write(order: NewOrder): Promise<PersistOutcome> {
    for (;;) {
      try {
        await this.writes.submit([order]);
        return 'created';
      } catch (error) {
        if (isUnavailable(error)) {
          await this.waitForMysql(error);
          continue;
        }
      }
      try {
        return await this.breaker.write(() => this.orders.persist(order));
      } catch (error) {
        if (isUnavailable(error)) {
          await this.waitForMysql(error);
          continue;
        }
        this.options.onResult?.('failed');
        this.options.log.warn({ err: error, order }, 'order writer: writing the order failed; it goes back to the queue');
        await sleep(this.options.retryDelayMs ?? 1000);
        throw error;
      }
    }
  }

  private async waitForMysql(error: unknown): Promise<void> {
    if (!this.running) throw new ConsumerStopping('stopping while MySQL is unavailable', { cause: error });
    if (!(error instanceof BrokenCircuitError)) this.options.onResult?.('failed');
    if (this.breaker.closed) await sleep(this.options.retryDelayMs ?? 1000);
    else await this.breaker.waitForProbe();
  }

  /** A Redis step after the write: retried while Redis is away, the message kept in hand. */
  private async untilDone(step: () => Promise<unknown>): Promise<void> {
    for (;;) {
      try {
        await step();
        return;
      } catch (error) {
        if (!this.running) throw new ConsumerStopping('stopping while Redis is unavailable', { cause: error });
        this.options.log.warn({ err: error }, 'order writer: Redis step after the write failed; retrying');
        await sleep(this.options.retryDelayMs ?? 1000);
      }
    }
  }
}
