import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../../../infra/redis.js';
import { defineScripts, readLua } from '../../../lib/redis-scripts/index.js';
import { orderStreamSeatsKey } from '../keys.js';

interface SeatScripts {
  /** 1 taken, 0 all in use; with seats 0, renews the id's lease. */
  take(key: string, streamId: string, seats: number, leaseMs: number): Promise<number>;
}

/** A held stream seat: renew it within its lease, release it when the stream ends. */
export interface StreamSeat {
  renew(): Promise<void>;
  release(): Promise<void>;
}

/**
 * Bounds a user's open event streams over all instances: a sorted set of leases per user
 * (lua/stream-seat.lua), renewed with each heartbeat, so a crashed instance's seats come back.
 */
export class StreamSeats {
  private readonly scripts: SeatScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly seatsPerUser: number,
    private readonly leaseMs: number,
  ) {
    this.scripts = defineScripts<SeatScripts>(redis, 'orderStreams', { take: { keys: 1, lua: readLua(import.meta.url, 'lua/stream-seat.lua') } });
  }

  /** A seat, or null when the user has all of theirs taken. */
  async take(userId: string): Promise<StreamSeat | null> {
    const key = orderStreamSeatsKey(userId);
    const id = randomUUID();
    if ((await this.scripts.take(key, id, this.seatsPerUser, this.leaseMs)) !== 1) return null;
    return {
      renew: async () => {
        await this.scripts.take(key, id, 0, this.leaseMs);
      },
      release: async () => {
        await this.redis.zrem(key, id);
      },
    };
  }
}
