import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Result } from 'ioredis';
import type { RedisClient } from '../../infra/redis.js';

/** What a session remembers of its user: hmdp's UserDTO. */
export interface SessionUser {
  id: string;
  nickName: string;
  icon: string;
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    sessionTouch(key: string, ttlSeconds: number): Result<string[], Context>;
  }
}

const TOUCH_SESSION_LUA = readFileSync(new URL('./touch-session.lua', import.meta.url), 'utf8');

const TOKEN_BYTES = 32; // 256 bits of entropy, well above the 128 required for unguessable tokens

/**
 * Login sessions in Redis: `login:token:{sha256(token)}` hash {id, nickName, icon} with a TTL
 * that every authenticated request renews (sliding expiry).
 *
 * The key holds a hash of the token, not the token: whoever can read Redis (a replica, a dump,
 * MONITOR) still cannot impersonate a user.
 */
export class SessionStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly ttlSeconds: number,
  ) {
    redis.defineCommand('sessionTouch', { numberOfKeys: 1, lua: TOUCH_SESSION_LUA });
  }

  async create(user: SessionUser): Promise<string> {
    const token = randomBytes(TOKEN_BYTES).toString('base64url');
    const key = sessionKey(token);
    await this.redis.multi().hset(key, { ...user }).expire(key, this.ttlSeconds).exec();
    return token;
  }

  /** The session's user, renewing its TTL; null if the token is unknown or expired. */
  async touch(token: string): Promise<SessionUser | null> {
    const flat = await this.redis.sessionTouch(sessionKey(token), this.ttlSeconds);
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
    return toSessionUser(fields);
  }

  async delete(token: string): Promise<boolean> {
    return (await this.redis.del(sessionKey(token))) === 1;
  }
}

export function sessionKey(token: string): string {
  return `login:token:${createHash('sha256').update(token).digest('hex')}`;
}

function toSessionUser(fields: Record<string, string> | undefined): SessionUser | null {
  if (fields?.id === undefined) return null;
  return { id: fields.id, nickName: fields.nickName ?? '', icon: fields.icon ?? '' };
}
