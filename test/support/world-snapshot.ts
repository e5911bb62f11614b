import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { testRedisUrl } from '../../kit/services.js';
import { scanKeys } from './redis.js';
import type { TestEnv } from './test-env.js';

/**
 * Everything a test env's requests can change, in comparable form: a CHECKSUM TABLE of every
 * table of its database, the value of every Redis key under its prefix (types and contents,
 * not TTLs: a request renews its session's TTL), and the list of uploaded files.
 */
export interface WorldSnapshot {
  tables: Record<string, string>;
  redis: Record<string, string>;
  files: string[];
}

/**
 * @param ignoreKeys keys (without the env's prefix) that may change on any request and are left
 *   out, e.g. visitor counts or rate-limit counters.
 */
export async function snapshotWorld(env: TestEnv, ignoreKeys: RegExp): Promise<WorldSnapshot> {
  const [tables, redis, files] = await Promise.all([checksumTables(env), redisContents(env, ignoreKeys), listFiles(env.config.upload.dir)]);
  return { tables, redis, files };
}

async function checksumTables(env: TestEnv): Promise<Record<string, string>> {
  const names = await sql<{
    name: string;
  }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name`.execute(env.db);
  const list = names.rows.map((row) => `\`${row.name}\``).join(', ');
  const sums = await sql<{ Table: string; Checksum: string | number | null }>`CHECKSUM TABLE ${sql.raw(list)} EXTENDED`.execute(env.db);
  return Object.fromEntries(sums.rows.map((row) => [row.Table.split('.').pop()!, String(row.Checksum)]));
}

async function redisContents(env: TestEnv, ignoreKeys: RegExp): Promise<Record<string, string>> {
  const raw = new Redis(testRedisUrl());
  try {
    const keys = (await scanKeys(`${env.keyPrefix}*`))
      .map((key) => key.slice(env.keyPrefix.length))
      .filter((key) => !ignoreKeys.test(key))
      .sort();
    const contents: Record<string, string> = {};
    for (const key of keys) contents[key] = await describeKey(raw, env.keyPrefix + key);
    return contents;
  } finally {
    raw.disconnect();
  }
}

async function describeKey(redis: Redis, key: string): Promise<string> {
  const type = await redis.type(key);
  switch (type) {
    case 'string':
      return `string ${(await redis.getBuffer(key))?.toString('base64') ?? '(gone)'}`;
    case 'hash':
      return `hash ${JSON.stringify(Object.entries(await redis.hgetall(key)).sort())}`;
    case 'set':
      return `set ${JSON.stringify((await redis.smembers(key)).sort())}`;
    case 'zset':
      return `zset ${JSON.stringify(await redis.zrange(key, 0, -1, 'WITHSCORES'))}`;
    case 'list':
      return `list ${JSON.stringify(await redis.lrange(key, 0, -1))}`;
    case 'stream':
      return `stream ${JSON.stringify(await redis.xrange(key, '-', '+'))}`;
    default:
      return type; // 'none': deleted between SCAN and TYPE
  }
}

async function listFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(root, join(entry.parentPath, entry.name)))
    .sort();
}
