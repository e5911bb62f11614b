import type { RedisClient } from '../../../infra/redis.js';
import { defineOperations, readLua, type OperationSpec } from '../../../lib/redis-scripts/index.js';
import { ORDER_GROUP, type SaleKeys } from '../keys.js';

/** What stream-stats.lua reports of one shard's stream. */
export interface StreamCounts {
  length: number;
  /** Delivered to a consumer, not acknowledged. */
  pending: number;
  /** Not yet delivered; null when Redis cannot tell. */
  lag: number | null;
  deadLetters: number;
  /** Orders accepted in Redis and not yet in MySQL (the queued hash): an entry may hold a batch of them. */
  queued: number;
}

const lua = (name: string): string => readLua(import.meta.url, `lua/${name}.lua`);

/** The order streams' scripts (lua/*.lua, each headed by its KEYS, ARGV and reply), per shard, for the group `order-writers`. */
function streamOperations(keys: SaleKeys) {
  return {
    /** true when the group was created, false when it existed. */
    ensureGroup: {
      lua: lua('ensure-group'),
      keys: (shard: number) => [keys.shard(shard).stream],
      args: () => [ORDER_GROUP],
      reply: (raw: unknown) => raw === 1,
    },
    /** Entries removed. */
    trimAcknowledged: {
      lua: lua('trim-acknowledged'),
      keys: (shard: number) => [keys.shard(shard).stream],
      args: () => [ORDER_GROUP],
      reply: (raw: unknown) => Number(raw),
    },
    streamStats: {
      lua: lua('stream-stats'),
      keys: (shard: number) => [keys.shard(shard).stream, keys.shard(shard).deadLetters, keys.shard(shard).queued],
      args: () => [ORDER_GROUP],
      reply: (raw: unknown): StreamCounts => {
        const [length, pending, lag, deadLetters, queued] = raw as [number, number, number, number, number];
        return { length, pending, lag: lag < 0 ? null : lag, deadLetters, queued };
      },
    },
  } satisfies Record<string, OperationSpec<never, unknown>>;
}

export type StreamScripts = ReturnType<typeof defineStreamScripts>;

export const defineStreamScripts = (redis: RedisClient, keys: SaleKeys) => defineOperations(redis, 'seckillStream', streamOperations(keys));
