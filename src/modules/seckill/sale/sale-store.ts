import type { RedisClient } from '../../../infra/redis.js';
import type { KeyReader } from '../../../lib/near-cache/index.js';
import type { BucketRef, SaleKeys } from '../keys.js';
import type { OrderRequest, QueuedOrder, ReserveResult, SaleState, UserQueuedOrder } from '../types.js';
import type { KeyBinding } from './idempotency-keys.js';
import { buildSale, type Sale, type SaleOptions } from './sale.js';
import type { BucketRepair, ControlOutcome, ReserveMode, SaleControl, SaleRecord, SaleWindow } from './sale-scripts.js';
import type { BucketSnapshot, SaleSnapshot } from './sale-snapshots.js';
import { TRANSFER_SWEEP_AFTER_MS, type BucketTransfers } from './transfers.js';

export type { SaleSource } from './sale-decider.js';
export type { KeyBinding } from './idempotency-keys.js';
export type { BucketSnapshot, SaleSnapshot } from './sale-snapshots.js';
export type SaleStoreOptions = SaleOptions;

/** The sale's parts (sale.ts) behind the one class its callers still use, until each takes its part. */
export class SaleStore {
  readonly sale: Sale;
  readonly keys: SaleKeys;
  readonly transfers: BucketTransfers;

  constructor(redis: RedisClient, keys: SaleKeys, options: SaleOptions = {}) {
    this.sale = buildSale(redis, keys, options);
    this.keys = keys;
    this.transfers = this.sale.transfers;
  }

  publish = (state: SaleState): Promise<boolean> => this.sale.publisher.publish(state);
  unpublish = (voucherId: string, buckets: number): Promise<void> => this.sale.publisher.unpublish(voucherId, buckets);
  publishLayout = (sale: SaleState, buckets: number): Promise<boolean> => this.sale.publisher.publishLayout(sale, buckets);
  bucketsOf = (voucherId: string): Promise<number> => this.sale.layouts.bucketsOf(voucherId);
  routedBuckets = (voucherId: string): number => this.sale.layouts.routedBuckets(voucherId);
  streamShardOf = (order: QueuedOrder): Promise<number> => this.sale.settlement.streamShardOf(order);
  stockOf = (voucherId: string): Promise<number | null> => this.sale.reads.stockOf(voucherId);
  liveStock = (voucherId: string, reader: KeyReader): Promise<number | null> => this.sale.reads.liveStock(voucherId, reader);
  read = (voucherId: string): Promise<SaleState | null> => this.sale.reads.read(voucherId);
  decide = (order: OrderRequest, mode: ReserveMode = 'stream'): Promise<ReserveResult> => this.sale.decider.decide(order, mode);
  reserve = (order: OrderRequest, mode: ReserveMode = 'stream', bucket?: BucketRef): Promise<ReserveResult> => this.sale.batches.reserve(order, mode, bucket);
  bindIdempotencyKey = (userId: string, key: string, voucherId: string): Promise<KeyBinding> => this.sale.idempotencyKeys.bind(userId, key, voucherId);
  forgetIdempotencyKey = (order: OrderRequest): Promise<void> => this.sale.idempotencyKeys.forget(order);
  queuedOfUser = (userId: string): Promise<UserQueuedOrder[]> => this.sale.reads.queuedOfUser(userId);
  forgetQueued = (orders: readonly QueuedOrder[]): Promise<void> => this.sale.settlement.forgetQueued(orders);
  settle = (order: QueuedOrder): Promise<void> => this.sale.settlement.settle(order);
  handOff = (order: QueuedOrder): Promise<boolean> => this.sale.settlement.handOff(order);
  handOffStale = (shard: number, ageMs: number, limit: number): Promise<number> => this.sale.settlement.handOffStale(shard, ageMs, limit);
  release = (order: QueuedOrder): Promise<boolean> => this.sale.settlement.release(order);
  sweepTransfers = (olderThanMs = TRANSFER_SWEEP_AFTER_MS): Promise<number> => this.transfers.sweep(olderThanMs);
  control = (voucherId: string, totalIfMissing: number, change: SaleControl, recordedBuckets = 1): Promise<ControlOutcome> =>
    this.sale.administration.control(voucherId, totalIfMissing, change, recordedBuckets);
  freeze = (sale: SaleWindow, token: string, freezeMs: number): Promise<void> => this.sale.administration.freeze(sale, token, freezeMs);
  thaw = (voucherId: string, token: string): Promise<boolean> => this.sale.administration.thaw(voucherId, token);
  repair = (sale: SaleWindow, token: string, record: SaleRecord): Promise<number> => this.sale.administration.repair(sale, token, record);
  snapshot = (voucherId: string): Promise<SaleSnapshot> => this.sale.snapshots.snapshot(voucherId);
  bucketSnapshot = (voucherId: string, bucket: BucketRef, releaseIds: readonly string[] = []): Promise<BucketSnapshot> =>
    this.sale.snapshots.bucketSnapshot(voucherId, bucket, releaseIds);
  freezeBuckets = (sale: SaleWindow, buckets: number, token: string, freezeMs: number): Promise<void> =>
    this.sale.administration.freezeBuckets(sale, buckets, token, freezeMs);
  thawBuckets = (voucherId: string, buckets: number, token: string): Promise<void> => this.sale.administration.thawBuckets(voucherId, buckets, token);
  repairBucket = (repair: BucketRepair): Promise<number> => this.sale.administration.repairBucket(repair);
  isBuyer = (voucherId: string, userId: string): Promise<boolean> => this.sale.reads.isBuyer(voucherId, userId);
  releasedOrders = (voucherId: string, orderIds: string[], bucket?: BucketRef): Promise<Set<string>> =>
    this.sale.snapshots.releasedOrders(voucherId, orderIds, bucket);
  close = (): Promise<void> => this.sale.close();
}
