import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/db.js';
import type { Log } from '../../infra/logging.js';
import { rateLimiterMetrics, type Metrics } from '../../infra/metrics.js';
import type { RedisClient } from '../../infra/redis.js';
import { RateLimiter } from '../../lib/rate-limit/index.js';
import { UserRepository } from '../users/user-repository.js';
import { BlogRepository } from './blog-repository.js';
import { blogRoutes } from './blog-routes.js';
import { BlogService } from './blog-service.js';
import { FollowRepository } from './follow-repository.js';
import { followRoutes } from './follow-routes.js';
import { FollowService } from './follow-service.js';
import { signRoutes } from './sign-routes.js';
import { SignService } from './sign-service.js';
import { UploadRepository } from './upload-repository.js';
import { uploadRoutes } from './upload-routes.js';
import { UploadService } from './upload-service.js';
import { UploadSweeper } from './upload-sweeper.js';
import { recordVisitHook, uvRoutes } from './uv-routes.js';
import { UvService } from './uv-service.js';
import { WriteLimits } from './write-limits.js';

// What the seed uses besides buildSocial: the keys of the demo content it writes.
export { feedKey, followsKey, likedKey } from './keys.js';

export interface SocialDeps {
  config: Pick<Config, 'social' | 'upload' | 'writeLimit'>;
  redis: RedisClient;
  db: Db;
  log: Log;
  /** Upload counters and rate-limit refusals (optional: tools that only need the services). */
  metrics?: Metrics;
  /** Clock of feed scores, like times, sign-in and UV days; tests pin it. */
  now?: () => number;
}

export type Social = ReturnType<typeof buildSocial>;

/** Blogs, likes, follows, the feed, sign-in, unique visitors and image uploads. */
export function buildSocial(deps: SocialDeps) {
  const { config, redis, db, log } = deps;
  const now = deps.now ?? Date.now;
  const users = new UserRepository(db);
  const followService = new FollowService(redis, new FollowRepository(db), users);
  const blogService = new BlogService({
    redis,
    blogs: new BlogRepository(db),
    users,
    follows: followService,
    feedMaxLength: config.social.feedMaxLength,
    now,
  });
  const signService = new SignService(redis, now);
  const uvService = new UvService(redis, now, {
    flushMs: config.social.uvFlushMs,
    onError: (err) => log.warn({ err }, 'could not write unique visitors'),
  });
  const { metrics } = deps;
  const limiter = new RateLimiter(redis, metrics ? rateLimiterMetrics(metrics) : {});
  const limits = new WriteLimits(limiter, config);
  const uploads = new UploadRepository(db);
  const uploadService = new UploadService(uploads, {
    root: config.upload.dir,
    maxBytes: config.upload.maxBytes,
    limits,
    events: {
      onStored: (bytes) => {
        metrics?.uploadBytes.inc(bytes);
        metrics?.uploadFiles.inc({ result: 'stored' });
      },
      onRefused: (reason) => metrics?.uploadFiles.inc({ result: reason }),
    },
  });
  const uploadSweeper = new UploadSweeper(redis, uploads, uploadService, log, {
    unattachedTtlSeconds: config.upload.unattachedTtlSeconds,
    intervalSeconds: config.upload.sweepIntervalSeconds,
    onSwept: (count) => metrics?.uploadFiles.inc({ result: 'swept' }, count),
  });
  const routes: FastifyPluginAsync = async (api) => {
    await api.register(followRoutes, { service: followService, limits });
    await api.register(blogRoutes, { service: blogService, limits });
    await api.register(signRoutes, { service: signService });
    await api.register(uvRoutes, { service: uvService });
    await api.register(uploadRoutes, { service: uploadService, limits, maxBytes: config.upload.maxBytes });
  };
  return {
    followService,
    blogService,
    signService,
    uvService,
    uploadService,
    uploadSweeper,
    routes,
    /** An onRoute hook that records the visitor of every successful GET; the app adds it to the /api scope (null: UV_TRACKING off). */
    recordVisit: config.social.uvTracking ? recordVisitHook(uvService) : null,
    /** Starts the sweeper of unattached images (every UPLOAD_SWEEP_INTERVAL_SECONDS, one instance per run). */
    start(): void {
      uploadSweeper.start();
    },
    /** Stops the sweeper and writes the buffered unique visitors. */
    async close(): Promise<void> {
      await uploadSweeper.stop();
      await uvService.flush().catch((err: unknown) => log.warn({ err }, 'could not write the last unique visitors'));
    },
  };
}
