/**
 * `npm run bench -- growth`: how the cost grows with what the app holds (docs/bench-growth.md).
 *
 * - sessions: Redis memory per login session at 10k, 100k and 1M sessions;
 * - buyers: Redis memory per buyer of one voucher at 10k and 1M buyers (with the order still
 *   queued for the worker, and after the worker took it);
 * - sales: throughput and CPU per order with 1, 100 and 1,000 sales open at once;
 * - connections: p99 and server memory per connection at 100, 1,000 and 10,000 connections;
 * - feed: time to publish a blog to 10, 1,000 and 10,000 followers.
 *
 * The memory figures fill a redis-server started here on a free port (stopped by pid at the end)
 * with the app's own key formats (the modules' keys.ts, the sale's own script), and read
 * `used_memory` before and after. The HTTP figures use a bench world (harness/world.ts: its own
 * database, its own Redis) and bench servers, as `npm run bench` does.
 */
import { Redis } from 'ioredis';
import { startRedisServer, type RedisServer } from '../../kit/redis-servers.js';
import { createOwnWorld, loadAverage } from '../harness/index.js';
import { connectionCost } from './connections.js';
import { feedPublish } from './feed.js';
import { buyerMemory, sessionMemory } from './memory.js';
import type { GrowthReport, Section } from './report.js';
import { salesAtOnce } from './sales.js';

export async function runGrowth(sections: Section[], quick: boolean, commandLine: string, connectionRate = 2_000): Promise<GrowthReport> {
  const scale = (n: number) => (quick ? Math.max(10, Math.round(n / 100)) : n);
  const report: GrowthReport = { startedAt: new Date().toISOString(), commandLine, loadAverage: await loadAverage() };
  const say = (text: string) => process.stderr.write(`[growth] ${text}\n`);
  if (sections.includes('sessions')) {
    say('sessions');
    report.sessions = await withOwnRedis((redis) => sessionMemory(redis, [10_000, 100_000, 1_000_000].map(scale)));
  }
  if (sections.includes('buyers')) {
    say('buyers');
    report.buyers = await withOwnRedis((_redis, server) => buyerMemory(server, [10_000, 1_000_000].map(scale)));
  }
  const http = sections.filter((section) => section === 'sales' || section === 'connections' || section === 'feed');
  if (http.length > 0) {
    const redisServer = await startRedisServer();
    const users = quick ? 1_200 : 15_000;
    say(`a bench world of ${users} users`);
    const world = await createOwnWorld({
      redisUrl: redisServer.url,
      mysqlServerUrl: (process.env.MYSQL_SERVER_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, ''),
      users,
      name: `hmdp_growth_${process.pid}`,
    }).catch(async (error: unknown) => {
      await redisServer.kill();
      throw error;
    });
    try {
      if (http.includes('sales')) {
        say('sales open at once');
        report.sales = await salesAtOnce(world, quick ? [1, 10, 100] : [1, 100, 1_000], quick ? 300 : 4_000, quick ? 200 : 1_500);
      }
      if (http.includes('connections')) {
        say('connections');
        report.connections = await connectionCost(
          world,
          [100, 1_000, 10_000].map((n) => (quick ? n / 10 : n)),
          quick ? 500 : connectionRate,
          Math.max(6, Math.ceil(10_000 / connectionRate)),
        );
      }
      if (http.includes('feed')) {
        say('feed');
        report.feed = await feedPublish(
          world,
          [10, 1_000, 10_000].map((n) => (quick ? Math.max(5, n / 100) : n)),
        );
      }
    } finally {
      await world.destroy();
      await redisServer.kill();
    }
  }
  report.loadAverage += ` → ${await loadAverage()}`;
  return report;
}

async function withOwnRedis<T>(use: (redis: Redis, server: RedisServer) => Promise<T>): Promise<T> {
  const server = await startRedisServer();
  const redis = new Redis(server.url);
  try {
    return await use(redis, server);
  } finally {
    redis.disconnect();
    await server.kill();
  }
}
