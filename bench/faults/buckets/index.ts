/**
 * The bucket faults' door (docs/reliability-buckets.md): one voucher over three Redis Cluster
 * masters, faults mid-sale (scenario.ts), on a bed of a cluster and three instances shared by the
 * runs (bed.ts), stopped by `stopBucketBed` once they are done.
 */
export { bucketBed, stopBucketBed } from './bed.js';
export { bucketFaults } from './scenario.js';
