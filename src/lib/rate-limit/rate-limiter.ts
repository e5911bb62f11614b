import type { Cluster, Redis } from 'ioredis';
import { defineScripts, readLua } from '../redis-scripts/index.js';
import { SmartBatcher, slotLanes } from '../smart-batch/index.js';

type RedisClient = Redis | Cluster;

/** What the limiter's script takes and returns. */
interface LimiterScripts {
  /** fixed-window.lua; the number of keys comes first (it varies per call). Two numbers per event. */
  fixedWindow(numberOfKeys: number, ...keysThenArgs: Array<string | number>): Promise<number[]>;
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
  /** Most events per script call (default 256). */
  maxBatch?: number;
  /** Each script call's number of events as it goes out (metrics). */
  onBatch?: (size: number) => void;
}

const ALLOWED: RateLimitDecision = { allowed: true };
/** Events per script call: a few commands each, so a full call stays well under a millisecond of Redis. */
const DEFAULT_MAX_BATCH = 256;
/** Upper bound of remembered refusals; beyond it, expired ones are dropped (then all, if need be). */
const MAX_REMEMBERED_REFUSALS = 10_000;
/** Upper bound of subjects with local-burst state (a second of a busy sale's buyers). */
const MAX_LOCAL_WINDOWS = 100_000;

/** One counter an event charges, as fixed-window.lua takes it. */
interface Charge {
  key: string;
  limit: number;
  windowMs: number;
  /** Events let through locally before this one, charged now. */
  earlier: number;
  cost: number;
}

/** An event's outcome: 0 when allowed, else the 1-based index of its refusing charge; and that counter's ms left. */
type Verdict = [refused: number, ttlMs: number];

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
 * - Events are checked in batches (smart batching, src/lib/smart-batch): an event goes out at once
 *   when no call is out; the events that arrive meanwhile go together in the next call, one
 *   script run deciding them in arrival order, each as it would be decided alone. On a standalone
 *   Redis one call is out at a time for all events; on a Cluster one per slot, and an event whose
 *   checks live in different slots sends each check to its slot's call (still one round trip of
 *   latency), so there a refusal by one rule may have charged the others.
 * - All or nothing (standalone): an event refused by any rule is counted by none.
 * - A refusal is remembered in the process until its window ends: a client that keeps trying is
 *   refused from memory, without a Redis command, so a flood costs Redis one command per window.
 */
export class RateLimiter {
  private readonly refusedUntil = new Map<string, { rule: string; until: number }>();
  private readonly localWindows = new Map<string, LocalWindow>();
  private readonly now: () => number;
  private readonly scripts: LimiterScripts;
  /** Events waiting for a call, by lane: one lane on a standalone Redis, one per slot on a Cluster. */
  private readonly batcher: SmartBatcher<Charge[], Verdict>;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: RateLimiterOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.scripts = defineScripts<LimiterScripts>(redis, 'rateLimit', { fixedWindow: { keys: 'dynamic', lua: FIXED_WINDOW_LUA } });
    const laneOfKey = slotLanes(redis);
    this.batcher = new SmartBatcher<Charge[], Verdict>({
      // On a Cluster every event sent has one charge (consume splits them): its counter's slot.
      laneOf: (event) => laneOfKey(event[0]!.key),
      decide: (events) => this.decide(events),
      maxBatch: options.maxBatch ?? DEFAULT_MAX_BATCH,
      onBatch: options.onBatch,
    });
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
    const charges = this.chargesOf(active);
    const [index, ttlMs] = this.redis.isCluster && charges.length > 1 ? await this.eachInItsSlot(charges) : await this.batcher.submit(charges);
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

  /** The counters this event charges, each with the events let through locally before it. */
  private chargesOf(checks: readonly RateLimitCheck[]): Charge[] {
    const now = this.now();
    return checks.map((check) => {
      const key = keyOf(check);
      const { rule, cost = 1 } = check;
      return { key, limit: rule.limit, windowMs: rule.windowSeconds * 1000, earlier: this.takeUncharged(key, now), cost };
    });
  }

  /** Events let through locally on the counter, now charged to Redis by this event. */
  private takeUncharged(key: string, now: number): number {
    const window = this.localWindows.get(key);
    if (window === undefined || window.until <= now) return 0;
    const uncharged = window.uncharged;
    window.uncharged = 0;
    return uncharged;
  }

  private dropEndedLocalWindows(now: number): void {
    for (const [key, window] of this.localWindows) if (window.until <= now) this.localWindows.delete(key);
    if (this.localWindows.size >= MAX_LOCAL_WINDOWS) this.localWindows.clear();
  }

  /** One fixed-window.lua call for a batch of events: a verdict per event, in order. */
  private async decide(events: Charge[][]): Promise<Verdict[]> {
    const keys: string[] = [];
    const args: number[] = [events.length];
    for (const event of events) {
      args.push(event.length);
      for (const { key, limit, windowMs, earlier, cost } of event) {
        keys.push(key);
        args.push(limit, windowMs, earlier, cost);
      }
    }
    const flat = await this.scripts.fixedWindow(keys.length, ...keys, ...args);
    return events.map((_, i) => [flat[2 * i]!, flat[2 * i + 1]!]);
  }

  /** Cluster: each charge in its own slot's call; the first refusing charge in order wins. */
  private async eachInItsSlot(charges: readonly Charge[]): Promise<Verdict> {
    const verdicts = await Promise.all(charges.map((charge) => this.batcher.submit([charge])));
    const refused = verdicts.findIndex(([index]) => index !== 0);
    return refused === -1 ? [0, 0] : [refused + 1, verdicts[refused]![1]];
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
