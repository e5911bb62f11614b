import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testRedisUrl } from '../../../kit/services.js';
import { defineScripts, readLua } from '../../../src/lib/redis-scripts/index.js';
import { connectRedis, deleteKeys, uniquePrefix } from '../../support/redis.js';

/** A script set as a library or module declares one: what each script takes and returns. */
interface CounterScripts {
  bump(key: string, by: number): Promise<number>;
  sum(keyCount: number, ...keys: string[]): Promise<number>;
}

const BUMP = "return redis.call('INCRBY', KEYS[1], ARGV[1])";
const SUM = "local s = 0 for _, k in ipairs(KEYS) do s = s + tonumber(redis.call('GET', k) or '0') end return s";

const keyPrefix = uniquePrefix('redis-scripts');
let redis: Redis;
let raw: Redis;

beforeAll(() => {
  redis = connectRedis(keyPrefix);
  raw = new Redis(testRedisUrl());
});

afterAll(async () => {
  await deleteKeys(keyPrefix);
  redis.disconnect();
  raw.disconnect();
});

const define = () => defineScripts<CounterScripts>(redis, 'counter', { bump: { keys: 1, lua: BUMP }, sum: { keys: 'dynamic', lua: SUM } });

describe('defineScripts', () => {
  it('runs each script with its reply, on keys under the client prefix', async () => {
    const scripts = define();
    expect(await scripts.bump('a', 2)).toBe(2);
    expect(await scripts.bump('a', 3)).toBe(5);
    expect(await raw.get(`${keyPrefix}a`)).toBe('5');
  });

  it('takes the key count per call when the script declares it dynamic', async () => {
    const scripts = define();
    await scripts.bump('x', 1);
    await scripts.bump('y', 10);
    expect(await scripts.sum(2, 'x', 'y')).toBe(11);
    expect(await scripts.sum(1, 'y')).toBe(10);
  });

  it('queues the same scripts on a pipeline and a MULTI', async () => {
    const scripts = define();
    const pipeline = redis.pipeline();
    scripts.queue(pipeline).bump('p', 1);
    scripts.queue(pipeline).bump('p', 1);
    expect(await pipeline.exec()).toEqual([
      [null, 1],
      [null, 2],
    ]);
    const multi = redis.multi();
    scripts.queue(multi).bump('p', 5);
    expect(await multi.exec()).toEqual([[null, 7]]);
  });

  it('can define one set twice on a client (every class that needs the scripts defines them)', async () => {
    const first = define();
    const second = define();
    await first.bump('twice', 1);
    expect(await second.bump('twice', 1)).toBe(2);
  });
});

describe('readLua includes', () => {
  const folder = mkdtempSync(join(tmpdir(), 'lua-includes-'));
  const write = (name: string, lua: string): void => writeFileSync(join(folder, name), lua);
  write('two.lua', 'local function two() return 2 end');
  write('three.lua', '--- @include "two"\nlocal function three() return two() + 1 end');
  write('script.lua', '--- @include "server-time"\n--- @include "three"\n--- @include "two"\nreturn {three(), server_time_ms()}');
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('inlines each piece once, beside the file first, then the shared ones, and the script runs', async () => {
    const lua = readLua(pathToFileURL(join(folder, 'x.ts')), 'script.lua');
    expect(lua.match(/local function two/g)).toHaveLength(1);
    expect(lua).not.toMatch(/@include/);
    const scripts = defineScripts<{ run(key: string): Promise<[number, number]> }>(redis, 'included', { run: { keys: 1, lua } });
    const [three, nowMs] = await scripts.run('unused');
    const [seconds] = await raw.time();
    expect(three).toBe(3);
    expect(Math.abs(nowMs - Number(seconds) * 1000)).toBeLessThan(5_000);
  });

  it('names the missing piece', () => {
    write('broken.lua', '--- @include "nowhere"\nreturn 1');
    expect(() => readLua(pathToFileURL(join(folder, 'x.ts')), 'broken.lua')).toThrow(/nowhere\.lua/);
  });
});
