import { defineScripts, readLua } from '../redis-scripts/index.js';
import type { RedisClient } from './types.js';

/** A place in the binlog: the file and the offset of the next event to read. */
export interface BinlogPosition {
  file: string;
  position: number;
}

export interface SavedPosition extends BinlogPosition {
  /** Fencing token of the lease under which it was saved. */
  token: bigint;
  savedAt: number;
}

interface PositionScripts {
  save(key: string, file: string, position: number, token: string, savedAt: number): Promise<0 | 1>;
}

const SOURCES = { save: { keys: 1, lua: readLua(import.meta.url, 'position-save.lua') } } as const;

/**
 * A follower's binlog position in one Redis hash (`<name>`, the client's key prefix applied).
 * Saves are fenced: one carrying a lower token than the last save's is refused, atomically (Lua).
 */
export class PositionStore {
  private readonly scripts: PositionScripts;

  constructor(
    private readonly redis: RedisClient,
    readonly key: string,
  ) {
    this.scripts = defineScripts<PositionScripts>(redis, 'cdcPosition', SOURCES);
  }

  /** The last position saved, or undefined when none was (first start, lost Redis data). */
  async load(): Promise<SavedPosition | undefined> {
    const saved = await this.redis.hgetall(this.key);
    if (saved.file === undefined || saved.position === undefined) return undefined;
    return { file: saved.file, position: Number(saved.position), token: BigInt(saved.token ?? '0'), savedAt: Number(saved.savedAt ?? '0') };
  }

  /** Saves `position` under `token`; false when a save with a higher token came first (this saver is stale). */
  async save(position: BinlogPosition, token: bigint): Promise<boolean> {
    return (await this.scripts.save(this.key, position.file, position.position, token.toString(), Date.now())) === 1;
  }
}
