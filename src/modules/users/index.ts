import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/db.js';
import type { Log } from '../../infra/logging.js';
import { rateLimiterMetrics, type Metrics } from '../../infra/metrics.js';
import type { RedisClient } from '../../infra/redis.js';
import type { KeyReader } from '../../lib/near-cache/index.js';
import { RateLimit, RateLimiter } from '../../lib/rate-limit/index.js';
import { installAuthHooks } from './auth-hooks.js';
import { SMS_LIMIT_NAMES } from './keys.js';
import { LoginCodeStore } from './login-code-store.js';
import { SessionStore } from './session-store.js';
import { createSmsSender, type SmsSender } from './sms-sender.js';
import { UserRepository } from './user-repository.js';
import { userRoutes } from './user-routes.js';
import { UserService } from './user-service.js';

// What the CLIs and the bench use besides buildUsers.
export { sessionKeyOfDigest, tokenDigest, userSessionsKey } from './keys.js';
export { InvalidPhoneError, RoleService, UnknownUserError, type RoleChange } from './roles.js';
export { SessionStore } from './session-store.js';
export type { SmsSender } from './sms-sender.js';
export { UserRepository } from './user-repository.js';

export interface UsersDeps {
  config: Pick<Config, 'auth' | 'sms' | 'nodeEnv'>;
  redis: RedisClient;
  db: Db;
  log: Log;
  metrics: Metrics;
  /** Defaults to the sender SMS_SENDER chooses (createSmsSender: production refuses an unset SMS_SENDER). */
  sms?: SmsSender;
  /** The process's near cache, in front of the session keys (default: none, Redis on every request). */
  near?: KeyReader;
}

export type Users = ReturnType<typeof buildUsers>;

/** SMS-code login, Redis sessions and the hooks that authenticate every /api request. */
export function buildUsers(deps: UsersDeps) {
  const { auth } = deps.config;
  const limiter = new RateLimiter(deps.redis, rateLimiterMetrics(deps.metrics));
  const sessions = new SessionStore(deps.redis, auth.sessionTtlSeconds, auth.sessionMaxAgeSeconds, deps.near);
  const service = new UserService({
    users: new UserRepository(deps.db),
    sessions,
    codes: new LoginCodeStore(deps.redis, { ttlSeconds: auth.loginCodeTtlSeconds, maxAttempts: auth.loginCodeMaxAttempts }),
    sms: deps.sms ?? createSmsSender(deps.config, deps.log),
    log: deps.log,
    onSmsFailure: (reason) => deps.metrics.smsFailures.inc({ reason }),
    // The phone's interval was charged by the failed attempt: no point in retrying before it ends.
    smsRetryAfterSeconds: auth.smsIntervalSeconds,
    phoneLimit: new RateLimit(limiter, [
      // SMS_INTERVAL_SECONDS=0 turns the interval off (limit 0), like every other limit.
      { name: SMS_LIMIT_NAMES.phoneInterval, limit: auth.smsIntervalSeconds > 0 ? 1 : 0, windowSeconds: Math.max(1, auth.smsIntervalSeconds) },
      { name: SMS_LIMIT_NAMES.phoneDaily, limit: auth.smsDailyLimitPerPhone, windowSeconds: 24 * 3600 },
    ]),
    ipLimit: new RateLimit(limiter, [{ name: SMS_LIMIT_NAMES.ipHourly, limit: auth.smsHourlyLimitPerIp, windowSeconds: 3600 }]),
  });
  const routes: FastifyPluginAsync = async (api) => {
    await api.register(userRoutes, { service });
  };
  return {
    sessions,
    service,
    routes,
    /** Loads the session of every request in `api`'s scope and refuses protected routes without one. */
    authenticate: (api: FastifyInstance): void => installAuthHooks(api, sessions),
  };
}
