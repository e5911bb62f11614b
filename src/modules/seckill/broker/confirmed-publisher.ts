import { AMQPError, type Envelope, type Publisher, type PublisherProps } from 'rabbitmq-client';
import type { BrokerConnection } from './broker-connection.js';
import { withDeadline } from './broker-connection.js';

/**
 * What became of one publish: `confirmed` (the broker has it on disk in a quorum of nodes),
 * `rejected` (nacked: the queue is full, reject-publish), `returned` (no queue took it),
 * `timeout` (no confirm in time: it may still arrive) or `unavailable` (no connection, a channel error).
 */
export type PublishOutcome = 'confirmed' | 'rejected' | 'returned' | 'timeout' | 'unavailable';

/**
 * One channel in confirm mode (rabbitmq-client's Publisher: the channel and the declarations are
 * re-made after a reconnect) for the broker's publishers, the outbox relay's and the payment
 * deadlines'. Many publishes may be in flight; each resolves with its own outcome within
 * `timeoutMs` and never throws. Retries are the caller's (one attempt here): an unconfirmed order
 * stays pending in its stream, an unconfirmed deadline goes to the Redis release queue.
 */
export class ConfirmedPublisher {
  private readonly publisher: Publisher;
  /** Message ids the broker returned as unroutable; the broker confirms such a message right after returning it. */
  private readonly returned = new Set<string>();

  constructor(
    broker: BrokerConnection,
    declarations: Pick<PublisherProps, 'exchanges' | 'queues' | 'queueBindings'>,
    private readonly timeoutMs: number,
    /** Told why a publish found no broker or channel (`unavailable`). */
    private readonly onUnavailable: (error: unknown) => void = () => undefined,
  ) {
    this.publisher = broker.connection.createPublisher({
      confirm: true,
      maxAttempts: 1,
      ...declarations,
      onReturn: (message) => {
        if (message.messageId !== undefined) this.returned.add(message.messageId);
      },
    });
  }

  /** Publishes one message; `messageId` is its envelope's, by which a return is told apart. */
  send(envelope: Envelope, body: unknown, messageId: string): Promise<PublishOutcome> {
    const sent = this.publisher.send(envelope, body).then(
      () => (this.returned.delete(messageId) ? ('returned' as const) : ('confirmed' as const)),
      (error: unknown) => {
        if (error instanceof AMQPError && error.code === 'NACK') return 'rejected' as const;
        this.onUnavailable(error);
        return 'unavailable' as const;
      },
    );
    return withDeadline(sent, this.timeoutMs, 'timeout' as const);
  }

  async close(): Promise<void> {
    await this.publisher.close();
  }
}
