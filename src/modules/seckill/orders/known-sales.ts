import { setTimeout as sleep } from 'node:timers/promises';
import { UnknownVoucher } from '../errors/index.js';

/** Shortest time between two reads of every sale's id: at most this many a second per instance under any flood of unknown ids. */
export const KNOWN_SALES_RELOAD_MS = 250;
/** Most sales held; with more in MySQL, an id not held is let through to the per-id lookups (as without this memory). */
export const MAX_KNOWN_SALES = 200_000;

/**
 * The ids of every seckill voucher, in memory: an order for an id that is no sale is refused here,
 * after the limits and before the purchase gate's and the sale's per-id MySQL lookups, so unknown
 * ids cost no query each. An id not held waits for a read of every id that begins after it was
 * asked (one read shared by all the ids waiting, at most one per KNOWN_SALES_RELOAD_MS), so a sale
 * created a moment ago on any instance is found, and an id refused is absent from a read newer
 * than its request. A failed read refuses nothing: the order goes on to the per-id lookups.
 */
export class KnownSales {
  private ids = new Set<string>();
  private complete = false;
  private lastReadAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<boolean> | undefined;
  /** The read not begun yet, which every id asked from now on waits for. */
  private nextRead: Promise<boolean> | undefined;

  constructor(
    private readonly loadIds: (limit: number) => Promise<string[]>,
    private readonly reloadMs = KNOWN_SALES_RELOAD_MS,
  ) {}

  /** 404 for an id that is no seckill voucher. */
  async refuseIfUnknown(voucherId: string): Promise<void> {
    if (!(await this.mayExist(voucherId))) throw new UnknownVoucher(voucherId);
  }

  private async mayExist(voucherId: string): Promise<boolean> {
    if (this.ids.has(voucherId)) return true;
    const read = await (this.nextRead ??= this.readAfterWait());
    return !read || !this.complete || this.ids.has(voucherId);
  }

  private async readAfterWait(): Promise<boolean> {
    await this.reading;
    const wait = this.lastReadAt + this.reloadMs - Date.now();
    if (wait > 0) await sleep(wait);
    // From here on, a new id waits for the read after this one (this one may have begun before it was asked).
    this.nextRead = undefined;
    this.lastReadAt = Date.now();
    this.reading = this.readAll();
    return this.reading;
  }

  private async readAll(): Promise<boolean> {
    try {
      const ids = await this.loadIds(MAX_KNOWN_SALES + 1);
      this.complete = ids.length <= MAX_KNOWN_SALES;
      this.ids = new Set(ids);
      return true;
    } catch {
      return false;
    }
  }
}
