import type { Config } from '../../../infra/config.js';
import type { Log } from '../../../infra/logging.js';
import type { RedisClient } from '../../../infra/redis.js';
import type { OrderRepository, PersistOutcome } from '../record/order-repository.js';
import type { SaleSettlement } from '../sale/sale-settlement.js';
import type { AcceptedOrder, DueOrder } from '../types.js';
import type { OrderStream } from '../writer/order-stream.js';
import type { WriteBreakerOptions } from '../writer/write-breaker.js';
import { BrokerConnection, type BrokerStatus } from './broker-connection.js';
import { DeadLetters } from './dead-letters.js';
import type { PublishOutcome } from './confirmed-publisher.js';
import { OrderPublisher } from './order-publisher.js';
import { OutboxRelay } from './outbox-relay.js';
import { QueueWriter } from './queue-writer.js';
import { DEAD_LETTER_QUEUE, DELAY_QUEUE, ORDER_QUEUE, RELEASE_QUEUE, saleTopology, unpaidTopology } from './rabbit-topology.js';
import { ReleaseConsumer } from './release-consumer.js';
import { UnpaidDelays } from './unpaid-delays.js';

export interface RabbitPathDeps {
  settings: Config['seckill'];
  redis: RedisClient;
  stream: OrderStream;
  settlement: SaleSettlement;
  orders: OrderRepository;
  log: Log;
  /** This process's name in the stream's consumer group and on the broker's connection list. */
  consumer: string;
  onPublished?: (outcome: PublishOutcome) => void;
  onResult?: (result: PersistOutcome | 'dead-letter' | 'failed') => void;
  onWritten?: (orders: AcceptedOrder[]) => void;
  breaker?: WriteBreakerOptions;
  /** The canceller's conditional cancellation of due orders, for the release queue's consumer. */
  cancelDue: (orders: readonly DueOrder[]) => Promise<unknown>;
}

/**
 * The sale's RabbitMQ path (SECKILL_QUEUE=rabbitmq) in a worker process: one connection, the
 * outbox relay (streams → order queue), an order writer (order queue → MySQL), the dead-letter
 * consumer, and the payment deadlines: the delay publisher (`delays`, where the orders this
 * process writes are scheduled) and the release queue's consumer. Built when the jobs start, so
 * that a process that runs none opens no connection.
 */
export function buildRabbitPath(deps: RabbitPathDeps) {
  const { settings, redis, stream, settlement, orders, log, consumer } = deps;
  const { rabbitmq } = settings;
  const broker = new BrokerConnection({ urls: rabbitmq.urls, connectTimeoutMs: rabbitmq.connectTimeoutMs, name: `hmdp seckill ${consumer}` }, log);
  const topology = saleTopology({ maxDeliveries: settings.maxDeliveries, maxLength: rabbitmq.maxLength });
  const publisher = new OrderPublisher(broker, topology, rabbitmq.publishTimeoutMs, log);
  const relay = new OutboxRelay(stream, settlement, redis, publisher, {
    consumer,
    window: rabbitmq.publishWindow,
    claimIdleMs: settings.claimIdleMs,
    log,
    ...(deps.onPublished ? { onPublished: deps.onPublished } : {}),
  });
  const writer = new QueueWriter(broker, topology, settlement, orders, {
    prefetch: rabbitmq.prefetch,
    log,
    ...(deps.onResult ? { onResult: deps.onResult } : {}),
    ...(deps.onWritten ? { onWritten: deps.onWritten } : {}),
    ...(deps.breaker ? { breaker: deps.breaker } : {}),
  });
  const deadLetters = new DeadLetters(broker, topology, stream, settlement, orders, {
    maxDeliveries: settings.maxDeliveries,
    log,
    ...(deps.onResult ? { onResult: deps.onResult } : {}),
    ...(deps.onWritten ? { onWritten: deps.onWritten } : {}),
  });
  const unpaid = unpaidTopology();
  const delays = new UnpaidDelays(broker, unpaid, settings.paymentWindowSeconds * 1000, rabbitmq.publishTimeoutMs);
  const releases = new ReleaseConsumer(broker, unpaid, { prefetch: rabbitmq.releasePrefetch, cancelDue: deps.cancelDue, log });
  return {
    broker,
    publisher,
    relay,
    writer,
    deadLetters,
    delays,
    releases,
    start(): void {
      relay.start();
      writer.start();
      deadLetters.start();
      releases.start();
    },
    /** Relay first (publishes in flight settle), then the consumers (messages in hand finish, deadlines published), then the connection. */
    async stop(): Promise<void> {
      await relay.stop();
      await writer.stop();
      await deadLetters.stop();
      await releases.stop();
      await publisher.close();
      await delays.close();
      await broker.close();
    },
    /** For /api/health: does the broker answer a round trip in time? */
    status: (timeoutMs: number): Promise<BrokerStatus> => broker.probe(ORDER_QUEUE, timeoutMs),
    /** For the metrics: ready messages of the sale's queues (undefined: no answer in time); the delay queue's are the orders awaiting payment. */
    async queueDepths(timeoutMs: number): Promise<Array<{ queue: string; messages: number | undefined }>> {
      return Promise.all(
        [ORDER_QUEUE, DEAD_LETTER_QUEUE, DELAY_QUEUE, RELEASE_QUEUE].map(async (queue) => ({ queue, messages: await broker.readyMessages(queue, timeoutMs) })),
      );
    },
  };
}

export type RabbitPath = ReturnType<typeof buildRabbitPath>;
