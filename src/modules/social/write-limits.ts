import type { preHandlerAsyncHookHandler } from 'fastify';
import { rateLimited } from '../../lib/refusals/index.js';
import type { MessageFactory } from '../../lib/messages/index.js';
import type { Config } from '../../infra/config.js';
import type { RateLimitDecision, RateLimiter, RateLimitRule } from '../../lib/rate-limit/index.js';
import { currentUser } from '../users/auth-hooks.js';
import { WRITE_LIMIT_NAMES } from './keys.js';
import { SOCIAL_MESSAGES } from './messages.js';

export type WriteKind = 'blog' | 'like' | 'follow' | 'upload';

const MESSAGES: Record<string, MessageFactory<'seconds'>> = {
  [WRITE_LIMIT_NAMES.blog]: SOCIAL_MESSAGES.tooManyBlogs,
  [WRITE_LIMIT_NAMES.like]: SOCIAL_MESSAGES.tooManyLikes,
  [WRITE_LIMIT_NAMES.follow]: SOCIAL_MESSAGES.tooManyFollows,
  [WRITE_LIMIT_NAMES.uploadFiles]: SOCIAL_MESSAGES.tooManyUploads,
  [WRITE_LIMIT_NAMES.uploadBytes]: SOCIAL_MESSAGES.uploadQuotaUsed,
};

/**
 * Per-user limits on the social writes (src/lib/rate-limit fixed windows, shared by every
 * instance): blogs per hour, likes and follows per minute, uploaded images per hour and bytes
 * per day. Every refusal is a 429 with Retry-After; a refused write changes nothing.
 */
export class WriteLimits {
  private readonly rules: Record<WriteKind, RateLimitRule>;
  private readonly bytesRule: RateLimitRule;

  constructor(
    private readonly limiter: RateLimiter,
    config: Pick<Config, 'writeLimit' | 'upload'>,
  ) {
    const { writeLimit, upload } = config;
    this.rules = {
      blog: { name: WRITE_LIMIT_NAMES.blog, limit: writeLimit.blogsPerHour, windowSeconds: 3600 },
      like: { name: WRITE_LIMIT_NAMES.like, limit: writeLimit.likesPerMinute, windowSeconds: 60 },
      follow: { name: WRITE_LIMIT_NAMES.follow, limit: writeLimit.followsPerMinute, windowSeconds: 60 },
      upload: { name: WRITE_LIMIT_NAMES.uploadFiles, limit: upload.filesPerHour, windowSeconds: 3600 },
    };
    this.bytesRule = { name: WRITE_LIMIT_NAMES.uploadBytes, limit: upload.bytesPerDay, windowSeconds: 24 * 3600 };
  }

  /** Counts one write of the user; 429 past the limit. */
  async check(kind: WriteKind, userId: string): Promise<void> {
    refuseIfDenied(await this.limiter.consume([{ rule: this.rules[kind], subject: userId }]));
  }

  /** A route hook counting the logged-in user's write (after validation: a refused body costs nothing). */
  preHandler(kind: WriteKind): preHandlerAsyncHookHandler {
    return async (request) => this.check(kind, currentUser(request).id);
  }

  /** Charges a stored file's bytes to the user's daily quota; 429 (nothing charged) when it does not fit. */
  async chargeBytes(userId: string, bytes: number): Promise<void> {
    refuseIfDenied(await this.limiter.consume([{ rule: this.bytesRule, subject: userId, cost: bytes }]));
  }
}

function refuseIfDenied(decision: RateLimitDecision): void {
  if (decision.allowed) return;
  throw rateLimited(MESSAGES[decision.rule] ?? SOCIAL_MESSAGES.tooManyRequests, decision.retryAfterMs);
}
