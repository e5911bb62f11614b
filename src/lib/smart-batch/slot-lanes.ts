import calculateSlot from 'cluster-key-slot';
import type { Cluster, Redis } from 'ioredis';

/**
 * The lane of a call about `key`: a script's keys must share a Cluster slot, so on a Cluster each
 * slot is a lane of its own (its slot counted with the client's key prefix, as ioredis sends it);
 * on a standalone Redis every key fits one call: one lane.
 */
export function slotLanes(redis: Redis | Cluster): (key: string) => number {
  if (!redis.isCluster) return () => 0;
  const keyPrefix = redis.options.keyPrefix ?? '';
  return (key) => calculateSlot(keyPrefix + key);
}
