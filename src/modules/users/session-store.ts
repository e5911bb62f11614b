import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../infra/redis.js';
import type { UserRole } from '../../infra/schema.js';
import { PassThroughReader, type KeyReader } from '../../lib/near-cache/index.js';
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

/** A session as read from Redis: its user, its deadline and when its TTL ends (this process's clock). */
interface SessionSnapshot {
  user: SessionUser;
  /** ms since the epoch; undefined for a session opened before deadlines existed. */
  deadline: number | undefined;
  /** ms since the epoch; undefined when the key has no TTL. */
  expiresAt: number | undefined;
}

/** The region of sessions in the near cache (its metrics label). */
const NEAR_REGION = 'session';
/** Sessions found are kept in the near cache; a missing one is asked again (a login may create it). */
const KEEP_FOUND = { cacheIf: (found: SessionSnapshot | null): boolean => found !== null };

/** The sliding TTL is renewed once it has slid by this much (at most once a minute per session). */
export const SESSION_RENEW_EVERY_MS = 60_000;

const TOKEN_BYTES = 32; // 256 bits of entropy, well above the 128 required for unguessable tokens

/** ASVS level 2 (3.3.2, after NIST AAL2): log in again after 12 hours, however active. */
export const DEFAULT_SESSION_MAX_AGE_SECONDS = 12 * 3600;

/**
 * Login sessions in Redis: `login:token:{sha256(token)}` hash {id, nickName, icon, role, deadline}
 * with a TTL that authenticated requests renew (sliding expiry) once it has slid by a minute (so
 * at most once a minute per session, not on every request), but never past `deadline`
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
 * Reads go through the process's near cache (`near`): a session is read from Redis once and then
 * served from memory until Redis says its key changed (logout, role change, renewal, expiry) on
 * any instance. What this process writes it forgets at once (read-your-writes).
 *
 * Creating a session and changing a role must not interleave for one user (a login that read
 * the old role could otherwise write it after the change was pushed): callers hold the user's
 * row lock around both (UserRepository.withUserLocked).
 */
export class SessionStore {
  private readonly scripts: UserScripts;
  /** Renewals running in this process, by key: concurrent requests of one session share one. */
  private readonly renewals = new Map<string, Promise<SessionUser | null>>();

  constructor(
    private readonly redis: RedisClient,
    private readonly ttlSeconds: number,
    private readonly maxAgeSeconds = DEFAULT_SESSION_MAX_AGE_SECONDS,
    private readonly near: KeyReader = new PassThroughReader(redis),
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

  /**
   * The session's user; null if the token is unknown, expired or past its deadline. Renews the
   * TTL (up to the deadline) once it has slid by SESSION_RENEW_EVERY_MS.
   */
  async touch(token: string): Promise<SessionUser | null> {
    const key = sessionKey(token);
    const session = await this.near.read(NEAR_REGION, key, readSession, KEEP_FOUND);
    if (session === null) return null;
    const now = Date.now();
    if (session.expiresAt !== undefined && now >= session.expiresAt) return null;
    if (session.deadline !== undefined && now >= session.deadline) return this.renew(key); // the script ends it
    return this.renewDue(session, now) ? this.renew(key) : session.user;
  }

  /** Whether the TTL has slid far enough from its full length (ttl, cut at the deadline) to renew it. */
  private renewDue(session: SessionSnapshot, now: number): boolean {
    if (session.deadline === undefined || session.expiresAt === undefined) return true; // gets a deadline / a TTL
    const full = Math.min(this.ttlSeconds * 1000, session.deadline - now);
    return session.expiresAt - now < full - Math.min(SESSION_RENEW_EVERY_MS, (this.ttlSeconds * 1000) / 2);
  }

  /** touch-session.lua (renew, or end past the deadline), one at a time per key in this process. */
  private renew(key: string): Promise<SessionUser | null> {
    const running = this.renewals.get(key);
    if (running) return running;
    const renewal = this.scripts
      .touchSession(key, this.ttlSeconds, this.maxAgeSeconds)
      .then((flat) => {
        const fields: Record<string, string> = {};
        for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
        return toSessionUser(fields);
      })
      .finally(() => {
        this.near.forget(key);
        this.renewals.delete(key);
      });
    this.renewals.set(key, renewal);
    return renewal;
  }

  /** Ends a session (logout); `userId` is its user, whose index then forgets it. */
  async delete(token: string, userId?: string): Promise<boolean> {
    const digest = tokenDigest(token);
    const deleted = (await this.redis.del(sessionKeyOfDigest(digest))) === 1;
    this.near.forget(sessionKeyOfDigest(digest));
    if (userId !== undefined) await this.redis.srem(userSessionsKey(userId), digest);
    return deleted;
  }

  /** Ends every session of the user ("log out everywhere"); returns how many were live. */
  async deleteAll(userId: string): Promise<number> {
    const digests = await this.redis.smembers(userSessionsKey(userId));
    const deleted = await Promise.all(digests.map((digest) => this.redis.del(sessionKeyOfDigest(digest))));
    digests.forEach((digest) => this.near.forget(sessionKeyOfDigest(digest)));
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
    digests.forEach((digest) => this.near.forget(sessionKeyOfDigest(digest)));
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

/** HGETALL and PTTL of a session key, through the (tracked) connection given. */
async function readSession(redis: RedisClient, key: string): Promise<SessionSnapshot | null> {
  const [fields, pttl] = await Promise.all([redis.hgetall(key), redis.pttl(key)]);
  const user = toSessionUser(fields);
  if (user === null) return null;
  const deadline = fields.deadline === undefined ? undefined : Number(fields.deadline);
  return { user, deadline: Number.isFinite(deadline) ? deadline : undefined, expiresAt: pttl >= 0 ? Date.now() + pttl : undefined };
}

function toSessionUser(fields: Record<string, string> | undefined): SessionUser | null {
  if (fields?.id === undefined) return null;
  // Sessions opened before roles existed have no role field: plain users.
  const role: UserRole = fields.role === 'admin' ? 'admin' : 'user';
  return { id: fields.id, nickName: fields.nickName ?? '', icon: fields.icon ?? '', role };
}
