import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sql } from 'kysely';
import type { Db } from '../../infra/db.js';
import type { RedisClient } from '../../infra/redis.js';
import { unavailableDependency } from '../../infra/transient-errors.js';
import { fail, ok } from '../../http/result.js';

/** `stalled`: connected but silent (no answer in time); `down`: refused or dropped the connection. */
export type Status = 'up' | 'down' | 'stalled';

export interface HealthOptions {
  redis: RedisClient;
  db: Db;
  /** Longest wait for each probe (they run in parallel); keep it under the request deadline. */
  probeTimeoutMs?: number;
  /**
   * RabbitMQ's state where this process's sale jobs use it (SECKILL_QUEUE=rabbitmq), else
   * undefined. Never a 503: orders wait in the Redis streams while it is away, so the instance still
   * serves the sale; the answer says `degraded` and names it.
   */
  broker?: (timeoutMs: number) => Promise<Status> | undefined;
}

/**
 * `GET /api/health`: 200 when Redis and MySQL answer; 503 naming each one that does not, and
 * whether it is down or stalled. Answers within `probeTimeoutMs` whatever the dependencies do.
 */
export const healthRoutes: FastifyPluginAsyncTypebox<HealthOptions> = async (app, { redis, db, probeTimeoutMs = 1_000, broker }) => {
  app.get(
    '/health',
    {
      config: { public: true },
      schema: {
        summary:
          'Whether Redis and MySQL answer (503 naming the one that is down or stalled when not), and RabbitMQ where the sale uses it (degraded, not 503, when it does not)',
      },
    },
    async (request, reply) => {
      const [redisStatus, mysqlStatus, brokerStatus] = await Promise.all([
        probe(() => redis.ping(), probeTimeoutMs, request.log, 'Redis'),
        probe(() => sql`SELECT 1`.execute(db), probeTimeoutMs, request.log, 'MySQL'),
        broker?.(probeTimeoutMs),
      ]);
      const checks = { redis: redisStatus, mysql: mysqlStatus, ...(brokerStatus === undefined ? {} : { rabbitmq: brokerStatus }) };
      if (redisStatus === 'up' && mysqlStatus === 'up') {
        if (brokerStatus === undefined || brokerStatus === 'up') return ok({ status: 'up', ...checks });
        request.log.warn({ rabbitmq: brokerStatus }, 'health check: RabbitMQ is unavailable; orders wait in the Redis streams');
        return ok({ status: 'degraded', ...checks });
      }
      const problems = [describe('Redis', redisStatus), describe('MySQL', mysqlStatus), brokerStatus && describe('RabbitMQ', brokerStatus)].filter(
        (problem) => problem !== undefined,
      );
      return reply
        .code(503)
        .header('retry-after', '1')
        .send({ ...fail(problems.join('; ')), data: { status: 'down', ...checks } });
    },
  );
};

function describe(name: string, status: Status): string | undefined {
  if (status === 'down') return `${name} is unreachable`;
  if (status === 'stalled') return `${name} is not answering in time (stalled)`;
  return undefined;
}

async function probe(check: () => Promise<unknown>, timeoutMs: number, log: { warn: (obj: object, msg: string) => void }, name: string): Promise<Status> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'stalled'>((resolve) => {
    timer = setTimeout(() => resolve('stalled'), timeoutMs);
  });
  const answer = check().then(
    () => 'up' as const,
    (error: unknown) => {
      log.warn({ err: error }, `health check: ${name} is unavailable`);
      return unavailableDependency(error)?.stalled === true ? ('stalled' as const) : ('down' as const);
    },
  );
  try {
    const status = await Promise.race([answer, timeout]);
    if (status === 'stalled') log.warn({ timeoutMs }, `health check: ${name} did not answer in time`);
    return status;
  } finally {
    clearTimeout(timer);
  }
}
