import { HttpError, notFound } from '../../http/errors.js';
import { render, type Message } from '../../http/messages.js';
import { isTransient, unavailableDependency } from '../../infra/transient-errors.js';
import { LockTimeoutError } from '../../lib/lock/index.js';
import { ORDER_ID_PREFIX, userOrderLock } from './keys.js';
import { SECKILL_MESSAGES } from './messages.js';
import type { OrderEvents } from './order-events.js';
import type { OrderState } from './types.js';
import type { OrderStream } from './order-stream.js';
import type { SoldOutMemory } from './sold-out.js';
import type { SaleStore, UserQueuedOrder } from './sale-store.js';
import type { OrderRequest, QueuedOrder, ReserveResult } from './types.js';
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

export type { OrderState };

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

  constructor(outcome: SaleRefused['outcome'], message: Message) {
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
    const dependency = unavailableDependency(cause)?.dependency ?? 'a dependency';
    super(503, SECKILL_MESSAGES.outcomeUnknown({ dependency, orderId, voucherId }), { 'retry-after': '1' });
    this.cause = cause;
  }
}

/** What the request deadline answers on the order route, whose reserve may have run by then. */
export const orderDeadlineMessage = (voucherId: string): Message => SECKILL_MESSAGES.orderDeadline({ voucherId });

/** The refusals' English texts, as tests and the bench compare them (clients get their language's: messages.ts). */
export const REFUSALS = {
  notStarted: SECKILL_MESSAGES.notStarted.texts.en,
  ended: SECKILL_MESSAGES.ended.texts.en,
  soldOut: SECKILL_MESSAGES.soldOut.texts.en,
  alreadyBought: SECKILL_MESSAGES.alreadyBought.texts.en,
  /** A voucher whose limit per user is above 1 (1: alreadyBought, hmdp's message). */
  atLimit: (limit: number) => render(SECKILL_MESSAGES.atLimit({ limit }), 'en'),
  idempotencyKeyReused: (voucherId: string) => render(SECKILL_MESSAGES.idempotencyKeyReused({ voucherId }), 'en'),
  busy: SECKILL_MESSAGES.busy.texts.en,
  paused: SECKILL_MESSAGES.paused.texts.en,
  suspended: SECKILL_MESSAGES.suspended.texts.en,
  unknownVoucher: (id: string) => render(SECKILL_MESSAGES.unknownVoucher({ id }), 'en'),
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
  /** Told of each paid order (order-events.ts). */
  events?: OrderEvents;
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
    throw new SaleRefused('sold-out', SECKILL_MESSAGES.soldOut());
  }

  /**
   * Places a seckill order; returns its id (as a decimal string). With an Idempotency-Key, a
   * retry returns the order the key was first accepted as (never "already bought", never a second
   * order); the key is bound to this voucher first (422 when it was used for another one).
   */
  async placeSeckillOrder(userId: string, voucherId: string, idempotencyKey?: string): Promise<string> {
    const { strategy, countOutcome } = this.deps;
    try {
      if (idempotencyKey !== undefined) await this.bindKey(userId, idempotencyKey, voucherId);
      const request: OrderRequest = { orderId: String(await this.deps.ids.nextId(ORDER_ID_PREFIX)), userId, voucherId };
      if (idempotencyKey !== undefined) request.idempotencyKey = idempotencyKey;
      const placed = strategy === 'async' ? await this.placeAsync(request) : await this.placeSync(request);
      countOutcome?.(strategy, placed.replayed ? 'replayed' : 'accepted');
      // No event for the acceptance itself: no stream can wait for an order whose id this answer
      // first tells, and a stream sends the current state first (order-event-routes.ts).
      return placed.orderId;
    } catch (error) {
      countOutcome?.(strategy, outcomeOf(error));
      // Best effort: a failed read only means the next refusal asks Redis again.
      if (error instanceof SaleRefused && error.outcome === 'sold-out') this.deps.soldOut?.remember(voucherId).catch(() => undefined);
      throw error;
    }
  }

  private async bindKey(userId: string, key: string, voucherId: string): Promise<void> {
    const binding = await this.deps.store.bindIdempotencyKey(userId, key, voucherId);
    if (!binding.bound) throw new HttpError(422, SECKILL_MESSAGES.idempotencyKeyReused({ voucherId: binding.voucherId }));
  }

  /**
   * The Redis path: one Lua script decides and queues the order; MySQL is written by the worker.
   * The answer is immediate; the client polls GET /voucher-order/{id} for `created`.
   */
  private async placeAsync(order: OrderRequest): Promise<Placed> {
    let result = await this.reserve(order);
    if (result.outcome === 'unknown-voucher') result = await this.publishFromDatabase(order);
    return placedOrRefused(result, order);
  }

  /**
   * A voucher Redis does not know: created while Redis was away, lost by Redis, or a sale long
   * over whose keys expired. Published from MySQL (not when over: its answer is known), then retried.
   */
  private async publishFromDatabase(order: OrderRequest, reserve = (again: OrderRequest) => this.reserve(again)): Promise<ReserveResult> {
    const seckill = await this.deps.vouchers.findSeckill(order.voucherId);
    if (!seckill) return { outcome: 'unknown-voucher' };
    if (Date.now() >= seckill.end_time.getTime()) return { outcome: 'ended' };
    await this.deps.store.publish({
      voucherId: order.voucherId,
      stock: seckill.stock,
      begin: seckill.begin_time,
      end: seckill.end_time,
      total: seckill.total_stock,
      suspended: seckill.paused === 1,
      limitPerUser: seckill.limit_per_user,
    });
    return reserve(order);
  }

  /** reserve.lua; any failure after it may have been sent means the outcome is unknown, never "refused". */
  private async reserve(order: OrderRequest): Promise<ReserveResult> {
    try {
      return await this.deps.store.reserve(order);
    } catch (error) {
      throw new OutcomeUnknown(order.orderId, order.voucherId, error);
    }
  }

  /** The sync strategy's hold (the same script, not streamed); likewise never "refused" on a failure. */
  private async hold(order: OrderRequest): Promise<ReserveResult> {
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
  private async placeSync(order: OrderRequest): Promise<Placed> {
    const locks = this.deps.locks;
    if (!locks) throw new Error('the sync strategy needs a lock service');
    const { orderId, userId, voucherId } = order;
    // Key lock:{order:<userId>} (hmdp's lock:order:<userId>, hash-tagged by the lock module).
    // Bounded wait: a user's requests queue behind each other, never forever.
    let held = false;
    const place = async (): Promise<ReserveResult> => {
      let result = await this.hold(order);
      if (result.outcome === 'unknown-voucher') result = await this.publishFromDatabase(order, (again) => this.hold(again));
      if (result.outcome !== 'accepted') return result;
      held = true;
      return this.writeHeld(order, { orderId, userId, voucherId, slot: result.slot });
    };
    try {
      return placedOrRefused(await locks.withLock(userOrderLock(userId), place, { waitMs: USER_LOCK_WAIT_MS }), order);
    } catch (error) {
      if (error instanceof LockTimeoutError) throw new SaleRefused('busy', SECKILL_MESSAGES.busy());
      // Held in Redis, then MySQL and Redis stopped answering (or the lock's release did): the
      // order may be written, or streamed later by the worker's sweep; never answered as failed.
      if (held && isTransient(error)) throw new OutcomeUnknown(orderId, voucherId, error);
      throw error;
    }
  }

  /**
   * Writes an order reserved with `hold` to MySQL. Refused by MySQL (Redis had drifted from it) or
   * failed for a reason of its own (rolled back): the unit and buyer mark go back and the answer is
   * the refusal or the error. MySQL unreachable or busy, so the outcome may be unknown (the commit
   * may have landed): the order is handed to the worker through the stream, whose write is
   * idempotent, and answered as accepted (state `queued` until written); never dropped.
   */
  private async writeHeld(request: OrderRequest, order: QueuedOrder): Promise<ReserveResult> {
    // Given back before the answer: the Idempotency-Key forgets it, so a retry decides afresh.
    const giveBack = async (): Promise<void> => {
      await this.deps.store.release(order);
      await this.deps.store.forgetIdempotencyKey(request);
    };
    let written: Awaited<ReturnType<OrderRepository['persist']>>;
    try {
      written = await this.deps.orders.persist(order);
    } catch (error) {
      if (error instanceof OutOfStockInDatabase) {
        await giveBack();
        return { outcome: 'sold-out' };
      }
      if (!isTransient(error)) {
        await giveBack();
        throw error;
      }
      try {
        await this.deps.store.handOff(order);
      } catch {
        throw error; // Redis too: the held order is streamed later by the worker's sweep (hand-off.lua "older")
      }
      return { outcome: 'accepted', slot: order.slot };
    }
    if (written === 'user-has-order') {
      await giveBack();
      return { outcome: 'already-bought', limit: 1 };
    }
    // Best effort: an order left held is streamed by the worker's sweep and found written.
    await this.deps.store.settle(order).catch(() => undefined);
    return { outcome: 'accepted', slot: order.slot };
  }

  /** One of the user's orders: MySQL, else the user's orders accepted in Redis and not yet written (`queued`). */
  async getOrder(userId: string, orderId: string): Promise<OrderView> {
    const row = await this.deps.orders.findForUser(orderId, userId);
    if (row) return toView(row);
    const queued = (await this.deps.store.queuedOfUser(userId)).find((order) => order.orderId === orderId);
    if (queued) return queuedView(queued);
    // Written between the two reads (the worker's commit comes before its Redis cleanup).
    const written = await this.deps.orders.findForUser(orderId, userId);
    if (written) return toView(written);
    throw notFound(SECKILL_MESSAGES.orderNotFound({ orderId }));
  }

  /**
   * The user's newest order of one voucher, wherever it is: queued in Redis (accepted, the worker
   * has not written it yet), else MySQL, else Redis's slot mark without its id (an order accepted
   * before the user lists existed). For a client told "outcome unknown" that lost the order id.
   */
  async findForVoucher(userId: string, voucherId: string): Promise<OrderView | { voucherId: string; state: 'queued' }> {
    const queued = (await this.deps.store.queuedOfUser(userId)).find((order) => order.voucherId === voucherId);
    if (queued) return queuedView(queued);
    const row = await this.deps.orders.findLatestForUserAndVoucher(userId, voucherId);
    if (row) return toView(row);
    if (await this.deps.store.isBuyer(voucherId, userId)) return { voucherId, state: 'queued' };
    throw notFound(SECKILL_MESSAGES.noOrderForVoucher({ voucherId }));
  }

  /**
   * The user's orders, newest first, and how many there are. Orders accepted in Redis and not yet
   * written by the worker (state `queued`) come first on page 1: read from the user's own list on
   * each shard (one keyed script per shard, never a scan of the shards' queued hashes), minus those
   * MySQL already has (written since: listed once, from MySQL).
   */
  async listForUser(userId: string, current: number): Promise<{ list: OrderListItem[]; total: number }> {
    const [queuedAll, rows, count] = await Promise.all([
      this.deps.store.queuedOfUser(userId),
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
      const paid = await this.getOrder(userId, orderId);
      this.deps.events?.changed([{ orderId, userId, voucherId: paid.voucherId, state: 'paid' }]);
      return paid;
    }
    const order = await this.getOrder(userId, orderId);
    if (order.state === 'paid') return order;
    if (order.state === 'queued') throw new HttpError(409, SECKILL_MESSAGES.orderProcessing());
    throw new HttpError(409, SECKILL_MESSAGES.orderNotPayable({ state: order.state }));
  }
}

/** An order placed: its id, and whether an Idempotency-Key's earlier order was returned. */
interface Placed {
  orderId: string;
  replayed: boolean;
}

/** The order placed (accepted now, or earlier under the same Idempotency-Key), else the refusal thrown. */
function placedOrRefused(result: ReserveResult, order: OrderRequest): Placed {
  if (result.outcome === 'accepted') return { orderId: order.orderId, replayed: false };
  if (result.outcome === 'replayed') return { orderId: result.orderId, replayed: true };
  throwIfRefused(result, order.voucherId);
  throw new Error(`unexpected reserve outcome ${result.outcome}`);
}

/** Throws the refusal the user reads for every outcome but `accepted` and `replayed`. */
function throwIfRefused(result: ReserveResult, voucherId: string): void {
  switch (result.outcome) {
    case 'accepted':
    case 'replayed':
      return;
    case 'not-started':
      throw new SaleRefused('not-started', SECKILL_MESSAGES.notStarted());
    case 'ended':
      throw new SaleRefused('ended', SECKILL_MESSAGES.ended());
    case 'sold-out':
      throw new SaleRefused('sold-out', SECKILL_MESSAGES.soldOut());
    case 'already-bought':
      throw new SaleRefused('already-bought', result.limit > 1 ? SECKILL_MESSAGES.atLimit({ limit: result.limit }) : SECKILL_MESSAGES.alreadyBought());
    case 'unknown-voucher':
      throw notFound(SECKILL_MESSAGES.unknownVoucher({ id: voucherId }));
    // A reconciliation repair holds the voucher for a moment (npm run reconcile -- --repair).
    case 'paused':
      throw new SaleRefused('paused', SECKILL_MESSAGES.paused());
    case 'suspended':
      throw new SaleRefused('suspended', SECKILL_MESSAGES.suspended());
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
