import type { RedisClient } from '../../infra/redis.js';
import { defineScripts, readLua } from '../../lib/redis-scripts/index.js';

/** The social features' Lua scripts (lua/*.lua, each with its KEYS/ARGV/returns header): what they take and return. */
export interface SocialScripts {
  /** 1 the user now likes the blog, -1 the like was removed. */
  likeToggle(key: string, userId: string, nowMs: number): Promise<number>;
  /** Entries trimmed from the inbox. */
  feedPush(key: string, score: number, blogId: string, maxLength: number): Promise<number>;
  /** 1 the follows set exists (and was updated), 0 it does not. */
  setIfExists(key: string, op: 'add' | 'remove', member: string): Promise<number>;
}

const SOURCES = {
  likeToggle: { keys: 1, lua: readLua(import.meta.url, 'lua/like-toggle.lua') },
  feedPush: { keys: 1, lua: readLua(import.meta.url, 'lua/feed-push.lua') },
  setIfExists: { keys: 1, lua: readLua(import.meta.url, 'lua/set-if-exists.lua') },
} as const;

export const defineSocialScripts = (redis: RedisClient): SocialScripts => defineScripts<SocialScripts>(redis, 'social', SOURCES);
