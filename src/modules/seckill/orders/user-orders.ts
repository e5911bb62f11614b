import { Conflict, NotFound } from '../errors/index.js';
import type { OrderEvents } from '../events/order-events.js';
import { SECKILL_MESSAGES } from '../messages.js';
import { OrderStatus, type OrderRepository } from '../record/order-repository.js';
import type { SaleReads } from '../sale/sale-reads.js';
import type { OrderRow, OrderState, UserOrderRow, UserQueuedOrder } from '../types.js';
import type { OrderListItem, OrderView } from '../order-views.js';

/** Orders per page of GET /voucher-order/of/me (hmdp's page size for lists). */
export const ORDERS_PER_PAGE = 10;

const STATE_BY_STATUS: Record<number, OrderState> = {
  [OrderStatus.unpaid]: 'created',
  [OrderStatus.paid]: 'paid',
  [OrderStatus.used]: 'used',
  [OrderStatus.cancelled]: 'cancelled',
  [OrderStatus.refunding]: 'refunding',
  [OrderStatus.refunded]: 'refunded',
};

export interface UserOrdersDeps {
  reads: SaleReads;
  orders: OrderRepository;
  /** Told of each paid order (order-events.ts). */
  events?: OrderEvents;
}

/**
 * A user's orders as the API shows them: written ones from MySQL, accepted and not yet written
 * ones (`queued`) from the user's own lists in Redis; and paying them.
 */
export class UserOrders {
  constructor(private readonly deps: UserOrdersDeps) {}

  /** One of the user's orders: MySQL, else the user's orders accepted in Redis and not yet written (`queued`). */
  async get(userId: string, orderId: string): Promise<OrderView> {
    const row = await this.deps.orders.findForUser(orderId, userId);
    if (row) return toView(row);
    const queued = (await this.deps.reads.queuedOfUser(userId)).find((order) => order.orderId === orderId);
    if (queued) return queuedView(queued);
    // Written between the two reads (the worker's commit comes before its Redis cleanup).
    const written = await this.deps.orders.findForUser(orderId, userId);
    if (written) return toView(written);
    throw new NotFound(SECKILL_MESSAGES.orderNotFound({ orderId }));
  }

  /**
   * The user's newest order of one voucher, wherever it is: queued in Redis (accepted, the worker
   * has not written it yet), else MySQL, else Redis's slot mark without its id (an order accepted
   * before the user lists existed). For a client told "outcome unknown" that lost the order id.
   */
  async findForVoucher(userId: string, voucherId: string): Promise<OrderView | { voucherId: string; state: 'queued' }> {
    const queued = (await this.deps.reads.queuedOfUser(userId)).find((order) => order.voucherId === voucherId);
    if (queued) return queuedView(queued);
    const row = await this.deps.orders.findLatestForUserAndVoucher(userId, voucherId);
    if (row) return toView(row);
    if (await this.deps.reads.isBuyer(voucherId, userId)) return { voucherId, state: 'queued' };
    throw new NotFound(SECKILL_MESSAGES.noOrderForVoucher({ voucherId }));
  }

  /**
   * The user's orders, newest first, and how many there are. Orders accepted in Redis and not yet
   * written by the worker (state `queued`) come first on page 1: read from the user's own list on
   * each shard (one keyed script per shard, never a scan of the shards' queued hashes), minus those
   * MySQL already has (written since: listed once, from MySQL).
   */
  async list(userId: string, current: number): Promise<{ list: OrderListItem[]; total: number }> {
    const [queuedAll, rows, count] = await Promise.all([
      this.deps.reads.queuedOfUser(userId),
      this.deps.orders.listForUser(userId, (current - 1) * ORDERS_PER_PAGE, ORDERS_PER_PAGE),
      this.deps.orders.countForUser(userId),
    ]);
    const written = await this.deps.orders.existing(queuedAll.map((order) => order.orderId));
    const queued = queuedAll.filter((order) => !written.has(order.orderId));
    const total = count + queued.length;
    if (current !== 1 || queued.length === 0) return { list: rows.map(toListItem), total };
    const vouchers = await this.deps.orders.voucherSummaries([...new Set(queued.map((order) => order.voucherId))]);
    const queuedItems = queued.map((order): OrderListItem => {
      const voucher = vouchers.get(order.voucherId);
      return {
        id: order.orderId,
        voucherId: order.voucherId,
        title: voucher?.title ?? '',
        shopId: voucher?.shop_id ?? '',
        state: 'queued',
        payValue: Number(voucher?.pay_value ?? 0),
        createTime: order.reservedAt.toISOString(),
      };
    });
    const queuedIds = new Set(queued.map((order) => order.orderId));
    return { list: [...queuedItems, ...rows.filter((row) => !queuedIds.has(row.id)).map(toListItem)], total };
  }

  /** Simulated payment. Paying a paid order again is fine; a queued or cancelled one is not. */
  async pay(userId: string, orderId: string): Promise<OrderView> {
    if (await this.deps.orders.pay(orderId, userId)) {
      const paid = await this.get(userId, orderId);
      this.deps.events?.changed([{ orderId, userId, voucherId: paid.voucherId, state: 'paid' }]);
      return paid;
    }
    const order = await this.get(userId, orderId);
    if (order.state === 'paid') return order;
    if (order.state === 'queued') throw new Conflict(SECKILL_MESSAGES.orderProcessing());
    throw new Conflict(SECKILL_MESSAGES.orderNotPayable({ state: order.state }));
  }
}

function toListItem(row: UserOrderRow): OrderListItem {
  const item: OrderListItem = {
    id: row.id,
    voucherId: row.voucher_id,
    title: row.title,
    shopId: row.shop_id,
    state: STATE_BY_STATUS[row.status] ?? 'created',
    payValue: Number(row.pay_value),
    createTime: row.create_time.toISOString(),
  };
  if (row.pay_time) item.payTime = row.pay_time.toISOString();
  return item;
}

function queuedView(order: UserQueuedOrder): OrderView {
  return { id: order.orderId, voucherId: order.voucherId, state: 'queued', createTime: order.reservedAt.toISOString() };
}

function toView(row: OrderRow): OrderView {
  const view: OrderView = {
    id: row.id,
    voucherId: row.voucher_id,
    state: STATE_BY_STATUS[row.status] ?? 'created',
    createTime: row.create_time.toISOString(),
  };
  if (row.pay_time) view.payTime = row.pay_time.toISOString();
  return view;
}
