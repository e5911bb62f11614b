import { readFileSync } from 'node:fs';
import type { Cluster, Redis, Result } from 'ioredis';

type RedisClient = Redis | Cluster;

const FIXED_WINDOW_LUA = readFileSync(new URL('./fixed-window.lua', import.meta.url), 'utf8');

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** fixed-window.lua; the number of keys comes first (it varies per call). */
    rateLimitFixedWindow(numberOfKeys: number, ...keysThenArgs: Array<string | number>): Result<[number, number], Context>;
  }
}

/** One fixed-window limit: at most `limit` events per `windowSeconds` for each subject. 0 = off. */
export interface RateLimitRule {
  /** Unique name of the rule, part of the Redis key `rl:{name}:{subject}`. */
  name: string;
  /** Allowed events per window; 0 turns the rule off. */
  limit: number;
  windowSeconds: number;
}

/** One event to count: a rule and whom it is about (a user id, an IP address, a phone number). */
export interface RateLimitCheck {
  rule: RateLimitRule;
  subject: string;
}

export type RateLimitDecision =
  | { allowed: true }
  | { allowed: false; rule: string; retryAfterMs: number };

export interface RateLimiterOptions {
  /** Called once per refusal with the refusing rule's name (metrics). */
  onReject?: (rule: string) => void;
  /** Millisecond clock of the local refusal memory (default `Date.now`). */
  now?: () => number;
}

const ALLOWED: RateLimitDecision = { allowed: true };
/** Upper bound of remembered refusals; beyond it, expired ones are dropped (then all, if need be). */
const MAX_REMEMBERED_REFUSALS = 10_000;

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
  private readonly now: () => number;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: RateLimiterOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    redis.defineCommand('rateLimitFixedWindow', { lua: FIXED_WINDOW_LUA });
  }

  /** Counts one event against every check (rules with limit 0 are skipped). */
  async consume(checks: readonly RateLimitCheck[]): Promise<RateLimitDecision> {
    const active = checks.filter((check) => check.rule.limit > 0);
    if (active.length === 0) return ALLOWED;
    const remembered = this.refusedFromMemory(active);
    if (remembered) return this.refuse(remembered.rule, remembered.retryAfterMs, null);
    const [index, ttlMs] =
      this.redis.isCluster && active.length > 1 ? await this.runEachAlone(active) : await this.run(active);
    if (index === 0) return ALLOWED;
    const refused = active[index - 1]!;
    return this.refuse(refused.rule.name, ttlMs, keyOf(refused));
  }

  private run(checks: readonly RateLimitCheck[]): Promise<[number, number]> {
    const keys = checks.map(keyOf);
    const args = checks.flatMap(({ rule }) => [rule.limit, rule.windowSeconds * 1000]);
    return this.redis.rateLimitFixedWindow(keys.length, ...keys, ...args);
  }

  /** One call per key (Cluster: different slots); the first refusing check in order wins. */
  private async runEachAlone(checks: readonly RateLimitCheck[]): Promise<[number, number]> {
    const results = await Promise.all(checks.map((check) => this.run([check])));
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

  consume(subject: string): Promise<RateLimitDecision> {
    return this.limiter.consume(this.rules.map((rule) => ({ rule, subject })));
  }
}
