import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../infra/redis.js';
import type { UserRole } from '../../infra/schema.js';
import { sessionKey, sessionKeyOfDigest, tokenDigest, userSessionsKey } from './keys.js';
import { defineUserScripts, type UserScripts } from './scripts.js';

/** A user as others see it: hmdp's UserDTO. */
export interface UserSummary {
  id: string;
  nickName: string;
  icon: string;
}

/** What a session remembers of its user: hmdp's UserDTO plus the role (checked on admin routes). */
export interface SessionUser extends UserSummary {
  role: UserRole;
}

const TOKEN_BYTES = 32; // 256 bits of entropy, well above the 128 required for unguessable tokens

/** ASVS level 2 (3.3.2, after NIST AAL2): log in again after 12 hours, however active. */
export const DEFAULT_SESSION_MAX_AGE_SECONDS = 12 * 3600;

/**
 * Login sessions in Redis: `login:token:{sha256(token)}` hash {id, nickName, icon, role, deadline}
 * with a TTL that every authenticated request renews (sliding expiry), but never past `deadline`
 * (ms since the epoch, `maxAgeSeconds` after the login): an idle session ends after the TTL, a
 * busy one at its deadline. The deadline is written with this process's clock and checked with
 * Redis' (touch-session.lua): clock skew between them shifts it by as much.
 *
 * The key holds a hash of the token, not the token: whoever can read Redis (a replica, a dump,
 * MONITOR) still cannot impersonate a user.
 *
 * `login:sessions:{userId}` (a set of those SHA-256 digests) lists each user's sessions, so that
 * a role change reaches every live session at once (`setRole`) and a user can end them all
 * (`deleteAll`, "log out everywhere"). It is written at login and logout only, never on the
 * per-request touch; members whose session expired are dropped lazily (at the next login or role
 * change). Each login sets its TTL to the maximum age: no session outlives the latest login by
 * more, so the index never expires while one of its sessions lives. Session keys live in
 * different Cluster slots, so each is one command of its own (no multi-key script).
 *
 * Creating a session and changing a role must not interleave for one user (a login that read
 * the old role could otherwise write it after the change was pushed): callers hold the user's
 * row lock around both (UserRepository.withUserLocked).
 */
export class SessionStore {
  private readonly scripts: UserScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly ttlSeconds: number,
    private readonly maxAgeSeconds = DEFAULT_SESSION_MAX_AGE_SECONDS,
  ) {
    this.scripts = defineUserScripts(redis);
  }

  async create(user: SessionUser): Promise<string> {
    const token = randomBytes(TOKEN_BYTES).toString('base64url');
    const digest = tokenDigest(token);
    // Indexed first: a session that exists is always in its user's index (a failure in between
    // leaves only an index member without a session, which the next pruning drops).
    const index = userSessionsKey(user.id);
    await this.redis.multi().sadd(index, digest).expire(index, this.maxAgeSeconds).exec();
    const key = sessionKeyOfDigest(digest);
    const deadline = Date.now() + this.maxAgeSeconds * 1000;
    await this.redis
      .multi()
      .hset(key, { ...user, deadline })
      .expire(key, Math.min(this.ttlSeconds, this.maxAgeSeconds))
      .exec();
    return token;
  }

  /** The session's user, renewing its TTL up to its deadline; null if the token is unknown, expired or past its deadline. */
  async touch(token: string): Promise<SessionUser | null> {
    const flat = await this.scripts.touchSession(sessionKey(token), this.ttlSeconds, this.maxAgeSeconds);
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
    return toSessionUser(fields);
  }

  /** Ends a session (logout); `userId` is its user, whose index then forgets it. */
  async delete(token: string, userId?: string): Promise<boolean> {
    const digest = tokenDigest(token);
    const deleted = (await this.redis.del(sessionKeyOfDigest(digest))) === 1;
    if (userId !== undefined) await this.redis.srem(userSessionsKey(userId), digest);
    return deleted;
  }

  /** Ends every session of the user ("log out everywhere"); returns how many were live. */
  async deleteAll(userId: string): Promise<number> {
    const digests = await this.redis.smembers(userSessionsKey(userId));
    const deleted = await Promise.all(digests.map((digest) => this.redis.del(sessionKeyOfDigest(digest))));
    // Only the members read: a session opened meanwhile stays indexed (and alive).
    await this.forget(userId, digests);
    return deleted.filter((count) => count === 1).length;
  }

  /**
   * Sets the role in every live session of the user (one HSET-if-exists per session) and drops
   * the index members whose session is gone; returns how many sessions were updated.
   */
  async setRole(userId: string, role: UserRole): Promise<number> {
    const digests = await this.redis.smembers(userSessionsKey(userId));
    const updated = await Promise.all(digests.map((digest) => this.scripts.setSessionRole(sessionKeyOfDigest(digest), role)));
    await this.forget(
      userId,
      digests.filter((_, i) => updated[i] === 0),
    );
    return updated.filter((done) => done === 1).length;
  }

  /** Drops the index members of the user whose session expired; returns how many remain. */
  async pruneExpired(userId: string): Promise<number> {
    const digests = await this.redis.smembers(userSessionsKey(userId));
    const alive = await Promise.all(digests.map((digest) => this.redis.exists(sessionKeyOfDigest(digest))));
    await this.forget(
      userId,
      digests.filter((_, i) => alive[i] === 0),
    );
    return alive.filter((exists) => exists === 1).length;
  }

  private async forget(userId: string, digests: string[]): Promise<void> {
    if (digests.length > 0) await this.redis.srem(userSessionsKey(userId), ...digests);
  }
}

function toSessionUser(fields: Record<string, string> | undefined): SessionUser | null {
  if (fields?.id === undefined) return null;
  // Sessions opened before roles existed have no role field: plain users.
  const role: UserRole = fields.role === 'admin' ? 'admin' : 'user';
  return { id: fields.id, nickName: fields.nickName ?? '', icon: fields.icon ?? '', role };
}
