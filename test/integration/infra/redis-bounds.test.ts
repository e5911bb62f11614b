import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort, startRedisServer, type RedisServer } from '../../../kit/redis-servers.js';
import { createRedis, duplicateRedis, type RedisClient } from '../../../src/infra/redis.js';

/** The Redis clients' bounds (src/infra/redis.ts), on a redis-server of this file's own. */
let server: RedisServer;
let redis: RedisClient;
const COMMAND_MS = 200;

beforeAll(async () => {
  server = await startRedisServer();
  redis = createRedis({ redisUrl: server.url, redisClusterNodes: [], redisKeyPrefix: '', deadlines: { redisCommandMs: COMMAND_MS } });
  await redis.xgroup('CREATE', 'orders', 'writers', '$', 'MKSTREAM');
});

afterAll(async () => {
  server?.resume();
  redis?.disconnect();
  await server?.kill();
});

const readBlocking = (client: RedisClient, blockMs: number) =>
  client.xreadgroup('GROUP', 'writers', 'me', 'COUNT', 1, 'BLOCK', blockMs, 'STREAMS', 'orders', '>');

describe('Redis command bounds', () => {
  it('cuts a command short after the command timeout, but not a blocking read on its own connection', async () => {
    await expect(readBlocking(redis, 800)).rejects.toThrow('Command timed out');
    const reader = duplicateRedis(redis, null);
    try {
      const started = Date.now();
      expect(await readBlocking(reader, 800)).toBeNull();
      expect(Date.now() - started).toBeGreaterThanOrEqual(750);
    } finally {
      reader.disconnect();
    }
  });

  it('bounds a blocking read on a stalled server at its BLOCK time, and a command at the command timeout', async () => {
    const reader = duplicateRedis(redis, null);
    await reader.ping();
    server.pause();
    try {
      const started = Date.now();
      expect(await readBlocking(reader, 500)).toBeNull(); // ioredis blockingTimeout: BLOCK + 100 ms
      expect(Date.now() - started).toBeLessThan(1_500);
      const pinged = Date.now();
      await expect(redis.ping()).rejects.toThrow('Command timed out');
      expect(Date.now() - pinged).toBeLessThan(COMMAND_MS + 500);
    } finally {
      server.resume();
      reader.disconnect();
    }
    expect(await redis.ping()).toBe('PONG'); // the same connection answers again
  });

  it('reports connection errors of a client and its duplicates at most once per interval, never as "Unhandled error event"', async () => {
    const printed = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const reports: string[] = [];
    const port = await freePort(); // nothing listens: every reconnect fails
    const refused = createRedis(
      { redisUrl: `redis://127.0.0.1:${port}/0`, redisClusterNodes: [], redisKeyPrefix: '' },
      { onError: (err) => reports.push(err.message) },
    );
    const duplicate = refused.duplicate();
    try {
      await sleep(1_500); // a dozen failed reconnects per client
      expect(reports.length).toBe(2); // one per client
      expect(reports.every((message) => message.includes('ECONNREFUSED'))).toBe(true);
      expect(printed.mock.calls.flat().join('\n')).not.toContain('Unhandled error event');
    } finally {
      refused.disconnect();
      duplicate.disconnect();
      printed.mockRestore();
    }
  });
});
