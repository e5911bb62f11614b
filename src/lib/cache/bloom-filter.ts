import { createHash } from 'node:crypto';
import type { LockClient } from '../lock/index.js';
import { defineCacheScripts, type CacheScripts } from './scripts.js';
import type { RedisClient } from './types.js';

export interface BloomFilterOptions {
  /** Names the keys `bloom:{name}` and the rebuild lock; no braces. */
  name: string;
  /** How many ids the filter is sized for (n). More ids raise the false-positive rate. */
  expectedItems: number;
  /** Wanted false-positive rate (p) at `expectedItems`, in (0, 1). */
  falsePositiveRate: number;
  /** Serializes rebuilds across instances (lock `bloom-rebuild:{name}`). */
  locks: LockClient;
  /** Life of a bitmap being built if its rebuilder dies. Default 1 hour. */
  buildTtlMs?: number;
  /** Ids per script call during a rebuild. Default 1000. */
  batchSize?: number;
}

/** certainly absent | maybe present | no usable filter in Redis (treat as maybe present). */
export type BloomAnswer = 'absent' | 'maybe' | 'not-built';

/** Batches of ids, e.g. keyset pages of a table. */
export type IdSource = () => AsyncIterable<readonly string[]>;

/** Bits before the filter proper: a 16-byte header naming m and k. */
const HEADER_BITS = 128;
/** Redis strings hold at most 512 MB = 2^32 bits. */
const MAX_BITS = 2 ** 32 - HEADER_BITS;
const MAX_HASHES = 30;

/** Filter size (m bits) and hash count (k) for n items at false-positive rate p. */
export function bloomParameters(expectedItems: number, falsePositiveRate: number): { bits: number; hashes: number } {
  if (!Number.isInteger(expectedItems) || expectedItems < 1) throw new RangeError(`expectedItems must be a positive integer: ${expectedItems}`);
  if (!(falsePositiveRate > 0 && falsePositiveRate < 1)) throw new RangeError(`falsePositiveRate must be in (0, 1): ${falsePositiveRate}`);
  const bits = Math.ceil((-expectedItems * Math.log(falsePositiveRate)) / Math.LN2 ** 2);
  if (bits > MAX_BITS)
    throw new RangeError(`a Bloom filter for ${expectedItems} items at p=${falsePositiveRate} needs ${bits} bits, more than a Redis string holds`);
  const hashes = Math.min(MAX_HASHES, Math.max(1, Math.round((bits / expectedItems) * Math.LN2)));
  return { bits, hashes };
}

/**
 * A Bloom filter over ids in one Redis bitmap (plain SETBIT/GETBIT: no RedisBloom module needed).
 *
 * The k bit offsets of an id are computed here (double hashing of one SHA-256) and checked or
 * set by a Lua script in one round trip. "Absent" is certain; "maybe" is wrong at about the
 * configured rate. A filter that is missing or was built with other parameters answers
 * `not-built`, never "absent": the filter can only reject ids while it is complete.
 *
 * Keys (one hash tag, so the scripts and the RENAME work on a Redis Cluster):
 * `bloom:{name}` (live) and `bloom:{name}:building` (during a rebuild, with a TTL).
 */
export class BloomFilter {
  readonly name: string;
  /** m: filter bits (after the header). */
  readonly bits: number;
  /** k: bits per id. */
  readonly hashes: number;
  readonly liveKey: string;
  readonly buildingKey: string;
  private readonly header: string;
  private readonly scripts: CacheScripts;
  private readonly locks: LockClient;
  private readonly buildTtlMs: number;
  private readonly batchSize: number;

  constructor(redis: RedisClient, options: BloomFilterOptions) {
    if (options.name.length === 0 || /[{}]/.test(options.name)) throw new TypeError(`Invalid Bloom filter name: ${JSON.stringify(options.name)}`);
    this.name = options.name;
    ({ bits: this.bits, hashes: this.hashes } = bloomParameters(options.expectedItems, options.falsePositiveRate));
    this.liveKey = `bloom:{${options.name}}`;
    this.buildingKey = `bloom:{${options.name}}:building`;
    // Exactly 16 bytes; a filter with other m or k has another header and is ignored (not-built).
    this.header = `bf1:${this.bits.toString(36)}:${this.hashes}`.padEnd(16, '.');
    this.scripts = defineCacheScripts(redis);
    this.locks = options.locks;
    this.buildTtlMs = options.buildTtlMs ?? 3600_000;
    this.batchSize = options.batchSize ?? 1000;
  }

  /** The k bit offsets of an id (Kirsch–Mitzenmacher double hashing), past the header. */
  offsets(id: string): number[] {
    const digest = createHash('sha256').update(id, 'utf8').digest();
    // Two 48-bit hashes: h1 + i * h2 stays below 2^53 for i < 32, exact in a double.
    const h1 = digest.readUIntBE(0, 6);
    let h2 = digest.readUIntBE(6, 6) % this.bits;
    if (h2 === 0) h2 = 1;
    const offsets: number[] = [];
    for (let i = 0; i < this.hashes; i += 1) offsets.push(HEADER_BITS + ((h1 + i * h2) % this.bits));
    return offsets;
  }

  async check(id: string): Promise<BloomAnswer> {
    const answer = await this.scripts.bloomCheck(this.liveKey, this.header, ...this.offsets(id));
    return answer === 1 ? 'maybe' : answer === 0 ? 'absent' : 'not-built';
  }

  /** False only when the id is certainly not among the ids added. */
  async mightContain(id: string): Promise<boolean> {
    return (await this.check(id)) !== 'absent';
  }

  /**
   * Adds ids to the live filter and to one being rebuilt. Call it before the new ids become
   * visible (inside the creating transaction: a filter that lacks a real id rejects it) and once
   * more after the commit (a rebuild begun in between did not see the uncommitted rows).
   * Does nothing while no filter is built (then nothing is rejected either).
   */
  async add(...ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.scripts.bloomAdd(2, this.liveKey, this.buildingKey, this.header, ...ids.flatMap((id) => this.offsets(id)));
  }

  /** Whether a usable filter (these m and k) is live. */
  async isBuilt(): Promise<boolean> {
    return (await this.scripts.bloomCheck(this.liveKey, this.header)) === 1;
  }

  /**
   * Builds the filter from every id of `source` into `bloom:{name}:building`, then RENAMEs it over
   * the live one: the live filter stays usable throughout, and ids added meanwhile (add() writes
   * both bitmaps) survive the swap. Rebuilds of one filter run one at a time across instances.
   * Returns the number of ids added.
   */
  async rebuild(source: IdSource): Promise<number> {
    return this.locks.withLock(`bloom-rebuild:${this.name}`, () => this.build(source));
  }

  /** Rebuilds only if no usable filter is live (first start, lost Redis data, changed m or k). */
  async ensureBuilt(source: IdSource): Promise<number | null> {
    if (await this.isBuilt()) return null;
    return this.locks.withLock(`bloom-rebuild:${this.name}`, async () => ((await this.isBuilt()) ? null : this.build(source)));
  }

  private async build(source: IdSource): Promise<number> {
    // The empty bitmap exists before the source is read: an id committed after the read began
    // is added to it by add(), one committed before is in the read.
    await this.scripts.bloomBegin(this.buildingKey, this.header, HEADER_BITS + this.bits - 1, this.buildTtlMs);
    let count = 0;
    for await (const batch of source()) {
      for (let i = 0; i < batch.length; i += this.batchSize) {
        const ids = batch.slice(i, i + this.batchSize);
        await this.scripts.bloomAdd(1, this.buildingKey, this.header, ...ids.flatMap((id) => this.offsets(id)));
        count += ids.length;
      }
    }
    if ((await this.scripts.bloomPublish(this.buildingKey, this.liveKey, this.header)) !== 1) {
      throw new Error(`Bloom filter ${this.name}: the bitmap being built disappeared before it was published (expired?)`);
    }
    return count;
  }
}
