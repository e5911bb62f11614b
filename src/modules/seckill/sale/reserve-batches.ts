import { SmartBatcher } from '../../../lib/smart-batch/index.js';
import type { BucketRef } from '../keys.js';
import type { OrderRequest, ReserveResult } from '../types.js';
import type { AcknowledgedReserve } from './acknowledged-reserve.js';
import type { SaleContext } from './sale-context.js';
import type { ReserveMode, ReserveRequest, SaleScripts } from './sale-scripts.js';

export interface ReserveBatchOptions {
  /**
   * Most orders one reserve.lua call decides (SECKILL_RESERVE_BATCH_MAX): each shard has one call
   * out at a time, and the orders arriving meanwhile go together in the next. 1 (the default for
   * a sale built without it): each order sent alone and at once, with no wait for another.
   */
  maxBatch?: number;
  /** Each batch's size as it goes out (seckill_reserve_batch_size); batches of 1 included. */
  onBatch?: (size: number) => void;
}

/** Sends one shard's batch to reserve.lua: with replica acknowledgement on, one WAIT after it when an order may go to the stream. */
type SendBatch = (batch: ReserveRequest[]) => Promise<ReserveResult[]>;

/**
 * reserve.lua for one order in the bucket it is routed to, in its shard's (or bucket lane's) next
 * batch: the last step of a decision, with no publish and no refill (the decider's and the
 * router's). Benches and tests call it straight to measure or set up reserve.lua alone.
 */
export class ReserveBatches {
  /** Set when batches of more than one order are allowed. */
  private readonly batcher: SmartBatcher<ReserveRequest, ReserveResult> | undefined;
  private readonly send: SendBatch;
  private readonly onBatch: ((size: number) => void) | undefined;

  constructor({ keys, scripts }: Pick<SaleContext, 'keys' | 'scripts'>, acknowledged: AcknowledgedReserve | undefined, options: ReserveBatchOptions) {
    this.send = batchSender(scripts, acknowledged);
    this.onBatch = options.onBatch;
    const maxBatch = options.maxBatch ?? 1;
    this.batcher =
      maxBatch > 1
        ? new SmartBatcher<ReserveRequest, ReserveResult>({
            laneOf: ({ order, bucket }) => (bucket ? keys.laneShard(bucket) : keys.shardOf(order.voucherId)),
            decide: this.send,
            maxBatch,
            onBatch: this.onBatch,
          })
        : undefined;
  }

  /**
   * On `accepted` the order is on its way to MySQL (and, with replica acknowledgement on, on as
   * many replicas as asked, or counted as a timeout). With batching on, the order goes in its
   * shard's next batch (at once when none is out); a failed call rejects every order of its batch.
   */
  async reserve(order: OrderRequest, mode: ReserveMode = 'stream', bucket?: BucketRef): Promise<ReserveResult> {
    const request: ReserveRequest = bucket ? { order, mode, bucket } : { order, mode };
    if (this.batcher) return this.batcher.submit(request);
    this.onBatch?.(1);
    const [result] = await this.send([request]);
    if (!result) throw new Error('reserve.lua answered no result for the order');
    return result;
  }
}

/** Batches with orders for the stream go through the replica acknowledgement's group commit when it is on; the rest straight to reserve.lua. */
function batchSender(scripts: SaleScripts, acknowledged: AcknowledgedReserve | undefined): SendBatch {
  return (batch) => {
    if (acknowledged && batch.some(({ mode }) => mode === 'stream')) return acknowledged.decide(batch);
    return scripts.reserve(batch);
  };
}
