import type { Db } from '../../../infra/db.js';
import { OrderRepository, type PersistOutcome } from '../record/order-repository.js';
import type { NewOrder } from '../types.js';

/**
 * Where orders just written wait for the end of their payment window: the Redis release queue
 * (unpaid-queue.ts) or, with SECKILL_QUEUE=rabbitmq, RabbitMQ's delay queue (broker/unpaid-delays.ts).
 */
export interface DueSchedule {
  schedule(orders: readonly NewOrder[]): Promise<void>;
}

/**
 * The order repository that schedules every order it creates for its cancellation: the worker's
 * batches (async strategy), the RabbitMQ writers' and the sync strategy's own writes all go through
 * `persistAllNew` or `persist`. A failed schedule never fails the write (the order is in MySQL):
 * the canceller's periodic sweep cancels such an order instead, only later.
 */
export class DueTrackedOrders extends OrderRepository {
  constructor(
    db: Db,
    private readonly due: DueSchedule,
    private readonly onScheduleError: (error: unknown) => void,
  ) {
    super(db);
  }

  override async persist(order: NewOrder): Promise<PersistOutcome> {
    const outcome = await super.persist(order);
    if (outcome === 'created') await this.due.schedule([order]).catch(this.onScheduleError);
    return outcome;
  }

  override async persistAllNew(orders: readonly NewOrder[]): Promise<void> {
    await super.persistAllNew(orders);
    await this.due.schedule(orders).catch(this.onScheduleError);
  }
}
