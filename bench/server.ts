/**
 * One app instance for the benchmark, in a process of its own so the load generator does not
 * share its event loop. Configured by the same environment variables as src/main.ts; adds
 * `POST /bench/evalsha`: the floor, Fastify plus exactly one EVALSHA round trip.
 */
import type { Result } from 'ioredis';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/infra/config.js';
import { createDb } from '../src/infra/db.js';
import { closeRedis, createRedis } from '../src/infra/redis.js';
import { ok } from '../src/http/result.js';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    benchNoop(key: string): Result<number, Context>;
  }
}

const config = loadConfig();
const redis = createRedis(config);
const db = createDb({ mysqlUrl: config.mysqlUrl, poolSize: config.mysqlPoolSize });
const app = await buildApp({ config, redis, db, logger: false });
redis.defineCommand('benchNoop', { numberOfKeys: 1, lua: "return redis.call('EXISTS', KEYS[1])" });
app.post('/bench/evalsha', async () => ok(await redis.benchNoop('bench:noop')));

await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);

process.once('SIGTERM', () => {
  void app.close().then(async () => {
    await db.destroy();
    await closeRedis(redis);
  });
});
