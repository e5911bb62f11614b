import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from './infra/config.js';
import type { Db } from './infra/db.js';
import type { RedisClient } from './infra/redis.js';
import { ajvOptions, formatValidationErrors, installErrorHandling } from './http/error-handling.js';
import { stringifyResult } from './http/result.js';
import { RateLimit } from './lib/rate-limit/index.js';
import { healthRoutes } from './modules/health/routes.js';
import { installAuthHooks } from './modules/user/auth-hooks.js';
import { LoginCodeStore } from './modules/user/login-code-store.js';
import { UserRepository } from './modules/user/repository.js';
import { userRoutes } from './modules/user/routes.js';
import { UserService } from './modules/user/service.js';
import { SessionStore } from './modules/user/session-store.js';
import { LogSmsSender, type SmsSender } from './modules/user/sms-sender.js';

export interface AppDeps {
  config: Config;
  redis: RedisClient;
  db: Db;
  /** Defaults to a sender that logs the code. */
  sms?: SmsSender;
  logger?: FastifyServerOptions['logger'];
}

const REQUEST_ID = /^[\w.:-]{1,64}$/;

/**
 * The HTTP application, without listening. Connections are passed in and owned by the caller
 * (main.ts or a test), which closes them after `app.close()`.
 */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, redis, db } = deps;
  const app = Fastify({
    logger: deps.logger ?? { level: config.logLevel },
    trustProxy: config.trustProxy,
    ajv: ajvOptions,
    schemaErrorFormatter: formatValidationErrors,
    // Keep a caller's (load balancer's) request id, if it looks sane, so one id follows a
    // request through the logs of every hop.
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    return503OnClosing: true,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setReplySerializer(stringifyResult);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  installErrorHandling(app);

  const sessions = new SessionStore(redis, config.auth.sessionTtlSeconds);
  const userService = new UserService({
    users: new UserRepository(db),
    sessions,
    codes: new LoginCodeStore(redis, {
      ttlSeconds: config.auth.loginCodeTtlSeconds,
      maxAttempts: config.auth.loginCodeMaxAttempts,
    }),
    sms: deps.sms ?? new LogSmsSender(app.log),
    phoneLimit: new RateLimit(redis, [
      { name: 'sms:phone:interval', limit: 1, windowSeconds: config.auth.smsIntervalSeconds },
      { name: 'sms:phone:daily', limit: config.auth.smsDailyLimitPerPhone, windowSeconds: 24 * 3600 },
    ]),
    ipLimit: new RateLimit(redis, [
      { name: 'sms:ip:hourly', limit: config.auth.smsHourlyLimitPerIp, windowSeconds: 3600 },
    ]),
  });

  await app.register(
    async (api) => {
      installAuthHooks(api, sessions);
      await api.register(healthRoutes, { redis, db });
      await api.register(userRoutes, { service: userService });
    },
    { prefix: '/api' },
  );
  return app;
}
