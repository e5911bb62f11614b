import type { RedisClient } from '../../infra/redis.js';
import { defineScripts, readLua, type Scripts } from '../../lib/redis-scripts/index.js';
import { SALE_KEYS_KEPT_AFTER_END_MS, type SaleKeys } from './keys.js';
import type { QueuedOrder, ReserveOutcome } from './types.js';

/**
 * The sale's Lua scripts (lua/*.lua; each file's header names its KEYS, ARGV and reply) as
 * typed functions. Every script touches the keys of one `{seckill:N}` shard only.
 */
export interface SaleScripts {
  /** 1 published, 0 the voucher was there already (its live stock is kept). */
  publish(voucher: string, stock: number, beginMs: number, endMs: number, keepMs: number, total: number | '', suspended: '1' | ''): Promise<number>;
  /** A RESERVE_OUTCOMES index. */
  reserve(
    voucher: string,
    buyers: string,
    stream: string,
    queued: string,
    inFlight: string,
    userId: string,
    orderId: string,
    voucherId: string,
    keepMs: number,
    mode: ReserveMode,
  ): Promise<number>;
  /** Orders appended to the stream. Mode "one": ARGV orderId; mode "older": ARGV age (ms), limit. */
  handOff(inFlight: string, queued: string, stream: string, mode: 'one' | 'older', orderIdOrAgeMs: string | number, limit?: number): Promise<number>;
  /** 1 released now, 0 released before (the marker exists). */
  release(voucher: string, buyers: string, marker: string, queued: string, userId: string, orderId: string, markerTtlSeconds: number): Promise<number>;
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
  ): Promise<[number, number, number]>;
  /** The stock written, or -1 when the pause is gone. The key count comes first (it varies). */
  repair(numberOfKeys: number, ...keysThenArgs: Array<string | number>): Promise<number>;
}

const lua = (name: string): string => readLua(import.meta.url, `lua/${name}.lua`);

const SOURCES = {
  publish: { keys: 1, lua: lua('publish-voucher') },
  reserve: { keys: 5, lua: lua('reserve') },
  handOff: { keys: 3, lua: lua('hand-off') },
  release: { keys: 4, lua: lua('release') },
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
const RESERVE_OUTCOMES: ReserveOutcome[] = ['accepted', 'not-started', 'ended', 'sold-out', 'already-bought', 'unknown-voucher', 'paused', 'suspended'];

/**
 * What reserve.lua does with an accepted order: `stream` appends it to the order stream for the
 * worker (async strategy); `hold` keeps it in the in-flight set while the caller writes MySQL (sync).
 */
export type ReserveMode = 'stream' | 'hold';

/** reserve.lua's keys and arguments for one order. */
export function reserveArgs(keys: SaleKeys, order: QueuedOrder, mode: ReserveMode = 'stream'): Parameters<SaleScripts['reserve']> {
  const { voucher, buyers, stream, queued, inFlight } = keys.voucher(order.voucherId);
  return [voucher, buyers, stream, queued, inFlight, order.userId, order.orderId, order.voucherId, SALE_KEYS_KEPT_AFTER_END_MS, mode];
}

export function toReserveOutcome(code: number): ReserveOutcome {
  const outcome = RESERVE_OUTCOMES[code];
  if (outcome === undefined) throw new Error(`reserve.lua returned unexpected ${code}`);
  return outcome;
}
