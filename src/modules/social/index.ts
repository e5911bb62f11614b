import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/db.js';
import type { Log } from '../../infra/logging.js';
import type { RedisClient } from '../../infra/redis.js';
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
import { recordVisitHook, uvRoutes } from './uv-routes.js';
import { UvService } from './uv-service.js';

export interface SocialDeps {
  config: Pick<Config, 'social' | 'upload'>;
  redis: RedisClient;
  db: Db;
  log: Log;
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
  const uploadService = new UploadService(new UploadRepository(db), config.upload.dir);
  const routes: FastifyPluginAsync = async (api) => {
    await api.register(followRoutes, { service: followService });
    await api.register(blogRoutes, { service: blogService });
    await api.register(signRoutes, { service: signService });
    await api.register(uvRoutes, { service: uvService });
    await api.register(uploadRoutes, { service: uploadService, maxBytes: config.upload.maxBytes });
  };
  return {
    followService,
    blogService,
    signService,
    uvService,
    uploadService,
    routes,
    /** Records the visitor of every successful GET; the app adds it to the whole /api scope (null: UV_TRACKING off). */
    recordVisit: config.social.uvTracking ? recordVisitHook(uvService) : null,
    /** Writes the buffered unique visitors. */
    async close(): Promise<void> {
      await uvService.flush().catch((err: unknown) => log.warn({ err }, 'could not write the last unique visitors'));
    },
  };
}
