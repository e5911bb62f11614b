/**
 * Group commit of the order worker's MySQL writes. Each shard's loop reads its own batch; the
 * batches that are ready together go to MySQL in one transaction. A write goes out at once when
 * none is in flight; batches that arrive meanwhile wait and go together in the next one (up to
 * `maxItems`, a batch never split). No timer: at low load a batch waits for nothing, and under
 * load a transaction carries what the shards read while the previous one committed.
 *
 * A group that fails for a reason of its own items (not transient: a redelivered order, a voucher
 * short of stock in MySQL) is written again batch by batch, so that one shard's redelivery does
 * not send the other shards' batches down the one-order-at-a-time path. A transient failure (MySQL
 * down or stalled, the circuit open) fails every batch of the group at once: trying them one by
 * one would only multiply the attempts on a MySQL that is not answering.
 */
export class GroupCommit<T> {
  private writing = false;
  private readonly queue: Array<Batch<T>> = [];

  constructor(
    /** Writes the items in one transaction, all or nothing. */
    private readonly write: (items: readonly T[]) => Promise<void>,
    private readonly options: { maxItems: number; isTransient: (error: unknown) => boolean },
  ) {}

  /** Resolves once the items are committed (alone or with other batches); rejects with the error of their write. */
  submit(items: readonly T[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ items, resolve, reject });
      if (!this.writing) void this.writeAll();
    });
  }

  /** Batches waiting for the write in flight to finish. */
  get waiting(): number {
    return this.queue.length;
  }

  private async writeAll(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length > 0) await this.writeGroup(this.takeGroup());
    } finally {
      this.writing = false;
    }
  }

  /** The oldest batch and those after it that fit in `maxItems` with it, in arrival order. */
  private takeGroup(): Array<Batch<T>> {
    const group = [this.queue.shift()!];
    let size = group[0]!.items.length;
    while (this.queue.length > 0 && size + this.queue[0]!.items.length <= this.options.maxItems) {
      const next = this.queue.shift()!;
      size += next.items.length;
      group.push(next);
    }
    return group;
  }

  private async writeGroup(group: Array<Batch<T>>): Promise<void> {
    try {
      await this.write(group.length === 1 ? group[0]!.items : group.flatMap((batch) => batch.items));
      for (const batch of group) batch.resolve();
    } catch (error) {
      if (group.length === 1 || this.options.isTransient(error)) {
        for (const batch of group) batch.reject(error);
        return;
      }
      for (const batch of group) await this.write(batch.items).then(batch.resolve, batch.reject);
    }
  }
}

interface Batch<T> {
  items: readonly T[];
  resolve: () => void;
  reject: (error: unknown) => void;
}
