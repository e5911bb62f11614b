import type { RedisClient } from '../../../infra/redis.js';
import { defineScripts, readLua } from '../../../lib/redis-scripts/index.js';
import { purchaseTokenKey } from '../keys.js';

interface SpentTokenScripts {
  /** 1 spent on this order, 0 spent already on another. */
  spend(key: string, idempotencyKey: string, keepMs: number): Promise<number>;
  /** 1 given back, 0 kept spent. */
  giveBack(key: string): Promise<number>;
}

/** Instances' clocks may differ by this much: a spent token's mark outlives its expiry by it. */
const CLOCK_SKEW_MARGIN_MS = 60_000;

/**
 * The purchase tokens that bought an order, by nonce, until they expire (lua/token-spend.lua,
 * lua/token-give-back.lua): what makes a signed, stateless token single-use across instances.
 */
export class SpentTokens {
  private readonly scripts: SpentTokenScripts;

  constructor(
    redis: RedisClient,
    private readonly now: () => number = Date.now,
  ) {
    this.scripts = defineScripts<SpentTokenScripts>(redis, 'purchaseToken', {
      spend: { keys: 1, lua: readLua(import.meta.url, 'lua/token-spend.lua') },
      giveBack: { keys: 1, lua: readLua(import.meta.url, 'lua/token-give-back.lua') },
    });
  }

  /** False when the token bought another order (another Idempotency-Key, or none) already. */
  async spend(nonce: string, expiresAt: number, idempotencyKey: string | undefined): Promise<boolean> {
    const keepMs = Math.max(1, expiresAt - this.now()) + CLOCK_SKEW_MARGIN_MS;
    return (await this.scripts.spend(purchaseTokenKey(nonce), idempotencyKey ?? '', keepMs)) === 1;
  }

  async giveBack(nonce: string): Promise<void> {
    await this.scripts.giveBack(purchaseTokenKey(nonce));
  }
}
