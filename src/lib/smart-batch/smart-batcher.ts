/** Decides a batch of one lane's items: one result per item, in order; rejects when the batch's outcome is unknown. */
export type DecideBatch<Item, Result> = (batch: Item[]) => Promise<Result[]>;

export interface SmartBatcherOptions<Item, Result> {
  /** The lane an item goes out in (a shard, a Cluster slot): one call out per lane at a time. */
  laneOf: (item: Item) => number | string;
  decide: DecideBatch<Item, Result>;
  /** Most items per call. */
  maxBatch: number;
  /** Each batch's size as it goes out (metrics). */
  onBatch?: (size: number) => void;
}

interface Waiting<Item, Result> {
  item: Item;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

/** One lane's items: those waiting, and whether a call of the lane is out. */
interface Lane<Item, Result> {
  waiting: Array<Waiting<Item, Result>>;
  busy: boolean;
}

/**
 * Smart batching (LMAX's), per lane and without a timer: an item goes out at once when no call of
 * its lane is out; the items that arrive meanwhile wait and go together in the next call, as soon
 * as that one answers. At low load a batch is one item that waits for nothing; under load a batch
 * holds what arrived during one round trip (up to `maxBatch`), so the calls per item fall as the
 * load rises. One call out per lane also keeps the lane's items in arrival order.
 */
export class SmartBatcher<Item, Result> {
  private readonly lanes = new Map<number | string, Lane<Item, Result>>();

  constructor(private readonly options: SmartBatcherOptions<Item, Result>) {
    if (!Number.isInteger(options.maxBatch) || options.maxBatch < 1) throw new RangeError('maxBatch must be a whole number ≥ 1');
  }

  /** The item's own result, once the call carrying it answers. */
  submit(item: Item): Promise<Result> {
    const id = this.options.laneOf(item);
    let lane = this.lanes.get(id);
    if (!lane) {
      lane = { waiting: [], busy: false };
      this.lanes.set(id, lane);
    }
    const promise = new Promise<Result>((resolve, reject) => lane.waiting.push({ item, resolve, reject }));
    if (!lane.busy) void this.drain(id, lane);
    return promise;
  }

  /** Sends the lane's items, a batch at a time, until none waits; an idle lane is dropped (lanes may be many, e.g. slots). */
  private async drain(id: number | string, lane: Lane<Item, Result>): Promise<void> {
    lane.busy = true;
    while (lane.waiting.length > 0) await this.send(lane.waiting.splice(0, this.options.maxBatch));
    lane.busy = false;
    this.lanes.delete(id);
  }

  /** One call: each item answered with its own result, or every item with the call's failure. */
  private async send(batch: Array<Waiting<Item, Result>>): Promise<void> {
    let results: Result[];
    try {
      // Inside the try: whatever throws answers this batch's items, and the lane carries on.
      this.options.onBatch?.(batch.length);
      results = await this.options.decide(batch.map(({ item }) => item));
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
      return;
    }
    batch.forEach((waiting, index) => {
      if (index < results.length) waiting.resolve(results[index]!);
      else waiting.reject(new Error(`a batch of ${batch.length} was answered with ${results.length} results`));
    });
  }
}
