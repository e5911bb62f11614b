import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Result } from 'ioredis';
import type { RedisClient } from '../../infra/redis.js';

export type CodeCheck = 'valid' | 'wrong' | 'missing';

const VERIFY_SCRIPT = readFileSync(new URL('../user/lua/verify-login-code.lua', import.meta.url), 'utf8');

declare module 'ioredis' {
  interface RedisCommander<Context> {
    verifyLoginCode(key: string, code: string, maxAttempts: number): Result<number, Context>;
  }
}

/**
 * One-time login codes: `login:code:{phone}` hash {code, attempts} with a TTL.
 * A code works once; a few wrong tries burn it so six digits cannot be brute-forced.
 */
export class LoginCodeStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly options: { ttlSeconds: number; maxAttempts: number },
  ) {
    redis.defineCommand('verifyLoginCode', { numberOfKeys: 1, lua: VERIFY_SCRIPT });
  }

  /** Issues a fresh 6-digit code for the phone, replacing any earlier one. */
  async issue(phone: string): Promise<string> {
    const code = randomInt(0, 1_000_000).toString().padStart(6, '0');
    const key = codeKey(phone);
    await this.redis.multi().del(key).hset(key, { code, attempts: 0 }).expire(key, this.options.ttlSeconds).exec();
    return code;
  }

  async check(phone: string, code: string): Promise<CodeCheck> {
    const outcome = await this.redis.verifyLoginCode(codeKey(phone), code, this.options.maxAttempts);
    if (outcome === 1) return 'valid';
    return outcome === 0 ? 'wrong' : 'missing';
  }
}

export const codeKey = (phone: string): string => `login:code:${phone}`;
