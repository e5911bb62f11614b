import { AMQPError, type Publisher } from 'rabbitmq-client';
import type { Log } from '../../../infra/logging.js';
import type { BrokerConnection } from './broker-connection.js';
import { withDeadline } from './broker-connection.js';
import { orderMessage, type SaleTopology } from './rabbit-topology.js';

/**
 * What became of one publish: `confirmed` (the broker has it on disk in a quorum of nodes),
 * `rejected` (nacked: the queue is full, reject-publish), `returned` (no queue took it),
 * `timeout` (no confirm in time: it may still arrive) or `unavailable` (no connection, a channel error).
 */
export type PublishOutcome = 'confirmed' | 'rejected' | 'returned' | 'timeout' | 'unavailable';

/**
 * Publishes orders to the order queue on one channel in confirm mode (rabbitmq-client's
 * Publisher: the channel and the topology are re-made after a reconnect). Many publishes may be in
 * flight; each resolves with its own outcome, within `timeoutMs`, and never throws.
 */
export class OrderPublisher {
  private readonly publisher: Publisher;
  /** Message ids the broker returned as unroutable; the broker confirms such a message right after returning it. */
  private readonly returned = new Set<string>();
  private lastWarning = 0;

  constructor(
    private readonly broker: BrokerConnection,
    topology: SaleTopology,
    private readonly timeoutMs: number,
    private readonly log: Log,
  ) {
    this.publisher = broker.connection.createPublisher({
      confirm: true,
      // Retries are the relay's: an unconfirmed entry stays pending in the stream.
      maxAttempts: 1,
      exchanges: topology.exchanges,
      queues: topology.queues,
      queueBindings: topology.queueBindings,
      onReturn: (message) => {
        if (message.messageId !== undefined) this.returned.add(message.messageId);
      },
    });
  }

  get ready(): boolean {
    return this.broker.ready;
  }

  async publish(shard: number, entryId: string, fields: string[], orderId: string): Promise<PublishOutcome> {
    const { envelope, body } = orderMessage(shard, entryId, fields, orderId);
    const sent = this.publisher.send(envelope, body).then(
      () => (this.returned.delete(orderId) ? ('returned' as const) : ('confirmed' as const)),
      (error: unknown) => {
        if (error instanceof AMQPError && error.code === 'NACK') return 'rejected' as const;
        this.warn(error);
        return 'unavailable' as const;
      },
    );
    return withDeadline(sent, this.timeoutMs, 'timeout' as const);
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
