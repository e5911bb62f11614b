/**
 * One app instance for the benchmark, in a process of its own so the load generator does not
 * share its event loop. Configured by the same environment variables as src/main.ts, plus two
 * routes outside /api that exist only here:
 *
 * - `POST /bench/evalsha`: Fastify plus exactly one EVALSHA of a trivial script, the floor every
 *   Redis-backed request pays (the `baseline` scenario);
 * - `GET /bench/shop/:id`: the same answer as `GET /api/shop/:id`, from process memory (the
 *   bare route the `shop-hot` scenario compares the cache with). Filled on first use.
 * - `POST /bench/seckill-semaphore/:voucherId`: gulimall's seckill design (the
 *   `seckill-semaphore` scenario, see gulimall-seckill.ts).
 *
 * Prints `{"listening":true,"port":N}` on stdout when ready; exits 0 after SIGTERM, which also
 * lets `node --cpu-prof` write its profile.
 */
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/infra/config.js';
import { createDb } from '../../src/infra/db.js';
import { closeRedis, createRedis } from '../../src/infra/redis.js';
import { ok } from '../../src/http/result.js';
import { defineScripts } from '../../src/lib/redis-scripts/index.js';
import { registerGulimallSeckill } from './gulimall-seckill.js';

const config = loadConfig();
const redis = createRedis(config);
const db = createDb({ mysqlUrl: config.mysqlUrl, poolSize: config.mysqlPoolSize });
const app = await buildApp({ config, redis, db });
const scripts = defineScripts<{ noop(key: string): Promise<number> }>(redis, 'bench', { noop: { keys: 1, lua: "return redis.call('EXISTS', KEYS[1])" } });
app.post('/bench/evalsha', async () => ok(await scripts.noop('bench:noop')));

app.get('/bench/ping', async () => ok(true));

const shopsInMemory = new Map<string, unknown>();
app.get<{ Params: { id: string } }>('/bench/shop/:id', async (request, reply) => {
  let shop = shopsInMemory.get(request.params.id);
  if (shop === undefined) {
    const response = await app.inject({ method: 'GET', url: `/api/shop/${encodeURIComponent(request.params.id)}` });
    if (response.statusCode !== 200) return reply.code(response.statusCode).send(response.json());
    shop = response.json<{ data: unknown }>().data;
    shopsInMemory.set(request.params.id, shop);
  }
  return ok(shop);
});

const gulimall = registerGulimallSeckill(app, { redis, db, sessionTtlSeconds: config.auth.sessionTtlSeconds });

await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
process.stdout.write(`${JSON.stringify({ listening: true, port: typeof address === 'object' && address ? address.port : 0 })}\n`);

process.once('SIGTERM', () => {
  void app
    .close()
    .then(async () => {
      await gulimall.close();
      await db.destroy();
      await closeRedis(redis);
    })
    .finally(() => process.exit(0));
});
