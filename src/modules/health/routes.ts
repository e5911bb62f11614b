import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sql } from 'kysely';
import type { Db } from '../../infra/db.js';
import type { RedisClient } from '../../infra/redis.js';
import { fail, ok } from '../../http/result.js';

type Status = 'up' | 'down';

const PROBE_TIMEOUT_MS = 1_000;

/** `GET /api/health`: 200 when Redis and MySQL answer, 503 (with which one failed) otherwise. */
export const healthRoutes: FastifyPluginAsyncTypebox<{ redis: RedisClient; db: Db }> = async (app, { redis, db }) => {
  app.get(
    '/health',
    { config: { public: true }, schema: { summary: 'Whether Redis and MySQL answer (503 and which one when not)' } },
    async (request, reply) => {
      const [redisStatus, mysqlStatus] = await Promise.all([
        probe(() => redis.ping(), request.log, 'redis'),
        probe(() => sql`SELECT 1`.execute(db), request.log, 'mysql'),
      ]);
      const checks = { redis: redisStatus, mysql: mysqlStatus };
      if (redisStatus === 'up' && mysqlStatus === 'up') return ok({ status: 'up', ...checks });
      return reply.code(503).send({ ...fail('A dependency is unreachable'), data: { status: 'down', ...checks } });
    },
  );
};

async function probe(check: () => Promise<unknown>, log: { warn: (obj: object, msg: string) => void }, name: string): Promise<Status> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
  });
  try {
    await Promise.race([check(), timeout]);
    return 'up';
  } catch (error) {
    log.warn({ err: error }, `health check: ${name} is down`);
    return 'down';
  } finally {
    clearTimeout(timer);
  }
}
