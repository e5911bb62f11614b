import type { Db } from '../../../infra/db.js';
import { OrderRepository, type PersistOutcome } from '../record/order-repository.js';
import type { NewOrder } from '../types.js';
import type { UnpaidQueue } from './unpaid-queue.js';

/**
 * The order repository that schedules every order it creates in the release queue: the worker's
 * batches (async strategy) and the sync strategy's own writes both go through `persistAllNew` or
 * `persist`. A failed schedule never fails the write (the order is in MySQL): the canceller's
 * periodic sweep cancels such an order instead, only later.
 */
export class DueTrackedOrders extends OrderRepository {
  constructor(
    db: Db,
    private readonly queue: UnpaidQueue,
    private readonly onScheduleError: (error: unknown) => void,
  ) {
    super(db);
  }

  override async persist(order: NewOrder): Promise<PersistOutcome> {
    const outcome = await super.persist(order);
    if (outcome === 'created') await this.queue.schedule([order]).catch(this.onScheduleError);
    return outcome;
  }

  override async persistAllNew(orders: readonly NewOrder[]): Promise<void> {
    await super.persistAllNew(orders);
    await this.queue.schedule(orders).catch(this.onScheduleError);
  }
}
