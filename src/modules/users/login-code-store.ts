import { randomInt } from 'node:crypto';
import type { RedisClient } from '../../infra/redis.js';
import { codeKey } from './keys.js';
import { defineUserScripts, type UserScripts } from './scripts.js';

export type CodeCheck = 'valid' | 'wrong' | 'missing';

/**
 * One-time login codes: `login:code:{phone}` hash {code, attempts} with a TTL.
 * A code works once; a few wrong tries burn it so six digits cannot be brute-forced.
 */
export class LoginCodeStore {
  private readonly scripts: UserScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: { ttlSeconds: number; maxAttempts: number },
  ) {
    this.scripts = defineUserScripts(redis);
  }

  /** Issues a fresh 6-digit code for the phone, replacing any earlier one. */
  async issue(phone: string): Promise<string> {
    const code = randomInt(0, 1_000_000).toString().padStart(6, '0');
    const key = codeKey(phone);
    await this.redis.multi().del(key).hset(key, { code, attempts: 0 }).expire(key, this.options.ttlSeconds).exec();
    return code;
  }

  /** Withdraws a code that could not be delivered (unless a newer code replaced it). */
  async discard(phone: string, code: string): Promise<void> {
    await this.scripts.discardLoginCode(codeKey(phone), code);
  }

  async check(phone: string, code: string): Promise<CodeCheck> {
    const outcome = await this.scripts.verifyLoginCode(codeKey(phone), code, this.options.maxAttempts);
    if (outcome === 1) return 'valid';
    return outcome === 0 ? 'wrong' : 'missing';
  }
}
