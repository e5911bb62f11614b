import type { RedisClient } from '../../../infra/redis.js';
import type { OrderStream } from './order-stream.js';

/**
 * One loop per shard of the order streams, each reading on a blocking connection of its own, so
 * that the shared client (and its auto-pipelined commands) never waits behind an XREADGROUP BLOCK.
 * Started together; stopped together by closing those connections, which ends a blocked read at
 * once. The order worker and the RabbitMQ relay both run their shards so.
 */
export class ShardLoops {
  private active = false;
  private readonly readers: RedisClient[] = [];
  private loops: Array<Promise<void>> = [];

  constructor(private readonly stream: OrderStream) {}

  /** Until stop() is called; each loop runs while this holds. */
  get running(): boolean {
    return this.active;
  }

  start(loop: (shard: number, reader: RedisClient) => Promise<void>): void {
    if (this.active) return;
    this.active = true;
    this.loops = this.stream.keys.allShards().map((shard) => {
      const reader = this.stream.connectionForBlockingReads();
      this.readers.push(reader);
      return loop(shard, reader);
    });
  }

  /** Closes the blocking connections and waits for every loop to end. */
  async stop(): Promise<void> {
    if (!this.active) return;
    this.active = false;
    for (const reader of this.readers) reader.disconnect();
    await Promise.allSettled(this.loops);
    this.readers.length = 0;
  }
}
