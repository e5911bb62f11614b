import type { RedisClient } from '../../../infra/redis.js';
import { defineScripts, readLua } from '../../../lib/redis-scripts/index.js';
import { SmartBatcher, slotLanes } from '../../../lib/smart-batch/index.js';
import { purchaseTokenKey } from '../keys.js';

interface SpentTokenScripts {
  /** KEYS: one token key per spend; ARGV: per spend its Idempotency-Key ('' without one) and ms to keep the mark. Per spend 1 spent on this order, 0 spent already on another. */
  spend(numberOfKeys: number, ...keysThenArgs: Array<string | number>): Promise<number[]>;
  /** 1 given back, 0 kept spent. */
  giveBack(key: string): Promise<number>;
}

/** One spend as token-spend.lua takes it. */
interface Spend {
  key: string;
  idempotencyKey: string;
  keepMs: number;
}

export interface SpentTokensOptions {
  /** Millisecond clock (default `Date.now`). */
  now?: () => number;
  /** Each script call's number of spends as it goes out. */
  onBatch?: (size: number) => void;
}

/** Instances' clocks may differ by this much: a spent token's mark outlives its expiry by it. */
const CLOCK_SKEW_MARGIN_MS = 60_000;
/** Spends per script call: a few commands each. */
const MAX_BATCH = 256;

/**
 * The purchase tokens that bought an order, by nonce, until they expire (lua/token-spend.lua,
 * lua/token-give-back.lua): what makes a signed, stateless token single-use across instances.
 * Spends go in batches as the sale's decisions do (smart batching, src/lib/smart-batch): one call
 * out at a time (per slot on a Cluster), the spends that arrive meanwhile in the next, decided in
 * arrival order, each as alone.
 */
export class SpentTokens {
  private readonly scripts: SpentTokenScripts;
  private readonly now: () => number;
  private readonly batcher: SmartBatcher<Spend, boolean>;

  constructor(redis: RedisClient, options: SpentTokensOptions = {}) {
    this.now = options.now ?? Date.now;
    this.scripts = defineScripts<SpentTokenScripts>(redis, 'purchaseToken', {
      spend: { keys: 'dynamic', lua: readLua(import.meta.url, 'lua/token-spend.lua') },
      giveBack: { keys: 1, lua: readLua(import.meta.url, 'lua/token-give-back.lua') },
    });
    const laneOfKey = slotLanes(redis);
    this.batcher = new SmartBatcher<Spend, boolean>({
      laneOf: ({ key }) => laneOfKey(key),
      decide: (spends) => this.decide(spends),
      maxBatch: MAX_BATCH,
      onBatch: options.onBatch,
    });
  }

  /** False when the token bought another order (another Idempotency-Key, or none) already. */
  spend(nonce: string, expiresAt: number, idempotencyKey: string | undefined): Promise<boolean> {
    const keepMs = Math.max(1, expiresAt - this.now()) + CLOCK_SKEW_MARGIN_MS;
    return this.batcher.submit({ key: purchaseTokenKey(nonce), idempotencyKey: idempotencyKey ?? '', keepMs });
  }

  async giveBack(nonce: string): Promise<void> {
    await this.scripts.giveBack(purchaseTokenKey(nonce));
  }

  private async decide(spends: Spend[]): Promise<boolean[]> {
    const args = spends.flatMap(({ idempotencyKey, keepMs }) => [idempotencyKey, keepMs]);
    const spent = await this.scripts.spend(spends.length, ...spends.map(({ key }) => key), ...args);
    return spent.map((one) => one === 1);
  }
}
