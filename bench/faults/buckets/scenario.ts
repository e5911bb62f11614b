/**
 * Issue 30's promises under faults: one voucher sold from B = 3 buckets on the three masters of a
 * Redis Cluster (bed.ts: 3 masters + 3 replicas, three app instances with
 * SECKILL_REPLICA_ACKS=1), demand above stock, nine buyers in ten homing to bucket 0, so that the
 * other buckets' units reach them by refills (take, give, settle) all through the sale.
 *
 * - `refill abandoned between take and give`: before the load, every unit of buckets 1 and 2 is
 *   taken towards bucket 0 and never given (BucketTransfers.takeAndAbandon: the state an
 *   instance SIGKILLed between the two steps leaves, made on purpose rather than by a lucky kill).
 *   A first load sells bucket 0's units and then meets nothing but pending units: it must get 503
 *   (retry), never "sold out". The instances' own sweep (records older than 10 s, every 5 s)
 *   returns the units to their buckets; a second load sells them to the last.
 * - `SECKILL_REPLICA_ACKS=1, hot bucket's master killed`: SIGKILL the master of bucket 0 (the one
 *   receiving every give) at a quarter of the load; its replica is promoted.
 * - `…, replica 1.5 s stale`: as crash/redis-failover.ts's stale replica, on that master: the promoted
 *   replica lacks 1.5 s of the bucket's writes (orders, gives). Shows what the refill steps lose
 *   when only the reserve waits for a replica; MySQL's checks still hold, Redis's count may not.
 *
 * Every run checks the sale's promises: every unit sold and no false "sold out" (soldOutChecks of
 * bench/sale/sold-out-ledger.ts: no order accepted whose first attempt was sent after a "sold out" had
 * arrived, no unit left once the voucher said "sold out"), none oversold, none twice to a user, MySQL = the accepted orders, and Redis's own count:
 * the buyers it marks plus the units it still holds (stock + pending) = stock.
 */
import { ABANDONED, abandonedRefills } from './abandoned-refills.js';
import { bucketBed, stopBucketBed } from './bed.js';
import { hotMasterKilled, PLAIN_KILL, STALE_KILL } from './hot-master-killed.js';
import type { FaultScenario } from '../harness/index.js';

export const bucketFaults: FaultScenario = {
  name: 'buckets',
  variants: [ABANDONED, PLAIN_KILL, STALE_KILL],
  run: async (variant, size) => {
    const bed = await bucketBed(size);
    return variant === ABANDONED ? abandonedRefills(bed, size) : hotMasterKilled(bed, size, variant === STALE_KILL);
  },
  close: stopBucketBed,
};
