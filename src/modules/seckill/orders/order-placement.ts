import { isTransient } from '../../../infra/transient-errors.js';
import { LockTimeoutError } from '../../../lib/lock/index.js';
import { IdempotencyKeyReused, OutcomeUnknown, SaleRefused, throwIfRefused, UnknownVoucher } from '../errors/index.js';
import { ORDER_ID_PREFIX, userOrderLock } from '../keys.js';
import { SECKILL_MESSAGES } from '../messages.js';
import { OutOfStockInDatabase, type OrderRepository } from '../record/order-repository.js';
import type { IdempotencyKeys } from '../sale/idempotency-keys.js';
import type { SaleDecider } from '../sale/sale-decider.js';
import type { SaleSettlement } from '../sale/sale-settlement.js';
import type { SoldOutMemory } from '../sale/sold-out-memory.js';
import type { OrderRequest, QueuedOrder, ReserveResult } from '../types.js';

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

export interface OrderPlacementDeps {
  strategy: 'async' | 'sync';
  ids: OrderIds;
  /** Decides each order in Redis. */
  decider: SaleDecider;
  idempotencyKeys: IdempotencyKeys;
  /** What the sync strategy does with a held order after its MySQL write. */
  settlement: SaleSettlement;
  /** The MySQL record, written by the sync strategy's requests. */
  orders: OrderRepository;
  locks?: Locks;
  /** Vouchers this instance knows are sold out (answered from memory). */
  soldOut?: SoldOutMemory;
  /** Counts outcomes (seckill_requests_total). */
  countOutcome?: (strategy: string, outcome: string) => void;
}

/** How one order is placed. */
export interface PlaceOptions {
  /** A retry with it returns the order the key was first accepted as. */
  idempotencyKey?: string;
  /**
   * Told the order's id once it is issued, before the sale decides: from then on the order may
   * exist under that id, which a caller that stops waiting can name.
   */
  onOrderId?: (orderId: string) => void;
}

/** An order placed: its id, and whether an Idempotency-Key's earlier order was returned. */
interface Placed {
  orderId: string;
  replayed: boolean;
}

/**
 * Places seckill orders by the configured strategy. Both decide in Redis (SaleDecider.decide, one
 * Lua script on one stock and one set of buyer slots): `async` answers at once and leaves MySQL
 * to the worker; `sync` (hmdp's) holds the order and writes MySQL before it answers.
 */
export class OrderPlacement {
  constructor(private readonly deps: OrderPlacementDeps) {}

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
  async place(userId: string, voucherId: string, { idempotencyKey, onOrderId }: PlaceOptions = {}): Promise<string> {
    const { strategy, countOutcome } = this.deps;
    try {
      if (idempotencyKey !== undefined) await this.bindKey(userId, idempotencyKey, voucherId);
      const request: OrderRequest = { orderId: String(await this.deps.ids.nextId(ORDER_ID_PREFIX)), userId, voucherId };
      onOrderId?.(request.orderId);
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
    const binding = await this.deps.idempotencyKeys.bind(userId, key, voucherId);
    if (!binding.bound) throw new IdempotencyKeyReused(binding.voucherId);
  }

  /**
   * The Redis path: one Lua script decides and queues the order; MySQL is written by the worker.
   * The answer is immediate; the client polls GET /voucher-order/{id} for `created`.
   */
  private async placeAsync(order: OrderRequest): Promise<Placed> {
    return placedOrRefused(await this.deps.decider.decide(order), order);
  }

  /**
   * hmdp's synchronous version, kept in step with Redis: under hmdp's per-user lock, the order is
   * decided by the same Redis script as the async strategy (window, stock, the user's limit;
   * held, not streamed), then written in one MySQL transaction before the answer. Instances on
   * either strategy therefore share one stock and one set of buyer slots: switching strategy
   * mid-sale, or running both, can neither oversell nor accept an order that is later dropped.
   */
  private async placeSync(order: OrderRequest): Promise<Placed> {
    const locks = this.deps.locks;
    if (!locks) throw new Error('the sync strategy needs a lock service');
    const { orderId, userId, voucherId } = order;
    // Key lock:{order:<userId>} (hmdp's lock:order:<userId>, hash-tagged by the lock module).
    // Bounded wait: a user's requests queue behind each other, never forever.
    let held = false;
    const place = async (): Promise<ReserveResult> => {
      const result = await this.deps.decider.decide(order, 'hold');
      if (result.outcome !== 'accepted') return result;
      held = true;
      return this.writeHeld(order, { orderId, userId, voucherId, slot: result.slot, acceptedMs: result.acceptedMs });
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
  private async writeHeld(request: OrderRequest, order: QueuedOrder & { acceptedMs: number }): Promise<ReserveResult> {
    // Given back before the answer: the Idempotency-Key forgets it, so a retry decides afresh.
    const giveBack = async (): Promise<void> => {
      await this.deps.settlement.release(order);
      await this.deps.idempotencyKeys.forget(request);
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
        await this.deps.settlement.handOff(order);
      } catch {
        throw error; // Redis too: the held order is streamed later by the worker's sweep (hand-off.lua "older")
      }
      return { outcome: 'accepted', slot: order.slot, acceptedMs: order.acceptedMs };
    }
    if (written === 'user-has-order') {
      await giveBack();
      return { outcome: 'already-bought', limit: 1 };
    }
    // Best effort: an order left held is streamed by the worker's sweep and found written.
    await this.deps.settlement.settle(order).catch(() => undefined);
    return { outcome: 'accepted', slot: order.slot, acceptedMs: order.acceptedMs };
  }
}

/** The order placed (accepted now, or earlier under the same Idempotency-Key), else the refusal thrown. */
function placedOrRefused(result: ReserveResult, order: OrderRequest): Placed {
  if (result.outcome === 'accepted') return { orderId: order.orderId, replayed: false };
  if (result.outcome === 'replayed') return { orderId: result.orderId, replayed: true };
  throwIfRefused(result, order.voucherId);
  throw new Error(`unexpected reserve outcome ${result.outcome}`);
}

function outcomeOf(error: unknown): string {
  if (error instanceof SaleRefused || error instanceof OutcomeUnknown) return error.outcome;
  if (error instanceof UnknownVoucher) return 'unknown-voucher';
  return 'error';
}
