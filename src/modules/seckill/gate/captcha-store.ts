import svgCaptcha from 'svg-captcha';
import type { RedisClient } from '../../../infra/redis.js';
import { defineScripts, readLua } from '../../../lib/redis-scripts/index.js';
import { captchaKey } from '../keys.js';

interface CaptchaScripts {
  /** [0, 0] solved, [1, tries left] wrong, [2, 0] no challenge. */
  check(key: string, answer: string, allowedWrong: number): Promise<[number, number]>;
}

export type CaptchaCheck = { outcome: 'solved' } | { outcome: 'wrong'; triesLeft: number } | { outcome: 'missing' };

export interface CaptchaOptions {
  /** Wrong answers before the challenge is dropped. */
  tries: number;
  /** An unanswered challenge is dropped after this. */
  ttlSeconds?: number;
}

/** Four characters; those that look alike in the image are left out. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment -- svg-captcha's types declare its options as a class; it reads a plain object
const CAPTCHA_OPTIONS: Parameters<typeof svgCaptcha.create>[0] = { size: 4, noise: 2, ignoreChars: '0oO1lIi' };

/**
 * SVG captchas (svg-captcha) whose answers stay on the server, in Redis (one per user and sale;
 * a new one replaces the old): a right answer is good once, a few wrong ones drop it
 * (lua/captcha-check.lua, atomic across instances).
 */
export class CaptchaStore {
  private readonly scripts: CaptchaScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: CaptchaOptions,
  ) {
    this.scripts = defineScripts<CaptchaScripts>(redis, 'captcha', { check: { keys: 1, lua: readLua(import.meta.url, 'lua/captcha-check.lua') } });
  }

  /** A new challenge; returns its SVG image. */
  async create(userId: string, voucherId: string): Promise<string> {
    const { text, data } = svgCaptcha.create(CAPTCHA_OPTIONS);
    const key = captchaKey(voucherId, userId);
    await this.redis
      .multi()
      .del(key)
      .hset(key, 'answer', text.toLowerCase(), 'wrong', 0)
      .expire(key, this.options.ttlSeconds ?? 120)
      .exec();
    return data;
  }

  async check(userId: string, voucherId: string, answer: string): Promise<CaptchaCheck> {
    const [code, left] = await this.scripts.check(captchaKey(voucherId, userId), answer.trim().toLowerCase(), this.options.tries);
    if (code === 0) return { outcome: 'solved' };
    if (code === 1) return { outcome: 'wrong', triesLeft: left };
    return { outcome: 'missing' };
  }
}
