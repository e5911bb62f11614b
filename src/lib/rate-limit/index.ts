import type { Cluster, Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

/**
 * Several fixed-window limits checked together, e.g. "one per 60 s and ten per day".
 *
 * Counting is done by rate-limiter-flexible (atomic INCR + EXPIRE in Lua on Redis), so the
 * limit holds across all app instances. Keys: `rl:{rule}:{subject}` strings, TTL = the window.
 */
export interface RateLimitRule {
  /** Unique name of the rule, part of the Redis key. */
  name: string;
  /** Allowed events per window. */
  limit: number;
  windowSeconds: number;
}

export type RateLimitDecision =
  | { allowed: true }
  | { allowed: false; rule: string; retryAfterMs: number };

export class RateLimit {
  private readonly limiters: Array<{ rule: RateLimitRule; limiter: RateLimiterRedis }>;

  constructor(redis: Redis | Cluster, rules: RateLimitRule[]) {
    this.limiters = rules.map((rule) => ({
      rule,
      limiter: new RateLimiterRedis({
        storeClient: redis,
        keyPrefix: `rl:${rule.name}`,
        points: rule.limit,
        duration: rule.windowSeconds,
      }),
    }));
  }

  /**
   * Counts one event for `subject` against every rule, in order, and stops at the first rule
   * that refuses (later rules are not charged for an event that will not happen).
   */
  async consume(subject: string): Promise<RateLimitDecision> {
    for (const { rule, limiter } of this.limiters) {
      try {
        await limiter.consume(subject);
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) {
          return { allowed: false, rule: rule.name, retryAfterMs: rejection.msBeforeNext };
        }
        throw rejection; // a Redis error, not a refusal
      }
    }
    return { allowed: true };
  }
}
