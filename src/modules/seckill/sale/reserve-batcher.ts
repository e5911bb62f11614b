import type { ReserveResult } from '../types.js';
import type { ReserveRequest } from './sale-scripts.js';

/** Decides a batch of one shard's orders: one result per order, in order; rejects when the batch's outcome is unknown. */
export type DecideBatch = (batch: ReserveRequest[]) => Promise<ReserveResult[]>;

export interface ReserveBatcherOptions {
  /** The stream (shard or bucket lane) a request's keys live in: one call out per lane. */
  laneOf: (request: ReserveRequest) => number;
  decide: DecideBatch;
  /** Most orders per call (SECKILL_RESERVE_BATCH_MAX). */
  maxBatch: number;
  /** Each batch's size as it goes out (seckill_reserve_batch_size). */
  onBatch?: (size: number) => void;
}

interface Waiting {
  request: ReserveRequest;
  resolve: (result: ReserveResult) => void;
  reject: (error: unknown) => void;
}

/** One shard's orders: those waiting, and whether a call of the shard is out. */
interface Lane {
  waiting: Waiting[];
  busy: boolean;
}

/**
 * Smart batching (LMAX's), per shard and without a timer: an order goes out at once when no call
 * of its shard is out; the orders that arrive meanwhile wait and go together in the next call, as
 * soon as that one answers. At low load a batch is one order that waits for nothing; under load a
 * batch holds what arrived during one round trip (up to `maxBatch`), so the calls per order fall
 * as the load rises. One call out per shard also keeps the shard's orders in arrival order.
 */
export class ReserveBatcher {
  private readonly lanes = new Map<number, Lane>();

  constructor(private readonly options: ReserveBatcherOptions) {}

  reserve(request: ReserveRequest): Promise<ReserveResult> {
    const shard = this.options.laneOf(request);
    let lane = this.lanes.get(shard);
    if (!lane) {
      lane = { waiting: [], busy: false };
      this.lanes.set(shard, lane);
    }
    const promise = new Promise<ReserveResult>((resolve, reject) => lane.waiting.push({ request, resolve, reject }));
    if (!lane.busy) void this.drain(lane);
    return promise;
  }

  /** Sends the lane's orders, a batch at a time, until none waits. */
  private async drain(lane: Lane): Promise<void> {
    lane.busy = true;
    while (lane.waiting.length > 0) await this.send(lane.waiting.splice(0, this.options.maxBatch));
    lane.busy = false;
  }

  /** One call: each order answered with its own result, or every order with the call's failure. */
  private async send(batch: Waiting[]): Promise<void> {
    let results: ReserveResult[];
    try {
      // Inside the try: whatever throws answers this batch's orders, and the lane carries on.
      this.options.onBatch?.(batch.length);
      results = await this.options.decide(batch.map(({ request }) => request));
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
      return;
    }
    batch.forEach((waiting, index) => {
      const result = results[index];
      if (result) waiting.resolve(result);
      else waiting.reject(new Error(`reserve.lua answered ${results.length} of ${batch.length} orders`));
    });
  }
}
