import { HttpError, notFound } from '../../http/errors.js';
import { isTransient, unavailableDependency } from '../../infra/transient-errors.js';
import { LockTimeoutError } from '../../lib/lock/index.js';
import { ORDER_ID_PREFIX, userOrderLock } from './keys.js';
import type { OrderStream } from './order-stream.js';
import type { SoldOutMemory } from './sold-out.js';
import type { SaleStore } from './sale-store.js';
import type { QueuedOrder, ReserveOutcome } from './types.js';
import type { VoucherRepository } from './voucher-repository.js';
import { OrderStatus, OutOfStockInDatabase, type OrderRepository, type OrderRow, type UserOrderRow } from './order-repository.js';

/** Source of global unique order ids (src/lib/id). */
export interface OrderIds {
  nextId(prefix: string): Promise<bigint>;
}

/** Runs `fn` holding a distributed lock (src/lib/lock); used by the sync strategy only. */
export interface Locks {
  withLock<T>(name: string, fn: () => Promise<T>, options?: { waitMs?: number }): Promise<T>;
}

/** How long a request of the sync strategy waits for the same user's earlier request. */
const USER_LOCK_WAIT_MS = 5_000;

export type OrderState = 'queued' | 'created' | 'paid' | 'used' | 'cancelled' | 'refunding' | 'refunded';

export interface OrderView {
  id: string;
  voucherId: string;
  state: OrderState;
  createTime?: string;
  payTime?: string;
}

/** One line of the caller's order list (GET /voucher-order/of/me). */
export interface OrderListItem {
  id: string;
  voucherId: string;
  /** The voucher's title and shop, so a list needs no request per order. */
  title: string;
  shopId: string;
  state: OrderState;
  /** fen (1/100 yuan), as the voucher list reports it. */
  payValue: number;
  createTime: string;
  payTime?: string;
}

/** Orders per page of GET /voucher-order/of/me (hmdp's page size for lists). */
export const ORDERS_PER_PAGE = 10;

/** A refusal the user can read; answered with HTTP 200 and success: false, as hmdp does. */
export class SaleRefused extends HttpError {
  readonly outcome: 'not-started' | 'ended' | 'sold-out' | 'already-bought' | 'busy' | 'paused' | 'suspended';

  constructor(outcome: SaleRefused['outcome'], message: string) {
    // A refusal is an answer, not a fault, and most requests of a flash sale get one ("sold
    // out"): skip the stack trace, the costliest part of making an Error (2 % of the server's
    // CPU in the seckill benchmark's profile).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(200, message);
    Error.stackTraceLimit = limit;
    this.outcome = outcome;
  }
}

/**
 * The reserve script was sent and no answer came (Redis stalled, timed out or dropped the
 * connection): the order may have been accepted. Never answered as a refusal: 503, with the order
 * id it would have and where to look it up.
 */
export class OutcomeUnknown extends HttpError {
  readonly outcome = 'unknown';

  constructor(orderId: string, voucherId: string, cause: unknown) {
    super(
      503,
      `The outcome of this order is unknown (${unavailableDependency(cause)?.dependency ?? 'a dependency'} did not answer): it may have been placed as order ${orderId}. ` +
        `Check GET /api/voucher-order/${orderId} or GET /api/voucher-order/of/me/voucher/${voucherId} before ordering again`,
      { 'retry-after': '1' },
    );
    this.cause = cause;
  }
}

/** What the request deadline answers on the order route, whose reserve may have run by then. */
export const ORDER_DEADLINE_MESSAGE =
  'The outcome of this order is unknown (no answer in time): check GET /api/voucher-order/of/me/voucher/{voucherId} before ordering again';

export const REFUSALS = {
  notStarted: 'The sale has not started yet',
  ended: 'The sale has ended',
  soldOut: 'Sold out',
  alreadyBought: 'You already have an order for this voucher',
  busy: 'Your previous order request is still being processed',
  paused: 'Sale is being checked, please retry',
  suspended: 'The sale is paused by the organiser, please retry later',
  unknownVoucher: (id: string) => `Voucher ${id} is not a seckill voucher`,
} as const;

const STATE_BY_STATUS: Record<number, OrderState> = {
  [OrderStatus.unpaid]: 'created',
  [OrderStatus.paid]: 'paid',
  [OrderStatus.used]: 'used',
  [OrderStatus.cancelled]: 'cancelled',
  [OrderStatus.refunding]: 'refunding',
  [OrderStatus.refunded]: 'refunded',
};

export interface OrderServiceDeps {
  strategy: 'async' | 'sync';
  ids: OrderIds;
  store: SaleStore;
  stream: OrderStream;
  orders: OrderRepository;
  vouchers: VoucherRepository;
  locks?: Locks;
  /** Vouchers this instance knows are sold out (answered from memory). */
  soldOut?: SoldOutMemory;
  /** Counts outcomes (seckill_requests_total). */
  countOutcome?: (strategy: string, outcome: string) => void;
}

export class OrderService {
  constructor(private readonly deps: OrderServiceDeps) {}

  /**
   * Refuses an order of a voucher this instance knows is sold out, from memory: called first, so
   * no Redis command (not even a rate limit) and no order id is spent on it.
   */
  refuseIfKnownSoldOut(voucherId: string): void {
    if (!this.deps.soldOut?.known(voucherId)) return;
    this.deps.countOutcome?.(this.deps.strategy, 'sold-out-known');
    throw new SaleRefused('sold-out', REFUSALS.soldOut);
  }

  /** Places a seckill order; returns its id (as a decimal string). */
  async placeSeckillOrder(userId: string, voucherId: string): Promise<string> {
    const { strategy, countOutcome } = this.deps;
    try {
      const orderId = strategy === 'async' ? await this.placeAsync(userId, voucherId) : await this.placeSync(userId, voucherId);
      countOutcome?.(strategy, 'accepted');
      return orderId;
    } catch (error) {
      countOutcome?.(strategy, outcomeOf(error));
      // Best effort: a failed read only means the next refusal asks Redis again.
      if (error instanceof SaleRefused && error.outcome === 'sold-out') this.deps.soldOut?.remember(voucherId).catch(() => undefined);
      throw error;
    }
  }

  /**
   * The Redis path: one Lua script decides and queues the order; MySQL is written by the worker.
   * The answer is immediate; the client polls GET /voucher-order/{id} for `created`.
   */
  private async placeAsync(userId: string, voucherId: string): Promise<string> {
    const orderId = String(await this.deps.ids.nextId(ORDER_ID_PREFIX));
    const order = { orderId, userId, voucherId };
    let outcome = await this.reserve(order);
    if (outcome === 'unknown-voucher') outcome = await this.publishFromDatabase(order);
    throwIfRefused(outcome, voucherId);
    return orderId;
  }

  /**
   * A voucher Redis does not know: created while Redis was away, lost by Redis, or a sale long
   * over whose keys expired. Published from MySQL (not when over: its answer is known), then retried.
   */
  private async publishFromDatabase(order: QueuedOrder, reserve = (again: QueuedOrder) => this.reserve(again)): Promise<ReserveOutcome> {
    const seckill = await this.deps.vouchers.findSeckill(order.voucherId);
    if (!seckill) return 'unknown-voucher';
    if (Date.now() >= seckill.end_time.getTime()) return 'ended';
    await this.deps.store.publish({
      voucherId: order.voucherId,
      stock: seckill.stock,
      begin: seckill.begin_time,
      end: seckill.end_time,
      total: seckill.total_stock,
      suspended: seckill.paused === 1,
    });
    return reserve(order);
  }

  /** reserve.lua; any failure after it may have been sent means the outcome is unknown, never "refused". */
  private async reserve(order: QueuedOrder): Promise<ReserveOutcome> {
    try {
      return await this.deps.store.reserve(order);
    } catch (error) {
      throw new OutcomeUnknown(order.orderId, order.voucherId, error);
    }
  }

  /** The sync strategy's hold (the same script, not streamed); likewise never "refused" on a failure. */
  private async hold(order: QueuedOrder): Promise<ReserveOutcome> {
    try {
      return await this.deps.store.hold(order);
    } catch (error) {
      throw new OutcomeUnknown(order.orderId, order.voucherId, error);
    }
  }

  /**
   * hmdp's synchronous version, kept in step with Redis: under hmdp's per-user lock, the order is
   * decided by the same Redis script as the async strategy (window, stock, one per user; held,
   * not streamed), then written in one MySQL transaction before the answer. Instances on either
   * strategy therefore share one stock and one buyer set: switching strategy mid-sale, or running
   * both, can neither oversell nor accept an order that is later dropped.
   */
  private async placeSync(userId: string, voucherId: string): Promise<string> {
    const locks = this.deps.locks;
    if (!locks) throw new Error('the sync strategy needs a lock service');
    const orderId = String(await this.deps.ids.nextId(ORDER_ID_PREFIX));
    const order = { orderId, userId, voucherId };
    // Key lock:{order:<userId>} (hmdp's lock:order:<userId>, hash-tagged by the lock module).
    // Bounded wait: a user's requests queue behind each other, never forever.
    let held = false;
    const place = async (): Promise<ReserveOutcome> => {
      let outcome = await this.hold(order);
      if (outcome === 'unknown-voucher') outcome = await this.publishFromDatabase(order, (again) => this.hold(again));
      if (outcome !== 'accepted') return outcome;
      held = true;
      return this.writeHeld(order);
    };
    try {
      throwIfRefused(await locks.withLock(userOrderLock(userId), place, { waitMs: USER_LOCK_WAIT_MS }), voucherId);
    } catch (error) {
      if (error instanceof LockTimeoutError) throw new SaleRefused('busy', REFUSALS.busy);
      // Held in Redis, then MySQL and Redis stopped answering (or the lock's release did): the
      // order may be written, or streamed later by the worker's sweep; never answered as failed.
      if (held && isTransient(error)) throw new OutcomeUnknown(orderId, voucherId, error);
      throw error;
    }
    return orderId;
  }

  /**
   * Writes an order reserved with `hold` to MySQL. Refused by MySQL (Redis had drifted from it) or
   * failed for a reason of its own (rolled back): the unit and buyer mark go back and the answer is
   * the refusal or the error. MySQL unreachable or busy, so the outcome may be unknown (the commit
   * may have landed): the order is handed to the worker through the stream, whose write is
   * idempotent, and answered as accepted (state `queued` until written); never dropped.
   */
  private async writeHeld(order: QueuedOrder): Promise<ReserveOutcome> {
    let written: Awaited<ReturnType<OrderRepository['persist']>>;
    try {
      written = await this.deps.orders.persist(order);
    } catch (error) {
      if (error instanceof OutOfStockInDatabase) {
        await this.deps.store.release(order);
        return 'sold-out';
      }
      if (!isTransient(error)) {
        await this.deps.store.release(order);
        throw error;
      }
      try {
        await this.deps.store.handOff(order);
      } catch {
        throw error; // Redis too: the held order is streamed later by the worker's sweep (hand-off.lua "older")
      }
      return 'accepted';
    }
    if (written === 'user-has-order') {
      await this.deps.store.release(order);
      return 'already-bought';
    }
    // Best effort: an order left held is streamed by the worker's sweep and found written.
    await this.deps.store.settle(order).catch(() => undefined);
    return 'accepted';
  }

  async getOrder(userId: string, orderId: string): Promise<OrderView> {
    const row = await this.deps.orders.findForUser(orderId, userId);
    if (row) return toView(row);
    const queued = await this.deps.stream.findQueued(orderId);
    if (queued && queued.userId === userId) return { id: orderId, voucherId: queued.voucherId, state: 'queued' };
    throw notFound(`Order ${orderId} not found`);
  }

  /**
   * The user's order of one voucher, wherever it is: MySQL, else Redis's buyer mark (accepted, the
   * worker has not written it yet). For a client told "outcome unknown" that lost the order id.
   */
  async findForVoucher(userId: string, voucherId: string): Promise<OrderView | { voucherId: string; state: 'queued' }> {
    const row = await this.deps.orders.findLatestForUserAndVoucher(userId, voucherId);
    if (row) return toView(row);
    if (await this.deps.store.isBuyer(voucherId, userId)) return { voucherId, state: 'queued' };
    throw notFound(`You have no order for voucher ${voucherId}`);
  }

  /**
   * The user's orders in MySQL, newest first, and how many there are. An order still queued in
   * Redis (accepted, not yet written by the worker, usually for milliseconds) is not listed: the
   * queued hashes are keyed by order id, so finding one user's entries would mean scanning every
   * shard's hash, whose size during a sale is the whole backlog. GET /voucher-order/{id} reports it.
   */
  async listForUser(userId: string, current: number): Promise<{ list: OrderListItem[]; total: number }> {
    const [rows, total] = await Promise.all([
      this.deps.orders.listForUser(userId, (current - 1) * ORDERS_PER_PAGE, ORDERS_PER_PAGE),
      this.deps.orders.countForUser(userId),
    ]);
    return { list: rows.map(toListItem), total };
  }

  /** Simulated payment. Paying a paid order again is fine; a queued or cancelled one is not. */
  async pay(userId: string, orderId: string): Promise<OrderView> {
    if (await this.deps.orders.pay(orderId, userId)) return this.getOrder(userId, orderId);
    const order = await this.getOrder(userId, orderId);
    if (order.state === 'paid') return order;
    if (order.state === 'queued') throw new HttpError(409, 'The order is still being processed; try again in a moment');
    throw new HttpError(409, `The order is ${order.state} and cannot be paid`);
  }
}

/** Throws the refusal the user reads for every outcome but `accepted`. */
function throwIfRefused(outcome: ReserveOutcome, voucherId: string): void {
  switch (outcome) {
    case 'accepted':
      return;
    case 'not-started':
      throw new SaleRefused('not-started', REFUSALS.notStarted);
    case 'ended':
      throw new SaleRefused('ended', REFUSALS.ended);
    case 'sold-out':
      throw new SaleRefused('sold-out', REFUSALS.soldOut);
    case 'already-bought':
      throw new SaleRefused('already-bought', REFUSALS.alreadyBought);
    case 'unknown-voucher':
      throw notFound(REFUSALS.unknownVoucher(voucherId));
    // A reconciliation repair holds the voucher for a moment (npm run reconcile -- --repair).
    case 'paused':
      throw new SaleRefused('paused', REFUSALS.paused);
    case 'suspended':
      throw new SaleRefused('suspended', REFUSALS.suspended);
  }
}

function outcomeOf(error: unknown): string {
  if (error instanceof SaleRefused || error instanceof OutcomeUnknown) return error.outcome;
  if (error instanceof HttpError && error.statusCode === 404) return 'unknown-voucher';
  return 'error';
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
