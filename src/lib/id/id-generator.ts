import type { Cluster, Redis } from 'ioredis';
import { defineScripts, readLua } from '../redis-scripts/index.js';

/** A standalone Redis or a Redis Cluster (ioredis). */
export type RedisClient = Redis | Cluster;

/** Default epoch of the time part: IDs issued before it cannot exist. 31 bits of seconds last until 2092. */
export const DEFAULT_ID_EPOCH = new Date('2024-01-01T00:00:00Z');

const SEQUENCE_BITS = 32n;
/** Largest sequence number of one prefix in one UTC day. */
export const MAX_SEQUENCE = 2 ** 32 - 1;
/** Largest time part (seconds since the epoch): the sign bit of the 64-bit ID stays 0. */
export const MAX_TIME_PART = 2 ** 31 - 1;

const NEXT_SEQUENCE_LUA = readLua(import.meta.url, 'next-sequence.lua');

/** What the generator's script takes and returns. */
interface IdScripts {
  nextSequence(counterKey: string, maxSequence: number, count: number): Promise<[first: number, last: number]>;
}

export interface IdGeneratorOptions {
  /** Start of the time part; whole seconds. Default 2024-01-01T00:00:00Z. Never change it for existing data. */
  epoch?: Date;
  /** Wall clock in milliseconds since 1970 (default `Date.now`); a seam for tests of clock jumps. */
  clock?: () => number;
  /**
   * Sequence numbers reserved per Redis round trip (default 1). Above 1 the generator takes a
   * block with one INCRBY and hands it out from memory (the "segment" method of Meituan's Leaf):
   * far fewer round trips, at the price of gaps (numbers of a block unused when the process
   * stops or the UTC day ends are never issued) and of the day counter then counting numbers
   * reserved rather than IDs issued.
   */
  blockSize?: number;
}

export interface DecodedId {
  /** The second the ID was issued (the time part; milliseconds are always 0). */
  timestamp: Date;
  /** Position in the day's sequence of its prefix: 1 for the first ID of the UTC day. */
  sequence: number;
}

/** The day's 2^32 IDs of a prefix are used up: refusing is safer than wrapping into duplicates. */
export class IdSequenceExhaustedError extends Error {
  override readonly name = 'IdSequenceExhaustedError';
  constructor(
    readonly prefix: string,
    readonly day: string,
  ) {
    super(`ID sequence of "${prefix}" exhausted for UTC day ${day} (${MAX_SEQUENCE} IDs issued)`);
  }
}

/** The clock is outside the range the 31-bit time part can express. */
export class IdClockError extends Error {
  override readonly name = 'IdClockError';
}

/**
 * 64-bit IDs, unique per prefix across processes, and increasing with time:
 *
 *   0 | 31 bits: seconds since the epoch | 32 bits: per-prefix sequence of the UTC day
 *
 * The sequence is `INCR icr:{prefix}:{yyyyMMdd}` on Redis, so the counter of a day also
 * reads as the number of IDs issued with that prefix that day. See README.md.
 */
export class IdGenerator {
  private readonly scripts: IdScripts;
  private readonly epochSeconds: number;
  private readonly clock: () => number;
  /** Largest time part issued by this generator: the time part never goes backwards. */
  private lastTimePart = -1;
  private readonly blockSize: number;
  private lastDay = { timePart: -1, day: '' };
  /** Per prefix: the reserved numbers not yet issued, valid for one UTC day only. */
  private readonly blocks = new Map<string, { day: string; next: number; last: number }>();
  /** Reservations in flight, per prefix and day: concurrent callers share one round trip. */
  private readonly reserving = new Map<string, Promise<void>>();

  constructor(
    private readonly redis: RedisClient,
    options: IdGeneratorOptions = {},
  ) {
    const epoch = options.epoch ?? DEFAULT_ID_EPOCH;
    if (!Number.isFinite(epoch.getTime()) || epoch.getTime() % 1000 !== 0) {
      throw new RangeError('The ID epoch must be a valid date in whole seconds');
    }
    this.epochSeconds = epoch.getTime() / 1000;
    this.clock = options.clock ?? Date.now;
    this.blockSize = options.blockSize ?? 1;
    if (!Number.isInteger(this.blockSize) || this.blockSize < 1 || this.blockSize > 1_000_000) {
      throw new RangeError('The ID block size must be a whole number from 1 to 1,000,000');
    }
    this.scripts = defineScripts<IdScripts>(redis, 'id', { nextSequence: { keys: 1, lua: NEXT_SEQUENCE_LUA } });
  }

  /**
   * Issues the next ID of `prefix`, the ID space (e.g. "order"): IDs of different prefixes may be
   * equal. One Redis round trip, or with `blockSize` > 1 one per block.
   */
  async nextId(prefix: string): Promise<bigint> {
    assertPrefix(prefix);
    for (;;) {
      // Time part and day come from the same reading: an ID's time part always lies in the day
      // whose counter gave its sequence, which is what makes (time, sequence) unique.
      const timePart = this.nextTimePart();
      const day = this.dayOf(timePart);
      if (this.blockSize === 1) return compose(timePart, (await this.reserve(prefix, day, 1))[0]);
      const block = this.blocks.get(prefix);
      if (block !== undefined && block.day === day && block.next <= block.last) return compose(timePart, block.next++);
      await this.refill(prefix, day);
    }
  }

  /** yyyyMMdd of a time part, remembered for the last one (formatting a date per ID showed in profiles). */
  private dayOf(timePart: number): string {
    if (timePart !== this.lastDay.timePart) this.lastDay = { timePart, day: utcDayStamp(new Date((this.epochSeconds + timePart) * 1000)) };
    return this.lastDay.day;
  }

  /** Takes a new block for `prefix` and `day`, or waits for the one already being taken. */
  private refill(prefix: string, day: string): Promise<void> {
    const key = `${prefix} ${day}`;
    let pending = this.reserving.get(key);
    if (pending === undefined) {
      pending = this.reserve(prefix, day, this.blockSize)
        .then(([first, last]) => {
          this.blocks.set(prefix, { day, next: first, last });
        })
        .finally(() => this.reserving.delete(key));
      this.reserving.set(key, pending);
    }
    return pending;
  }

  private async reserve(prefix: string, day: string, count: number): Promise<[first: number, last: number]> {
    const [first, last] = await this.scripts.nextSequence(counterKey(prefix, day), MAX_SEQUENCE, count);
    if (first < 0) throw new IdSequenceExhaustedError(prefix, day);
    return [first, last];
  }

  /** IDs issued with `prefix` on the UTC day containing `day` (0 if none). */
  async dailyCount(prefix: string, day: Date): Promise<number> {
    assertPrefix(prefix);
    const count = await this.redis.get(counterKey(prefix, utcDayStamp(day)));
    return count === null ? 0 : Number(count);
  }

  /** Decodes an ID made with this generator's epoch. */
  decode(id: bigint): DecodedId {
    return decodeId(id, new Date(this.epochSeconds * 1000));
  }

  private nextTimePart(): number {
    const now = Math.floor(this.clock() / 1000) - this.epochSeconds;
    if (now < 0) throw new IdClockError(`The clock (${new Date(this.clock()).toISOString()}) is before the ID epoch`);
    // Clock moved backwards (NTP step, VM resume): keep the last time part until the clock
    // catches up, so this process never issues a time part smaller than one it already issued.
    const timePart = Math.max(now, this.lastTimePart);
    if (timePart > MAX_TIME_PART) throw new IdClockError('The 31-bit time part of IDs is exhausted');
    this.lastTimePart = timePart;
    return timePart;
  }
}

const compose = (timePart: number, sequence: number): bigint => (BigInt(timePart) << SEQUENCE_BITS) | BigInt(sequence);

/** Splits an ID into its issue second and its sequence number. */
export function decodeId(id: bigint, epoch: Date = DEFAULT_ID_EPOCH): DecodedId {
  if (id < 0n || id > 0x7fff_ffff_ffff_ffffn) throw new RangeError(`Not a 63-bit ID: ${id}`);
  const seconds = Number(id >> SEQUENCE_BITS);
  return {
    timestamp: new Date(epoch.getTime() + seconds * 1000),
    sequence: Number(id & BigInt(MAX_SEQUENCE)),
  };
}

/**
 * Parses an ID that arrived as a decimal string (JSON carries IDs as strings because
 * JavaScript numbers lose precision above 2^53). Throws RangeError on anything else.
 */
export function parseId(text: string): bigint {
  if (!/^(0|[1-9][0-9]{0,18})$/.test(text)) throw new RangeError(`Not an ID: ${JSON.stringify(text)}`);
  const id = BigInt(text);
  if (id > 0x7fff_ffff_ffff_ffffn) throw new RangeError(`ID out of range: ${text}`);
  return id;
}

/** Redis key of the sequence (and count) of `prefix` on a UTC day given as yyyyMMdd. */
export const counterKey = (prefix: string, dayStamp: string): string => `icr:${prefix}:${dayStamp}`;

/** yyyyMMdd of the UTC day: every process agrees on it whatever its time zone. */
export function utcDayStamp(date: Date): string {
  return date.toISOString().slice(0, 10).replaceAll('-', '');
}

function assertPrefix(prefix: string): void {
  if (prefix.length === 0 || /\s/.test(prefix)) throw new TypeError(`Invalid ID prefix: ${JSON.stringify(prefix)}`);
}
