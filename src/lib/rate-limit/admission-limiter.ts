import type { Cluster, Redis } from 'ioredis';
import { defineScripts, readLua } from '../redis-scripts/index.js';

type RedisClient = Redis | Cluster;

/** What the limiter's script takes and returns: {tokens granted, ms left in the second}. */
interface AdmissionScripts {
  admissionLease(key: string, ratePerSecond: number, wanted: number): Promise<[number, number]>;
}

const ADMISSION_LEASE_LUA = readLua(import.meta.url, 'admission-lease.lua');

export interface AdmissionLimiterOptions {
  /** Part of the Redis key `rl:{name}:{subject}`, e.g. "sale". */
  name: string;
  /** Admissions per subject per second across all instances; 0 turns the limiter off. */
  ratePerSecond: number;
  /**
   * Tokens leased per Redis round trip. Default: 1 % of the rate (at least 1), so a subject costs
   * Redis at most ~100 leases a second however many requests arrive.
   */
  blockSize?: number;
  /** Called once per refusal (metrics). */
  onReject?: () => void;
  /** Millisecond clock (default `performance.now`-based monotonic time). */
  now?: () => number;
}

export type AdmissionDecision = { admitted: true } | { admitted: false; retryAfterMs: number };

interface Window {
  /** Leased tokens not handed out yet. */
  tokens: number;
  /** Local time at which the Redis second of the lease ends. */
  until: number;
  /** The second's budget is used up across all instances: refuse until `until`. */
  exhausted: boolean;
}

const ADMITTED: AdmissionDecision = { admitted: true };
const MAX_SUBJECTS = 10_000;

/**
 * A global admission rate per subject (e.g. per sale), shared by all instances, that costs less
 * than what it protects: each instance leases tokens of the current second from Redis in blocks
 * (one script call per block, admission-lease.lua, like src/lib/id's blocks) and hands them out
 * from memory. Once Redis says the second is used up, the instance refuses from memory until the
 * second ends, so load beyond the rate never reaches Redis at all.
 *
 * Windows are Redis' seconds (its TIME), so skewed instance clocks still share one window. The
 * price of blocks: tokens an instance leased but did not use by the end of the second are lost,
 * at most `blockSize` per instance per second; near the limit, admissions can fall that much
 * short of the rate. Above it (the case it is for) every instance uses its blocks up.
 */
export class AdmissionLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly leases = new Map<string, Promise<void>>();
  private readonly blockSize: number;
  private readonly now: () => number;
  private readonly scripts: AdmissionScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: AdmissionLimiterOptions,
  ) {
    const { ratePerSecond } = options;
    if (!Number.isInteger(ratePerSecond) || ratePerSecond < 0) throw new RangeError('ratePerSecond must be a whole number ≥ 0');
    this.blockSize = options.blockSize ?? Math.max(1, Math.ceil(ratePerSecond / 100));
    if (!Number.isInteger(this.blockSize) || this.blockSize < 1) throw new RangeError('blockSize must be a whole number ≥ 1');
    this.now = options.now ?? (() => performance.now());
    this.scripts = defineScripts<AdmissionScripts>(redis, 'rateLimit', { admissionLease: { keys: 1, lua: ADMISSION_LEASE_LUA } });
  }

  get enabled(): boolean {
    return this.options.ratePerSecond > 0;
  }

  /** Admits one request of `subject`, or says how long until the next second's budget. */
  async admit(subject: string): Promise<AdmissionDecision> {
    if (!this.enabled) return ADMITTED;
    for (;;) {
      const window = this.windows.get(subject);
      const now = this.now();
      if (window !== undefined && now < window.until) {
        if (window.tokens > 0) {
          window.tokens -= 1;
          return ADMITTED;
        }
        if (window.exhausted) {
          this.options.onReject?.();
          return { admitted: false, retryAfterMs: window.until - now };
        }
      }
      await this.lease(subject);
    }
  }

  /** One lease per subject at a time: concurrent callers wait for the same round trip. */
  private lease(subject: string): Promise<void> {
    let lease = this.leases.get(subject);
    if (lease === undefined) {
      lease = this.leaseNow(subject).finally(() => this.leases.delete(subject));
      this.leases.set(subject, lease);
    }
    return lease;
  }

  private async leaseNow(subject: string): Promise<void> {
    const sent = this.now();
    const [granted, msLeft] = await this.scripts.admissionLease(`rl:${this.options.name}:${subject}`, this.options.ratePerSecond, this.blockSize);
    if (this.windows.size >= MAX_SUBJECTS && !this.windows.has(subject)) this.dropEnded();
    // Measured from when the call was sent: the second may end a little early here, never late.
    this.windows.set(subject, { tokens: granted, until: sent + msLeft, exhausted: granted < this.blockSize });
  }

  private dropEnded(): void {
    const now = this.now();
    for (const [subject, window] of this.windows) if (window.until <= now) this.windows.delete(subject);
    if (this.windows.size >= MAX_SUBJECTS) this.windows.clear();
  }
}
