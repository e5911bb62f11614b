import type { RedisClient } from '../../infra/redis.js';
import { defineScripts, readLua, type Scripts } from '../../lib/redis-scripts/index.js';
import { IDEMPOTENCY_TTL_MS, SALE_KEYS_KEPT_AFTER_END_MS, USER_ORDERS_TTL_MS, type SaleKeys } from './keys.js';
import type { OrderRequest, ReserveOutcome, ReserveResult } from './types.js';

/**
 * The sale's Lua scripts (lua/*.lua; each file's header names its KEYS, ARGV and reply) as
 * typed functions. Every script touches the keys of one `{seckill:N}` shard only.
 */
export interface SaleScripts {
  /** 1 published, 0 the voucher was there already (its live stock is kept). */
  publish(
    voucher: string,
    stock: number,
    beginMs: number,
    endMs: number,
    keepMs: number,
    total: number | '',
    suspended: '1' | '',
    limitPerUser: number | '',
  ): Promise<number>;
  /** [a RESERVE_OUTCOMES index, its value] (reserve.lua's header). */
  reserve(
    voucher: string,
    buyers: string,
    stream: string,
    queued: string,
    inFlight: string,
    userOrders: string,
    idempotentOrder: string,
    userId: string,
    orderId: string,
    voucherId: string,
    keepMs: number,
    mode: ReserveMode,
    idempotencyTtlMs: number | '',
    userOrdersTtlMs: number,
  ): Promise<[number, number | string]>;
  /** orderId, "voucherId:reserveMs:slot", ... of the user's orders still queued on the shard. */
  queuedOfUser(userOrders: string, queued: string): Promise<string[]>;
  /** Orders appended to the stream. Mode "one": ARGV orderId; mode "older": ARGV age (ms), limit. */
  handOff(inFlight: string, queued: string, stream: string, mode: 'one' | 'older', orderIdOrAgeMs: string | number, limit?: number): Promise<number>;
  /** 1 released now, 0 released before (the marker exists). */
  release(
    voucher: string,
    buyers: string,
    marker: string,
    queued: string,
    userOrders: string,
    userId: string,
    orderId: string,
    markerTtlSeconds: number,
    slot: number,
  ): Promise<number>;
  /** 1 the group was created, 0 it existed. */
  ensureGroup(stream: string, group: string): Promise<number>;
  /** Entries removed. */
  trimAcknowledged(stream: string, group: string): Promise<number>;
  /** {stream length, pending, lag (-1: unknown), dead letters}. */
  streamStats(stream: string, deadLetters: string, group: string): Promise<[number, number, number, number]>;
  /** 1 the pause created the (missing) voucher, 0 it existed. */
  pause(voucher: string, token: string, pauseMs: number, beginMs: number, endMs: number, keepMs: number): Promise<number>;
  /** 1 lifted, 0 the pause was not the caller's. */
  unpause(voucher: string, token: string): Promise<number>;
  /** [0, stock, total] applied, [1, 0, 0] not in Redis, [2, sold, total] below what is sold. Absent fields are "". */
  control(
    voucher: string,
    buyers: string,
    totalIfMissing: number,
    total: number | '',
    beginMs: number | '',
    endMs: number | '',
    suspended: '1' | '0' | '',
    keepMs: number,
    limitPerUser: number | '',
  ): Promise<[number, number, number]>;
  /** The stock written, or -1 when the pause is gone. The key count comes first (it varies). */
  repair(numberOfKeys: number, ...keysThenArgs: Array<string | number>): Promise<number>;
}

const lua = (name: string): string => readLua(import.meta.url, `lua/${name}.lua`);

const SOURCES = {
  publish: { keys: 1, lua: lua('publish-voucher') },
  reserve: { keys: 7, lua: lua('reserve') },
  queuedOfUser: { keys: 2, lua: lua('queued-of-user') },
  handOff: { keys: 3, lua: lua('hand-off') },
  release: { keys: 5, lua: lua('release') },
  ensureGroup: { keys: 1, lua: lua('ensure-group') },
  trimAcknowledged: { keys: 1, lua: lua('trim-acknowledged') },
  streamStats: { keys: 2, lua: lua('stream-stats') },
  pause: { keys: 1, lua: lua('pause') },
  unpause: { keys: 1, lua: lua('unpause') },
  control: { keys: 2, lua: lua('control') },
  // One release marker per cancelled, unreleased order: the key count is given per call.
  repair: { keys: 'dynamic', lua: lua('repair') },
} as const;

export const defineSaleScripts = (redis: RedisClient): Scripts<SaleScripts> => defineScripts<SaleScripts>(redis, 'seckill', SOURCES);

/** reserve.lua's replies, in the order of its return codes. */
const RESERVE_OUTCOMES: ReserveOutcome[] = [
  'accepted',
  'not-started',
  'ended',
  'sold-out',
  'already-bought',
  'unknown-voucher',
  'paused',
  'suspended',
  'replayed',
];

/**
 * What reserve.lua does with an accepted order: `stream` appends it to the order stream for the
 * worker (async strategy); `hold` keeps it in the in-flight set while the caller writes MySQL (sync).
 */
export type ReserveMode = 'stream' | 'hold';

/** reserve.lua's keys and arguments for one order. */
export function reserveArgs(keys: SaleKeys, order: OrderRequest, mode: ReserveMode = 'stream'): Parameters<SaleScripts['reserve']> {
  const { voucher, buyers, stream, queued, inFlight } = keys.voucher(order.voucherId);
  const userOrders = keys.userOrders(keys.shardOf(order.voucherId), order.userId);
  // Without a key, KEYS[7] is a name on the same slot that the script leaves alone (Redis Cluster
  // wants every key of a script on one slot).
  const key = order.idempotencyKey;
  const idempotentOrder = keys.idempotentOrder(order.voucherId, order.userId, key ?? '');
  return [
    voucher,
    buyers,
    stream,
    queued,
    inFlight,
    userOrders,
    idempotentOrder,
    order.userId,
    order.orderId,
    order.voucherId,
    SALE_KEYS_KEPT_AFTER_END_MS,
    mode,
    key === undefined ? '' : IDEMPOTENCY_TTL_MS,
    USER_ORDERS_TTL_MS,
  ];
}

/** reserve.lua's reply read: the outcome and its value. */
export function toReserveResult([code, value]: [number, number | string]): ReserveResult {
  const outcome = toReserveOutcome(code);
  if (outcome === 'accepted') return { outcome, slot: Number(value) };
  if (outcome === 'already-bought') return { outcome, limit: Number(value) };
  if (outcome === 'replayed') return { outcome, orderId: String(value) };
  return { outcome };
}

export function toReserveOutcome(code: number): ReserveOutcome {
  const outcome = RESERVE_OUTCOMES[code];
  if (outcome === undefined) throw new Error(`reserve.lua returned unexpected ${code}`);
  return outcome;
}
