import type { RedisClient } from '../../../infra/redis.js';
import { defineOperations, readLua, type OperationSpec } from '../../../lib/redis-scripts/index.js';
import { IDEMPOTENCY_TTL_MS, RELEASE_MARKER_TTL_SECONDS, SALE_KEYS_KEPT_AFTER_END_MS, queuedByUserMember, type BucketRef, type SaleKeys } from '../keys.js';
import type { OrderRequest, QueuedOrder, ReserveOutcome, ReserveResult, SaleState, UserQueuedOrder } from '../types.js';

/**
 * The sale's Lua scripts (lua/*.lua, each headed by its KEYS, ARGV and reply) as operations: an
 * object in, a typed reply out. Each script's KEYS and ARGV are built here alone, in its header's
 * order. Every script touches the keys of one `{seckill:N}` shard only.
 */

/**
 * What reserve.lua does with an accepted order: `stream` appends it to the order stream for the
 * worker (async strategy); `hold` keeps it in the in-flight set while the caller writes MySQL (sync).
 */
export type ReserveMode = 'stream' | 'hold';

/** One order for reserve.lua, with what to do with it if accepted. */
export interface ReserveRequest {
  order: OrderRequest;
  mode: ReserveMode;
  /** The user's home bucket of a voucher sold from buckets; absent: the voucher's one hash (B = 1). */
  bucket?: BucketRef;
}

/** A refill step (transfers.ts): the voucher, the bucket it runs on, the transfer. */
export interface TransferStep {
  voucherId: string;
  bucket: BucketRef;
  transferId: string;
}

/** An administrator's change to a sale; undefined fields are left as they are. */
export interface SaleControl {
  total?: number;
  begin?: Date;
  end?: Date;
  suspended?: boolean;
  limitPerUser?: number;
}

export type ControlOutcome =
  { outcome: 'applied'; stock: number; total: number } | { outcome: 'not-published' } | { outcome: 'below-sold'; sold: number; total: number };

/** One bucket's share of a sale being published: its stock and its part of the total (undefined: unknown, set by the first control). */
export interface BucketShare {
  sale: SaleState;
  bucket: BucketRef;
  stock: number;
  total?: number;
}

/** An administrator's change written into one bucket; `totalIfMissing` seeds the bucket's part of the total if it has none. */
export interface BucketControl {
  voucherId: string;
  bucket: BucketRef;
  totalIfMissing: number;
  change: SaleControl;
}

/** A sale's window, as a freeze and a repair keep it. */
export type SaleWindow = Omit<SaleState, 'stock'>;

/** What MySQL records of a sale, for repair.lua to write into Redis. */
export interface SaleRecord {
  stock: number;
  limitPerUser: number;
  /** userId → bitmask of the slots its live orders hold. */
  liveSlots: Map<string, number>;
  /** Cancelled orders whose unit may not be back in Redis yet. */
  unreleased: Array<{ orderId: string; userId: string; slot: number }>;
}

/** One bucket's rewrite by a repair: MySQL's record of the users homing to it, and the units to add to (or take from) its stock. */
export interface BucketRepair {
  sale: SaleWindow;
  bucket: BucketRef;
  token: string;
  record: Omit<SaleRecord, 'stock'>;
  stockDelta: number;
}

/** reserve.lua's reply codes of an order, in order. */
const RESERVE_OUTCOMES: readonly ReserveOutcome[] = [
  'accepted',
  'not-started',
  'ended',
  'sold-out',
  'already-bought',
  'unknown-voucher',
  'frozen',
  'suspended',
  'replayed',
];

export function toReserveOutcome(code: number): ReserveOutcome {
  const outcome = RESERVE_OUTCOMES[code];
  if (outcome === undefined) throw new Error(`reserve.lua returned unexpected ${code}`);
  return outcome;
}

/** repair.lua's and repair-bucket.lua's ARGV: the freeze's token, the stock (repair-bucket: the change to it), the window, then the MySQL record (limit, live slots per user, unreleased orders). */
function repairArgs(token: string, stock: number, sale: SaleWindow, record: Omit<SaleRecord, 'stock'>): Array<string | number> {
  return [
    token,
    stock,
    sale.begin.getTime(),
    sale.end.getTime(),
    SALE_KEYS_KEPT_AFTER_END_MS,
    record.limitPerUser,
    record.liveSlots.size,
    ...[...record.liveSlots].flat(),
    ...record.unreleased.flatMap((order) => [order.userId, order.slot]),
  ];
}

/** freeze.lua's ARGV: the repair's token, how long the freeze lasts, the sale's window (a missing hash is created frozen with it). */
function freezeArgs({ sale, token, freezeMs }: { sale: SaleWindow; token: string; freezeMs: number }): Array<string | number> {
  return [token, freezeMs, sale.begin.getTime(), sale.end.getTime(), SALE_KEYS_KEPT_AFTER_END_MS];
}

/** control.lua's ARGV: MySQL's total (where the hash has none), then the change, "" for a field left as it is. */
function controlArgs({ totalIfMissing, change }: { totalIfMissing: number; change: SaleControl }): Array<string | number> {
  return [
    totalIfMissing,
    optional(change.total),
    optional(change.begin?.getTime()),
    optional(change.end?.getTime()),
    flag(change.suspended),
    SALE_KEYS_KEPT_AFTER_END_MS,
    optional(change.limitPerUser),
  ];
}

/** reserve.lua's reply for one order read: its outcome and value, and the batch's time (ms) for an accepted one. */
export function toReserveResult(code: number, value: number | string, decidedMs: number): ReserveResult {
  const outcome = toReserveOutcome(code);
  if (outcome === 'accepted') return { outcome, slot: Number(value), acceptedMs: decidedMs };
  if (outcome === 'already-bought') return { outcome, limit: Number(value) };
  if (outcome === 'replayed') return { outcome, orderId: String(value) };
  return { outcome };
}

const lua = (name: string): string => readLua(import.meta.url, `lua/${name}.lua`);
const optional = (value: number | undefined): number | '' => value ?? '';
const flag = (value: boolean | undefined): '1' | '0' | '' => (value === undefined ? '' : value ? '1' : '0');

function toControlOutcome(reply: unknown): ControlOutcome {
  const [code, stockOrSold, total] = reply as [number, number, number];
  if (code === 1) return { outcome: 'not-published' };
  if (code === 2) return { outcome: 'below-sold', sold: stockOrSold, total };
  return { outcome: 'applied', stock: stockOrSold, total };
}

function toUserQueuedOrders(reply: unknown): UserQueuedOrder[] {
  const flat = reply as string[];
  const orders: UserQueuedOrder[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const [voucherId = '', reservedMs = '0', slot = '1'] = flat[i + 1]!.split(':');
    orders.push({ orderId: flat[i]!, voucherId, reservedAt: new Date(Number(reservedMs)), slot: Number(slot) });
  }
  return orders;
}

/** A bucket as "index/of" ("" for a voucher's one hash): two orders of a voucher in one batch must name the same. */
const bucketName = (bucket: BucketRef | undefined): string => (bucket === undefined ? '' : `${bucket.index}/${bucket.of}`);

/** reserve.lua's flat reply: the batch's time (ms), then a code and a value per order. */
function toReserveResults(raw: unknown): ReserveResult[] {
  const flat = raw as Array<number | string>;
  const decidedMs = Number(flat[0]);
  const results: ReserveResult[] = [];
  for (let i = 1; i + 1 < flat.length; i += 2) results.push(toReserveResult(Number(flat[i]), flat[i + 1]!, decidedMs));
  return results;
}

/** The sale's operations over one key layout. */
export function saleOperations(keys: SaleKeys) {
  return {
    /** true when published now, false when the voucher was in Redis already (its live stock is kept). */
    publish: {
      lua: lua('publish-voucher'),
      keys: (sale: SaleState) => [keys.voucher(sale.voucherId).voucher],
      args: (sale: SaleState) => [
        sale.stock,
        sale.begin.getTime(),
        sale.end.getTime(),
        SALE_KEYS_KEPT_AFTER_END_MS,
        sale.total ?? '',
        sale.suspended === true ? '1' : '',
        optional(sale.limitPerUser),
      ],
      reply: (raw: unknown) => raw === 1,
    },
    /** A batch of orders of one shard, decided in the batch's order by one script run; one result per order. */
    reserve: {
      lua: lua('reserve'),
      keys: (batch: readonly ReserveRequest[]) => {
        const { stream, queued, inFlight, queuedByUser, tag } = keys.saleOf(batch[0]!.order.voucherId, batch[0]!.bucket);
        // Each voucher's keys once, in the order of its first order; an idem key per order that has one.
        // A bucketed voucher's orders of one batch share a lane, so one bucket: its home users'.
        const voucherKeys = new Map<string, { voucher: string; buyers: string; bucket: string }>();
        const idemKeys: string[] = [];
        for (const { order, bucket } of batch) {
          const first = voucherKeys.get(order.voucherId);
          if (first === undefined) {
            const { voucher, buyers, tag: voucherTag } = keys.saleOf(order.voucherId, bucket);
            if (voucherTag !== tag) throw new Error(`a reserve batch spans ${tag} and ${voucherTag}`);
            voucherKeys.set(order.voucherId, { voucher, buyers, bucket: bucketName(bucket) });
          } else if (first.bucket !== bucketName(bucket)) {
            throw new Error(`a reserve batch spans two buckets of voucher ${order.voucherId}`);
          }
          if (order.idempotencyKey !== undefined) idemKeys.push(keys.idempotentOrder(order.voucherId, order.userId, order.idempotencyKey, bucket));
        }
        const saleKeys = [stream, queued, inFlight, queuedByUser];
        for (const { voucher, buyers } of voucherKeys.values()) saleKeys.push(voucher, buyers);
        return idemKeys.length === 0 ? saleKeys : saleKeys.concat(idemKeys);
      },
      args: (batch: readonly ReserveRequest[]) => {
        const vouchers = new Set<string>();
        const perOrder: Array<string | number> = [];
        for (const { order, mode } of batch) {
          vouchers.add(order.voucherId);
          perOrder.push(order.userId, order.orderId, order.voucherId, mode, order.idempotencyKey === undefined ? '' : IDEMPOTENCY_TTL_MS);
        }
        return [SALE_KEYS_KEPT_AFTER_END_MS, vouchers.size, ...perOrder];
      },
      reply: toReserveResults,
    },
    queuedOfUser: {
      lua: lua('queued-of-user'),
      keys: ({ shard }: { shard: number; userId: string }) => [keys.shard(shard).queuedByUser, keys.shard(shard).queued],
      args: ({ userId }: { shard: number; userId: string }) => [userId],
      reply: toUserQueuedOrders,
    },
    /** Orders appended to the stream: one held order, or the shard's orders held longer than `ageMs`. */
    handOff: {
      lua: lua('hand-off'),
      keys: ({ shard }: { shard: number } & ({ orderId: string } | { ageMs: number; limit: number })) => {
        const { inFlight, queued, stream } = keys.shard(shard);
        return [inFlight, queued, stream];
      },
      args: (input: { shard: number } & ({ orderId: string } | { ageMs: number; limit: number })) =>
        'orderId' in input ? ['one', input.orderId] : ['older', input.ageMs, input.limit],
      reply: (raw: unknown) => Number(raw),
    },
    /** true when released now, false when released before (the marker exists); in the bucket that sold it, if bucketed. */
    release: {
      lua: lua('release'),
      keys: ({ order, bucket }: { order: QueuedOrder; bucket?: BucketRef }) => {
        const { voucher, buyers, queued, queuedByUser } = keys.saleOf(order.voucherId, bucket);
        return [voucher, buyers, keys.releaseMarker(order, bucket), queued, queuedByUser];
      },
      args: ({ order }: { order: QueuedOrder; bucket?: BucketRef }) => [
        order.userId,
        order.orderId,
        RELEASE_MARKER_TTL_SECONDS,
        order.slot,
        queuedByUserMember(order),
      ],
      reply: (raw: unknown) => raw === 1,
    },
    /**
     * One bucket of a bucketed sale, published unless there (publish-voucher.lua on the bucket's
     * hash, with its share of the stock and of the total: bucket-controls.ts).
     */
    publishBucket: {
      lua: lua('publish-voucher'),
      keys: ({ sale, bucket }: BucketShare) => [keys.bucket(sale.voucherId, bucket).voucher],
      args: ({ sale, stock, total }: BucketShare) => [
        stock,
        sale.begin.getTime(),
        sale.end.getTime(),
        SALE_KEYS_KEPT_AFTER_END_MS,
        optional(total),
        sale.suspended === true ? '1' : '',
        optional(sale.limitPerUser),
      ],
      reply: (raw: unknown) => raw === 1,
    },
    /** The layout record of a bucketed sale in its shard's voucher hash; false when that hash holds a B = 1 sale. */
    publishLayout: {
      lua: lua('publish-layout'),
      keys: ({ sale }: { sale: SaleState; buckets: number }) => [keys.voucher(sale.voucherId).voucher],
      args: ({ sale, buckets }: { sale: SaleState; buckets: number }) => [buckets, sale.begin.getTime(), sale.end.getTime(), SALE_KEYS_KEPT_AFTER_END_MS],
      reply: (raw: unknown) => raw === 1,
    },
    /** Units taken from the donor bucket for `to` (0: it had none). */
    take: {
      lua: lua('take'),
      keys: ({ voucherId, bucket }: TransferStep & { to: number; most: number }) => [
        keys.bucket(voucherId, bucket).voucher,
        keys.transfers(keys.laneShard(bucket)),
      ],
      args: ({ voucherId, bucket, transferId, to, most }: TransferStep & { to: number; most: number }) => [
        transferId,
        most,
        `${voucherId}:${bucket.index}:${bucket.of}:${to}`,
      ],
      reply: (raw: unknown) => Number(raw),
    },
    /** In the recipient: true when the units are there (now or before), false when they never will be. */
    transferIn: {
      lua: lua('transfer-in'),
      keys: ({ voucherId, bucket, transferId }: TransferStep & { mode: 'give' | 'refuse'; units: number }) => [
        keys.bucket(voucherId, bucket).voucher,
        keys.transferMarker(bucket, transferId),
      ],
      args: ({ mode, units }: TransferStep & { mode: 'give' | 'refuse'; units: number }) => [mode, units, RELEASE_MARKER_TTL_SECONDS],
      reply: (raw: unknown) => raw === 1,
    },
    /** In the donor: the transfer's record dropped (settle), and its units back in stock (return); the units, 0 if none recorded. */
    transferEnd: {
      lua: lua('transfer-end'),
      keys: ({ voucherId, bucket }: TransferStep & { mode: 'settle' | 'return' }) => [
        keys.bucket(voucherId, bucket).voucher,
        keys.transfers(keys.laneShard(bucket)),
      ],
      args: ({ transferId, mode }: TransferStep & { mode: 'settle' | 'return' }) => [transferId, mode],
      reply: (raw: unknown) => Number(raw),
    },
    control: {
      lua: lua('control'),
      keys: ({ voucherId }: { voucherId: string; totalIfMissing: number; change: SaleControl }) => {
        const { voucher, buyers } = keys.voucher(voucherId);
        return [voucher, buyers];
      },
      args: (input: { voucherId: string; totalIfMissing: number; change: SaleControl }) => controlArgs(input),
      reply: toControlOutcome,
    },
    /** control.lua on one bucket of a bucketed sale (bucket-controls.ts): `total` there is the bucket's part of the sale's total. */
    controlBucket: {
      lua: lua('control'),
      keys: ({ voucherId, bucket }: BucketControl) => {
        const { voucher, buyers } = keys.bucket(voucherId, bucket);
        return [voucher, buyers];
      },
      args: (input: BucketControl) => controlArgs(input),
      reply: toControlOutcome,
    },
    /** The window in a bucketed sale's layout record; false when its shard's hash holds no layout. */
    controlLayout: {
      lua: lua('control-layout'),
      keys: ({ voucherId }: { voucherId: string; begin: Date; end: Date }) => [keys.voucher(voucherId).voucher],
      args: ({ begin, end }: { voucherId: string; begin: Date; end: Date }) => [begin.getTime(), end.getTime(), SALE_KEYS_KEPT_AFTER_END_MS],
      reply: (raw: unknown) => raw === 1,
    },
    /** true when the freeze created the (missing) voucher, false when it existed. */
    freeze: {
      lua: lua('freeze'),
      keys: ({ sale }: { sale: SaleWindow; token: string; freezeMs: number }) => [keys.voucher(sale.voucherId).voucher],
      args: (input: { sale: SaleWindow; token: string; freezeMs: number }) => freezeArgs(input),
      reply: (raw: unknown) => raw === 1,
    },
    /** true when thawed, false when the freeze was not the caller's (or gone). */
    thaw: {
      lua: lua('thaw'),
      keys: ({ voucherId }: { voucherId: string; token: string }) => [keys.voucher(voucherId).voucher],
      args: ({ token }: { voucherId: string; token: string }) => [token],
      reply: (raw: unknown) => raw === 1,
    },
    /** The stock written, or -1 when the freeze had lapsed (nothing written). */
    repair: {
      lua: lua('repair'),
      keys: ({ sale, record }: { sale: SaleWindow; token: string; record: SaleRecord }) => {
        const { voucher, buyers } = keys.voucher(sale.voucherId);
        return [voucher, buyers, ...record.unreleased.map((order) => keys.releaseMarker({ orderId: order.orderId, voucherId: sale.voucherId }))];
      },
      args: ({ sale, token, record }: { sale: SaleWindow; token: string; record: SaleRecord }) => repairArgs(token, record.stock, sale, record),
      reply: (raw: unknown) => Number(raw),
    },
    /** freeze.lua on one bucket of a bucketed sale (a repair freezes every bucket). */
    freezeBucket: {
      lua: lua('freeze'),
      keys: ({ sale, bucket }: { sale: SaleWindow; bucket: BucketRef; token: string; freezeMs: number }) => [keys.bucket(sale.voucherId, bucket).voucher],
      args: (input: { sale: SaleWindow; bucket: BucketRef; token: string; freezeMs: number }) => freezeArgs(input),
      reply: (raw: unknown) => raw === 1,
    },
    /** thaw.lua on one bucket of a bucketed sale. */
    thawBucket: {
      lua: lua('thaw'),
      keys: ({ voucherId, bucket }: { voucherId: string; bucket: BucketRef; token: string }) => [keys.bucket(voucherId, bucket).voucher],
      args: ({ token }: { voucherId: string; bucket: BucketRef; token: string }) => [token],
      reply: (raw: unknown) => raw === 1,
    },
    /** One bucket of a frozen bucketed sale rewritten (buyers of its users, stock moved by `stockDelta`); its stock, or -1 when the freeze had lapsed. */
    repairBucket: {
      lua: lua('repair-bucket'),
      keys: ({ sale, bucket, record }: BucketRepair) => {
        const { voucher, buyers } = keys.bucket(sale.voucherId, bucket);
        return [voucher, buyers, ...record.unreleased.map((order) => keys.releaseMarker({ orderId: order.orderId, voucherId: sale.voucherId }, bucket))];
      },
      args: ({ sale, token, record, stockDelta }: BucketRepair) => repairArgs(token, stockDelta, sale, record),
      reply: (raw: unknown) => Number(raw),
    },
  } satisfies Record<string, OperationSpec<never, unknown>>;
}

export type SaleScripts = ReturnType<typeof defineSaleScripts>;

/** The sale's operations on `redis` (defining them twice on one client is harmless). */
export const defineSaleScripts = (redis: RedisClient, keys: SaleKeys) => defineOperations(redis, 'seckill', saleOperations(keys));
