import type { NewOrder } from '../types.js';
import type { BrokerConnection } from './broker-connection.js';
import { ConfirmedPublisher } from './confirmed-publisher.js';
import { dueMessage, type UnpaidTopology } from './rabbit-topology.js';

/** Deadlines the broker did not confirm in time, refused or could not route (the caller schedules them elsewhere). */
export class DeadlineNotPublished extends Error {
  override name = 'DeadlineNotPublished';
}

/**
 * The payment deadlines of SECKILL_QUEUE=rabbitmq, gulimall's way: every order written to MySQL is
 * published (persistent, with publisher confirms) to the delay queue `seckill.unpaid.delay` with a
 * per-message `expiration` = its due time (acceptance + payment window) − now, and the queue
 * dead-letters it into the release queue when that time comes.
 *
 * Per-message TTLs expire only at the head of a queue: a message behind one that expires later
 * waits for it. Here that costs little: the window is the same for every order and counted from
 * acceptance, and orders are written, so published, about in acceptance order, so the head is
 * (nearly) always the first due. An order written out of that order (a writer that waited out a
 * MySQL outage while others wrote later orders) can be late by the gap; the sweep bounds that. A
 * queue-wide `x-message-ttl` would count the window from publishing instead and make every late
 * write lengthen its window. An order whose due time has already passed (written after an outage)
 * skips the delay queue: it goes straight to the release queue and is cancelled at once.
 *
 * Due times are counted on this process's clock against reserve.lua's Redis time: hosts kept by NTP
 * differ by milliseconds.
 */
export class UnpaidDelays {
  private readonly publisher: ConfirmedPublisher;

  constructor(
    private readonly broker: BrokerConnection,
    topology: UnpaidTopology,
    private readonly paymentWindowMs: number,
    timeoutMs: number,
  ) {
    const { exchanges, queues, queueBindings } = topology;
    this.publisher = new ConfirmedPublisher(broker, { exchanges, queues, queueBindings }, timeoutMs);
  }

  /** Publishes the orders' deadlines and resolves once the broker confirmed all; throws DeadlineNotPublished otherwise. */
  async schedule(orders: readonly NewOrder[]): Promise<void> {
    // Not connected: said at once rather than after a wait, so that a sync request's write is not held up.
    if (!this.broker.ready) throw new DeadlineNotPublished(`RabbitMQ (${this.broker.address}) is not connected`);
    const now = Date.now();
    const failed = (await Promise.all(orders.map((order) => this.publish(order, now)))).filter((ok) => !ok).length;
    if (failed > 0) {
      throw new DeadlineNotPublished(`${failed} of ${orders.length} payment deadlines not confirmed by RabbitMQ (${this.broker.address})`);
    }
  }

  private async publish(order: NewOrder, now: number): Promise<boolean> {
    const acceptedMs = order.acceptedMs ?? now;
    const due = {
      orderId: order.orderId,
      userId: order.userId,
      voucherId: order.voucherId,
      slot: order.slot ?? 1,
      acceptedMs,
      dueMs: acceptedMs + this.paymentWindowMs,
    };
    const { envelope, body } = dueMessage(due, now);
    return (await this.publisher.send(envelope, body, order.orderId)) === 'confirmed';
  }

  async close(): Promise<void> {
    await this.publisher.close();
  }
}
