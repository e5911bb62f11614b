import type { AsyncMessage, Consumer, ConsumerProps, ConsumerStatus } from 'rabbitmq-client';
import type { Log } from '../../../infra/logging.js';
import type { BrokerConnection } from './broker-connection.js';
import type { QueueDeclaration } from './rabbit-topology.js';

/** Thrown into a message's handler when its consumer stops while a dependency is away: the message goes back to the queue. */
export class ConsumerStopping extends Error {
  override name = 'ConsumerStopping';
}

export interface QueueConsumerSpec {
  /** The queue, declared (with the exchanges and bindings it needs) before the first message and after every reconnect. */
  queue: QueueDeclaration;
  exchanges: ConsumerProps['exchanges'];
  queueBindings: ConsumerProps['queueBindings'];
  /** Messages held at once (basic.qos), every one handled at once: those that arrive together go on together. */
  inHand: number;
  /** A handler that throws gives its message back to the queue (true), or dead-letters it. */
  requeue?: boolean;
  /** The consumer's name in its log lines. */
  name: string;
  log: Log;
}

/**
 * One consumer of one queue for the broker's consumers (the order writers, the dead letters, the
 * release queue): started once, stopped once (the messages in hand finish first), its errors
 * logged, except a stop's own.
 */
export class QueueConsumer {
  private consumer: Consumer | undefined;
  private active = false;

  constructor(
    private readonly broker: BrokerConnection,
    private readonly spec: QueueConsumerSpec,
    private readonly handle: (message: AsyncMessage) => Promise<ConsumerStatus>,
  ) {}

  /** Between start() and stop(). */
  get running(): boolean {
    return this.active;
  }

  start(): void {
    if (this.active) return;
    this.active = true;
    const { queue, exchanges, queueBindings, inHand, requeue, name, log } = this.spec;
    this.consumer = this.broker.connection.createConsumer(
      {
        queue: queue.queue,
        queueOptions: queue,
        exchanges,
        queueBindings,
        qos: { prefetchCount: inHand },
        concurrency: inHand,
        ...(requeue === undefined ? {} : { requeue }),
      },
      (message) => this.handle(message),
    );
    this.consumer.on('error', (err: unknown) => {
      if (err instanceof ConsumerStopping || !this.active) return;
      log.warn({ err }, `${name}: consumer error (a message went back to the queue, or the channel is being re-made)`);
    });
  }

  async stop(): Promise<void> {
    if (!this.active) return;
    this.active = false;
    await this.consumer?.close();
    this.consumer = undefined;
  }
}
