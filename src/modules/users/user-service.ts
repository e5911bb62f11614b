import { randomBytes } from 'node:crypto';
import { invalid, notFound, rateLimited, retryAfterSeconds, unavailable } from '../../lib/refusals/index.js';
import type { MessageFactory } from '../../lib/messages/index.js';
import type { Log } from '../../infra/logging.js';
import type { RateLimit } from '../../lib/rate-limit/index.js';
import type { LoginCodeStore } from './login-code-store.js';
import { USER_MESSAGES } from './messages.js';
import type { UserInfoRow, UserRepository, UserRow } from './user-repository.js';
import type { SessionStore, SessionUser, UserSummary } from './session-store.js';
import { SmsDeliveryError, type SmsFailureReason, type SmsSender } from './sms-sender.js';

export interface UserServiceDeps {
  users: UserRepository;
  sessions: SessionStore;
  codes: LoginCodeStore;
  sms: SmsSender;
  /** Limits per phone number (interval and daily cap). */
  phoneLimit: RateLimit;
  /** Limits per client IP, so one client cannot spray codes over many numbers. */
  ipLimit: RateLimit;
  log: Pick<Log, 'warn'>;
  /** Counts a code the sender could not deliver. */
  onSmsFailure?: (reason: SmsFailureReason) => void;
  /** Retry-After of the 503 when a code could not be sent (the phone's interval has been charged). */
  smsRetryAfterSeconds?: number;
}

export interface UserInfo {
  userId: string;
  city: string;
  introduce: string;
  fans: number;
  followee: number;
  gender: number;
  birthday: string | null;
  credits: number;
  level: number;
}

/** hmdp's SMS-code login ("短信登录") and the user queries around it. */
export class UserService {
  constructor(private readonly deps: UserServiceDeps) {}

  async sendCode(phone: string, clientIp: string): Promise<void> {
    await this.enforce(this.deps.ipLimit, clientIp, USER_MESSAGES.tooManyCodesFromAddress);
    await this.enforce(this.deps.phoneLimit, phone, USER_MESSAGES.tooManyCodesForPhone);
    const code = await this.deps.codes.issue(phone);
    try {
      await this.deps.sms.sendLoginCode(phone, code);
    } catch (err) {
      // A code nobody received must not stay usable; the client learns to try again later.
      await this.deps.codes.discard(phone, code);
      const reason = err instanceof SmsDeliveryError ? err.reason : 'network';
      this.deps.onSmsFailure?.(reason);
      this.deps.log.warn({ err, reason }, 'login code not delivered by the SMS sender');
      const retryAfterMs = Math.max(1, this.deps.smsRetryAfterSeconds ?? 60) * 1000;
      throw unavailable(USER_MESSAGES.smsFailed({ seconds: retryAfterSeconds(retryAfterMs) }), retryAfterMs);
    }
  }

  /** Checks the code, creates the user on first login and opens a session; returns its token. */
  async login(phone: string, code: string): Promise<string> {
    const check = await this.deps.codes.check(phone, code);
    if (check === 'missing') throw invalid(USER_MESSAGES.noValidCode());
    if (check === 'wrong') throw invalid(USER_MESSAGES.wrongCode());
    const { id } = await this.deps.users.findOrCreateByPhone(phone, randomNickName());
    // Under the row lock, so that a role change cannot slip between reading the role and
    // indexing the new session (see SessionStore).
    const token = await this.deps.users.withUserLocked(id, async (user) => {
      await this.deps.sessions.pruneExpired(id);
      return this.deps.sessions.create(toSessionUser(user));
    });
    if (token === undefined) throw new Error(`user ${id} vanished during login`);
    return token;
  }

  async logout(token: string, userId: string): Promise<void> {
    await this.deps.sessions.delete(token, userId);
  }

  /** Ends every session of the user, this one included; returns how many there were. */
  async logoutEverywhere(userId: string): Promise<number> {
    return this.deps.sessions.deleteAll(userId);
  }

  async getUser(id: string): Promise<UserSummary> {
    const user = await this.deps.users.findById(id);
    if (!user) throw notFound(USER_MESSAGES.userNotFound({ id }));
    return toUserSummary(user);
  }

  /** The user's profile, or null when the user never filled one in. */
  async getInfo(userId: string): Promise<UserInfo | null> {
    const info = await this.deps.users.findInfo(userId);
    return info ? toUserInfo(info) : null;
  }

  private async enforce(limit: RateLimit, subject: string, message: MessageFactory<'seconds'>): Promise<void> {
    const decision = await limit.consume(subject);
    if (!decision.allowed) throw rateLimited(message, decision.retryAfterMs);
  }
}

function toUserSummary(user: UserRow): UserSummary {
  return { id: user.id, nickName: user.nick_name, icon: user.icon };
}

export function toSessionUser(user: UserRow): SessionUser {
  return { ...toUserSummary(user), role: user.role };
}

function toUserInfo(info: UserInfoRow): UserInfo {
  return {
    userId: info.user_id,
    city: info.city,
    introduce: info.introduce,
    fans: info.fans,
    followee: info.followee,
    gender: info.gender,
    birthday: info.birthday ? info.birthday.toISOString().slice(0, 10) : null,
    credits: info.credits,
    level: info.level,
  };
}

/** hmdp names new users "user_" + 10 random characters. */
export function randomNickName(): string {
  return `user_${randomBytes(8).toString('base64url').slice(0, 10)}`;
}
