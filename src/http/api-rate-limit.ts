import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import type { RedisClient } from '../infra/redis.js';
import { tooManyRequests } from './errors.js';
import { HTTP_MESSAGES } from './http-messages.js';

export interface ApiRateLimitOptions {
  redis: RedisClient;
  perIp: number;
  windowSeconds: number;
  onExceeded: () => void;
}

/**
 * A general per-IP limit on /api (@fastify/rate-limit, its Redis store: one script call per
 * request, key `rl:api:ip:{ip}`). Routes with `config: { rateLimit: false }` (the order route,
 * which has cheaper limits of its own) are left out.
 */
export async function installApiRateLimit(api: FastifyInstance, options: ApiRateLimitOptions): Promise<void> {
  await api.register(fastifyRateLimit, {
    max: options.perIp,
    timeWindow: options.windowSeconds * 1000,
    redis: options.redis,
    nameSpace: 'rl:api:ip:',
    keyGenerator: (request) => request.ip,
    onExceeded: options.onExceeded,
    errorResponseBuilder: (_request, context) => tooManyRequests(HTTP_MESSAGES.tooManyFromAddress, context.ttl),
  });
}
