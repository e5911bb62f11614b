import type { Redis } from 'ioredis';

/** The channel Redis publishes invalidations on in RESP2 (`CLIENT TRACKING ... REDIRECT`). */
export const INVALIDATE_CHANNEL = '__redis__:invalidate';

export interface TrackingListener {
  /** Keys (with the client's key prefix) that changed, expired or were evicted. */
  invalidate(keys: readonly string[]): void;
  /** Nothing cached may be trusted any more (a connection dropped, a FLUSHALL). */
  flush(reason: string): void;
  error(error: unknown, what: string): void;
}

/**
 * Client-side caching on one Redis node in RESP2: `data` is the connection the reads go through,
 * `subscriber` an invalidation connection of our own to the same node, subscribed to
 * `__redis__:invalidate`; `data` runs `CLIENT TRACKING ON REDIRECT <subscriber's id>`.
 *
 * `tracking` is true only while both are up and the TRACKING command on the current `data`
 * connection, naming the current subscriber, has been confirmed. Any drop of either connection
 * sets it false and flushes (Redis forgets tracking with the connection, and invalidations sent
 * while the subscriber was away are lost); when both are back, tracking is enabled again on the
 * new connection ids before anything is cached.
 */
export class NodeTracking {
  tracking = false;
  /** CLIENT ID of the current subscriber connection (null while it is down). */
  subscriberId: number | null = null;
  /** Bumped by every drop: an enable() begun before it must not set `tracking`. */
  private generation = 0;
  private healthTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    readonly name: string,
    private readonly data: Redis,
    private readonly subscriber: Redis,
    private readonly listener: TrackingListener,
    private readonly healthCheckMs: number,
  ) {
    data.on('ready', this.onDataReady);
    data.on('close', this.onDataClose);
    subscriber.on('ready', () => void this.onSubscriberReady());
    subscriber.on('close', this.onSubscriberClose);
    subscriber.on('messageBuffer', this.onMessage);
    subscriber.on('error', (error: unknown) => listener.error(error, `invalidation connection to ${name}`));
  }

  /** Connects the subscriber (and `data`, if not connected yet). */
  start(): void {
    if (this.subscriber.status === 'wait') this.subscriber.connect().catch(() => undefined);
    if (this.data.status === 'wait') this.data.connect().catch(() => undefined);
    if (this.healthCheckMs > 0) {
      this.healthTimer = setInterval(() => this.checkSubscriber(), this.healthCheckMs);
      this.healthTimer.unref();
    }
  }

  /** Stops listening and closes the subscriber; `data` belongs to the caller. */
  close(): void {
    this.closed = true;
    clearInterval(this.healthTimer);
    this.data.off('ready', this.onDataReady);
    this.data.off('close', this.onDataClose);
    this.lose('closed');
    this.subscriber.disconnect();
  }

  private readonly onDataReady = (): void => void this.enable();
  private readonly onDataClose = (): void => this.lose(`data connection to ${this.name} closed`);

  private readonly onSubscriberClose = (): void => {
    this.subscriberId = null;
    this.lose(`invalidation connection to ${this.name} closed`);
  };

  /** A new subscriber connection: learn its id (before SUBSCRIBE: RESP2 allows no CLIENT ID after), subscribe, redirect to it. */
  private readonly onSubscriberReady = async (): Promise<void> => {
    const generation = this.generation;
    try {
      const id = await this.subscriber.client('ID');
      await this.subscriber.subscribe(INVALIDATE_CHANNEL);
      if (generation !== this.generation || this.closed) return; // dropped meanwhile: its next 'ready' retries
      this.subscriberId = id;
      await this.enable();
    } catch (error) {
      this.listener.error(error, `subscribing on ${this.name}`);
    }
  };

  private readonly onMessage = (channel: Buffer, payload: Buffer[] | Buffer | null): void => {
    if (channel.toString() !== INVALIDATE_CHANNEL) return;
    // A null payload is Redis's "flush everything" (FLUSHALL / FLUSHDB).
    if (payload === null) this.listener.flush(`flush on ${this.name}`);
    else this.listener.invalidate(Array.isArray(payload) ? payload.map(String) : [payload.toString()]);
  };

  /** CLIENT TRACKING ON REDIRECT <subscriber id> on the current data connection. */
  private async enable(): Promise<void> {
    const id = this.subscriberId;
    const generation = this.generation;
    if (id === null || this.data.status !== 'ready' || this.tracking || this.closed) return;
    try {
      await this.data.call('CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(id));
    } catch (error) {
      this.listener.error(error, `enabling tracking on ${this.name}`);
      return;
    }
    if (generation === this.generation && id === this.subscriberId && this.data.status === 'ready' && !this.closed) this.tracking = true;
  }

  private lose(reason: string): void {
    this.generation++;
    this.tracking = false;
    this.listener.flush(reason);
  }

  /**
   * A subscriber that stalls without closing would silently stop delivering invalidations: PING
   * it (allowed in subscribed mode) and reconnect it when no answer comes within the period.
   */
  private checkSubscriber(): void {
    if (this.subscriber.status !== 'ready') return;
    let answered = false;
    const timer = setTimeout(() => {
      if (!answered && !this.closed) this.subscriber.disconnect(true);
    }, this.healthCheckMs);
    timer.unref();
    this.subscriber.ping().then(
      () => {
        answered = true;
        clearTimeout(timer);
      },
      () => undefined,
    );
  }
}
