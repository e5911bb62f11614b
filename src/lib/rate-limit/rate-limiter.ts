import type { Cluster, Redis } from 'ioredis';
import { defineScripts, readLua } from '../redis-scripts/index.js';

type RedisClient = Redis | Cluster;

/** What the limiter's script takes and returns. */
interface LimiterScripts {
  /** fixed-window.lua; the number of keys comes first (it varies per call). */
  fixedWindow(numberOfKeys: number, ...keysThenArgs: Array<string | number>): Promise<[number, number]>;
}

const FIXED_WINDOW_LUA = readLua(import.meta.url, 'fixed-window.lua');

/** One fixed-window limit: at most `limit` events per `windowSeconds` for each subject. 0 = off. */
export interface RateLimitRule {
  /** Unique name of the rule, part of the Redis key `rl:{name}:{subject}`. */
  name: string;
  /** Allowed events per window; 0 turns the rule off. */
  limit: number;
  windowSeconds: number;
  /**
   * Events per subject each process may let through without asking Redis (default 0: every event
   * is checked). They are charged to Redis with the subject's next checked event; once a subject
   * used its burst, its events are checked in Redis for the rest of the window. So with P
   * processes at most limit + P × localBurst events pass per window (a single rule in one process
   * stays exact). Saves the round trip for subjects that come once or twice a window, e.g. the
   * buyers of a sale.
   */
  localBurst?: number;
}

/** One event to count: a rule and whom it is about (a user id, an IP address, a phone number). */
export interface RateLimitCheck {
  rule: RateLimitRule;
  subject: string;
  /**
   * What the event counts for (default 1), e.g. its size in bytes for a byte quota. A check with a
   * cost above 1 never uses the local burst, and its refusal is not remembered: a smaller event
   * may still fit in what is left of the window.
   */
  cost?: number;
}

export type RateLimitDecision = { allowed: true } | { allowed: false; rule: string; retryAfterMs: number };

export interface RateLimiterOptions {
  /** Called once per refusal with the refusing rule's name (metrics). */
  onReject?: (rule: string) => void;
  /** Millisecond clock of the local refusal memory (default `Date.now`). */
  now?: () => number;
}

const ALLOWED: RateLimitDecision = { allowed: true };
/** Upper bound of remembered refusals; beyond it, expired ones are dropped (then all, if need be). */
const MAX_REMEMBERED_REFUSALS = 10_000;
/** Upper bound of subjects with local-burst state (a second of a busy sale's buyers). */
const MAX_LOCAL_WINDOWS = 100_000;

/** This process' view of one counter's window for the local burst. */
interface LocalWindow {
  until: number;
  /** Events let through locally and not yet charged to Redis. */
  uncharged: number;
  /** The burst was used up: every further event of the window is checked in Redis. */
  checked: boolean;
}

/**
 * Fixed-window rate limits on Redis, shared by every instance: counter `rl:{rule}:{subject}`,
 * a string whose TTL is the window, started by the first event (fixed-window.lua).
 *
 * - Several checks (e.g. per user and per IP) cost one script call on a standalone Redis, which
 *   also joins ioredis' auto-pipeline with other requests' commands. On a Cluster the keys live in
 *   different slots, so each gets its own call, sent in parallel (still one round trip of latency);
 *   there a refusal by one rule may have charged the others.
 * - All or nothing: an event refused by any rule is counted by none.
 * - A refusal is remembered in the process until its window ends: a client that keeps trying is
 *   refused from memory, without a Redis command, so a flood costs Redis one command per window.
 */
export class RateLimiter {
  private readonly refusedUntil = new Map<string, { rule: string; until: number }>();
  private readonly localWindows = new Map<string, LocalWindow>();
  private readonly now: () => number;
  private readonly scripts: LimiterScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: RateLimiterOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.scripts = defineScripts<LimiterScripts>(redis, 'rateLimit', { fixedWindow: { keys: 'dynamic', lua: FIXED_WINDOW_LUA } });
  }

  /** Counts one event against every check (rules with limit 0 are skipped). */
  async consume(checks: readonly RateLimitCheck[]): Promise<RateLimitDecision> {
    const active = checks.filter((check) => check.rule.limit > 0);
    if (active.length === 0) return ALLOWED;
    const remembered = this.refusedFromMemory(active);
    if (remembered) return this.refuse(remembered.rule, remembered.retryAfterMs, null);
    const windows = this.localWindowsOf(active);
    if (windows !== null) {
      // Every rule still has local burst left: no Redis command for this event.
      for (const window of windows) window.uncharged += 1;
      return ALLOWED;
    }
    const charges = this.takeUncharged(active);
    const [index, ttlMs] = this.redis.isCluster && active.length > 1 ? await this.runEachAlone(active, charges) : await this.run(active, charges);
    if (index === 0) return ALLOWED;
    const refused = active[index - 1]!;
    return this.refuse(refused.rule.name, ttlMs, (refused.cost ?? 1) > 1 ? null : keyOf(refused));
  }

  /** The local windows of the checks if every one has burst left, else null (those out of burst are marked checked). */
  private localWindowsOf(checks: readonly RateLimitCheck[]): LocalWindow[] | null {
    if (!checks.every(({ rule, cost = 1 }) => (rule.localBurst ?? 0) > 0 && cost === 1)) return null;
    const now = this.now();
    const windows = checks.map((check) => {
      const key = keyOf(check);
      let window = this.localWindows.get(key);
      if (window === undefined || window.until <= now) {
        if (this.localWindows.size >= MAX_LOCAL_WINDOWS) this.dropEndedLocalWindows(now);
        // Uncharged events of an ended window are dropped: they belonged to a window Redis no longer counts.
        window = { until: now + check.rule.windowSeconds * 1000, uncharged: 0, checked: false };
        this.localWindows.set(key, window);
      }
      return window;
    });
    const exhausted = windows.map((window, i) => window.checked || window.uncharged >= checks[i]!.rule.localBurst!);
    if (!exhausted.includes(true)) return windows;
    // Only the windows out of burst turn to Redis for good; the others are charged by this call and go on.
    windows.forEach((window, i) => (window.checked ||= exhausted[i]!));
    return null;
  }

  /** Events let through locally that this call charges to Redis, per check. */
  private takeUncharged(checks: readonly RateLimitCheck[]): number[] {
    if (this.localWindows.size === 0) return checks.map(() => 0);
    const now = this.now();
    return checks.map((check) => {
      const window = this.localWindows.get(keyOf(check));
      if (window === undefined || window.until <= now) return 0;
      const uncharged = window.uncharged;
      window.uncharged = 0;
      return uncharged;
    });
  }

  private dropEndedLocalWindows(now: number): void {
    for (const [key, window] of this.localWindows) if (window.until <= now) this.localWindows.delete(key);
    if (this.localWindows.size >= MAX_LOCAL_WINDOWS) this.localWindows.clear();
  }

  private run(checks: readonly RateLimitCheck[], charges: readonly number[]): Promise<[number, number]> {
    const keys = checks.map(keyOf);
    const args = checks.flatMap(({ rule, cost = 1 }, i) => [rule.limit, rule.windowSeconds * 1000, charges[i] ?? 0, cost]);
    return this.scripts.fixedWindow(keys.length, ...keys, ...args);
  }

  /** One call per key (Cluster: different slots); the first refusing check in order wins. */
  private async runEachAlone(checks: readonly RateLimitCheck[], charges: readonly number[]): Promise<[number, number]> {
    const results = await Promise.all(checks.map((check, i) => this.run([check], [charges[i] ?? 0])));
    const refused = results.findIndex(([index]) => index !== 0);
    return refused === -1 ? [0, 0] : [refused + 1, results[refused]![1]];
  }

  /**
   * A refusal this process already knows of (no Redis command), else null. Lets a caller turn a
   * known flood away before spending anything else on it; `consume` checks it too.
   */
  rememberedRefusal(checks: readonly RateLimitCheck[]): RateLimitDecision | null {
    const remembered = this.refusedFromMemory(checks.filter((check) => check.rule.limit > 0));
    return remembered ? this.refuse(remembered.rule, remembered.retryAfterMs, null) : null;
  }

  private refusedFromMemory(checks: readonly RateLimitCheck[]): { rule: string; retryAfterMs: number } | null {
    if (this.refusedUntil.size === 0) return null;
    const now = this.now();
    for (const check of checks) {
      const key = keyOf(check);
      const refusal = this.refusedUntil.get(key);
      if (refusal === undefined) continue;
      if (refusal.until > now) return { rule: refusal.rule, retryAfterMs: refusal.until - now };
      this.refusedUntil.delete(key);
    }
    return null;
  }

  private refuse(rule: string, retryAfterMs: number, key: string | null): RateLimitDecision {
    if (key !== null) this.remember(key, rule, this.now() + retryAfterMs);
    this.options.onReject?.(rule);
    return { allowed: false, rule, retryAfterMs };
  }

  private remember(key: string, rule: string, until: number): void {
    if (this.refusedUntil.size >= MAX_REMEMBERED_REFUSALS) {
      const now = this.now();
      for (const [remembered, refusal] of this.refusedUntil) if (refusal.until <= now) this.refusedUntil.delete(remembered);
      if (this.refusedUntil.size >= MAX_REMEMBERED_REFUSALS) this.refusedUntil.clear();
    }
    this.refusedUntil.set(key, { rule, until });
  }
}

const keyOf = ({ rule, subject }: RateLimitCheck): string => `rl:${rule.name}:${subject}`;

/** A fixed set of rules about one kind of subject, e.g. "one per 60 s and ten per day" per phone. */
export class RateLimit {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly rules: readonly RateLimitRule[],
  ) {}

  /** Counts one event of the subject, worth `cost` (default 1) against every rule. */
  consume(subject: string, cost = 1): Promise<RateLimitDecision> {
    return this.limiter.consume(this.rules.map((rule) => ({ rule, subject, cost })));
  }
}
