import type { Log } from '../../../infra/logging.js';
import type { BrokerConnection } from './broker-connection.js';
import { ConfirmedPublisher, type PublishOutcome } from './confirmed-publisher.js';
import { orderMessage, type SaleTopology } from './rabbit-topology.js';

/**
 * Publishes orders to the order queue (a ConfirmedPublisher over the sale's declarations). Many
 * publishes may be in flight; each resolves with its own outcome, within `timeoutMs`, and never throws.
 */
export class OrderPublisher {
  private readonly publisher: ConfirmedPublisher;
  private lastWarning = 0;

  constructor(
    private readonly broker: BrokerConnection,
    topology: SaleTopology,
    timeoutMs: number,
    private readonly log: Log,
  ) {
    const { exchanges, queues, queueBindings } = topology;
    this.publisher = new ConfirmedPublisher(broker, { exchanges, queues, queueBindings }, timeoutMs, (error) => this.warn(error));
  }

  get ready(): boolean {
    return this.broker.ready;
  }

  publish(shard: number, entryId: string, fields: string[], orderId: string): Promise<PublishOutcome> {
    const { envelope, body } = orderMessage(shard, entryId, fields, orderId);
    return this.publisher.send(envelope, body, orderId);
  }

  /** Why publishes fail (no connection, a declaration the broker refuses), said once in 5 s at most. */
  private warn(error: unknown): void {
    if (Date.now() - this.lastWarning < 5_000) return;
    this.lastWarning = Date.now();
    this.log.warn({ err: error, rabbitmq: this.broker.address }, 'outbox relay: publishing to RabbitMQ failed');
  }

  async close(): Promise<void> {
    await this.publisher.close();
  }
}
