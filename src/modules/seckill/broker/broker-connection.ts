import { Connection } from 'rabbitmq-client';
import type { Log } from '../../../infra/logging.js';
import { redactUrl } from '../../../infra/redact.js';

/** `stalled`: connected but silent (no answer in time); `down`: not connected. As /api/health says it of Redis and MySQL. */
export type BrokerStatus = 'up' | 'down' | 'stalled';

export interface BrokerSettings {
  /** One URL, or the nodes of one cluster (same user, password, vhost): config RABBITMQ_URL. */
  urls: string[];
  connectTimeoutMs: number;
  /** Connection name shown by the broker (rabbitmqctl list_connections, management UI). */
  name: string;
}

/** Heartbeats every 5 s: a connection that stays silent for two of them is dropped and re-made. */
const HEARTBEAT_SECONDS = 10;
/** Reconnect waits grow from 0.5 s and stop growing at 5 s: a broker that is back is used within 5 s. */
const RETRY_LOW_MS = 500;
const RETRY_HIGH_MS = 5_000;

/**
 * The process's one connection to RabbitMQ (rabbitmq-client: it reconnects by itself, moving over
 * the cluster's nodes, and re-declares the topology of every publisher and consumer on it).
 * Connecting, and taking a channel, fail after `connectTimeoutMs`.
 */
export class BrokerConnection {
  readonly connection: Connection;
  /** The nodes without the password, for logs. */
  readonly address: string;
  private lastWarning = 0;

  constructor(settings: BrokerSettings, log: Log) {
    const [first, ...others] = settings.urls.map((url) => new URL(url));
    this.address = settings.urls.map(redactUrl).join(',');
    this.connection = new Connection({
      url: first!.toString(),
      // The cluster's nodes: the client tries them in turn (the URL's host is one of them).
      ...(others.length > 0 ? { hosts: [first!, ...others].map((url) => `${url.hostname}:${url.port || '5672'}`) } : {}),
      connectionName: settings.name,
      connectionTimeout: settings.connectTimeoutMs,
      acquireTimeout: settings.connectTimeoutMs,
      heartbeat: HEARTBEAT_SECONDS,
      retryLow: RETRY_LOW_MS,
      retryHigh: RETRY_HIGH_MS,
    });
    this.connection.on('error', (err: unknown) => {
      // Said once in 5 s at most: a broker that is away fails every reconnect attempt.
      if (Date.now() - this.lastWarning < 5_000) return;
      this.lastWarning = Date.now();
      log.warn({ err, rabbitmq: this.address }, 'RabbitMQ connection error; reconnecting (orders wait in the Redis streams)');
    });
    this.connection.on('connection', () => log.info({ rabbitmq: this.address }, 'RabbitMQ connected'));
  }

  /** Connected and not blocked by the broker (resource alarm). */
  get ready(): boolean {
    return this.connection.ready;
  }

  /**
   * Whether the broker answers a round trip (a passive declaration of `queue`) within
   * `timeoutMs`: for /api/health. Never throws.
   */
  async probe(queue: string, timeoutMs: number): Promise<BrokerStatus> {
    if (!this.connection.ready) return 'down';
    const answer = this.connection.queueDeclare({ queue, passive: true }).then(
      () => 'up' as const,
      // A queue not declared yet answers 404: the broker answered.
      () => (this.connection.ready ? ('up' as const) : ('down' as const)),
    );
    return withDeadline(answer, timeoutMs, 'stalled');
  }

  /** Messages ready in `queue` (passive declaration), or undefined when the broker does not answer in time. */
  async readyMessages(queue: string, timeoutMs: number): Promise<number | undefined> {
    if (!this.connection.ready) return undefined;
    const answer = this.connection.queueDeclare({ queue, passive: true }).then(
      (ok) => ok.messageCount,
      () => undefined,
    );
    return withDeadline(answer, timeoutMs, undefined);
  }

  /** Closes the connection once its publishers and consumers are closed. */
  async close(): Promise<void> {
    await this.connection.close();
  }
}

/** The promise's value, or `late` when it has not settled within `ms`. */
export async function withDeadline<T, L>(promise: Promise<T>, ms: number, late: L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<L>((resolve) => {
    timer = setTimeout(() => resolve(late), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
