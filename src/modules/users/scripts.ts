import type { RedisClient } from '../../infra/redis.js';
import type { UserRole } from '../../infra/schema.js';
import { defineScripts, readLua } from '../../lib/redis-scripts/index.js';

/** The users' Lua scripts (lua/*.lua, each with its KEYS/ARGV/returns header): what they take and return. */
export interface UserScripts {
  /** The session hash as a flat field/value list (empty: no session, or past its deadline), its TTL renewed up to its deadline. */
  touchSession(key: string, ttlSeconds: number, maxAgeSeconds: number): Promise<string[]>;
  /** 1 updated, 0 no such session. */
  setSessionRole(key: string, role: UserRole): Promise<number>;
  /** 1 valid (code used up), 0 wrong (attempt counted), -1 no code. */
  verifyLoginCode(key: string, code: string, maxAttempts: number): Promise<number>;
  /** 1 deleted, 0 the key holds another code or none. */
  discardLoginCode(key: string, code: string): Promise<number>;
}

const SOURCES = {
  touchSession: { keys: 1, lua: readLua(import.meta.url, 'lua/touch-session.lua') },
  setSessionRole: { keys: 1, lua: readLua(import.meta.url, 'lua/session-set-role.lua') },
  verifyLoginCode: { keys: 1, lua: readLua(import.meta.url, 'lua/verify-login-code.lua') },
  discardLoginCode: { keys: 1, lua: readLua(import.meta.url, 'lua/discard-login-code.lua') },
} as const;

export const defineUserScripts = (redis: RedisClient): UserScripts => defineScripts<UserScripts>(redis, 'users', SOURCES);
