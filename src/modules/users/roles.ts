import type { UserRole } from '../../infra/schema.js';
import type { UserRepository, UserRow } from './user-repository.js';
import { randomNickName } from './user-service.js';
import type { SessionStore } from './session-store.js';

/** Mainland-China mobile numbers, as the login accepts them. */
export const PHONE_PATTERN = /^1[3-9]\d{9}$/;

export class InvalidPhoneError extends Error {
  override name = 'InvalidPhoneError';
}

export class UnknownUserError extends Error {
  override name = 'UnknownUserError';
}

export interface RoleChange {
  user: Pick<UserRow, 'id' | 'phone' | 'nick_name'>;
  role: UserRole;
  /** The user did not exist and was created (a grant to a phone that never logged in). */
  created: boolean;
  /** The role was different before. */
  changed: boolean;
  /** Live sessions whose role was updated at once. */
  sessionsUpdated: number;
}

/**
 * Administrator roles (tb_user.role), behind `npm run admin`. A change is written to MySQL and
 * pushed into the user's live sessions while the user's row is locked, so it takes effect on
 * the next request of every session, and a login running at the same time sees it too.
 */
export class RoleService {
  constructor(private readonly deps: { users: UserRepository; sessions: SessionStore }) {}

  /** Makes the user with this phone an administrator, creating the user as a first login would. */
  async grant(phone: string): Promise<RoleChange> {
    checkPhone(phone);
    const existing = await this.deps.users.findByPhone(phone);
    const user = existing ?? (await this.deps.users.findOrCreateByPhone(phone, randomNickName()));
    return this.setRole(user.id, 'admin', existing === undefined);
  }

  /** Makes the user with this phone a plain user again. */
  async revoke(phone: string): Promise<RoleChange> {
    checkPhone(phone);
    const user = await this.deps.users.findByPhone(phone);
    if (!user) throw new UnknownUserError(`No user has the phone ${phone}`);
    return this.setRole(user.id, 'user', false);
  }

  async listAdmins(): Promise<UserRow[]> {
    return this.deps.users.findByRole('admin');
  }

  private async setRole(userId: string, role: UserRole, created: boolean): Promise<RoleChange> {
    const change = await this.deps.users.withUserLocked(userId, async (user, setRole) => {
      if (user.role !== role) await setRole(role);
      // Pushed even when unchanged: repairs sessions that missed an earlier change (e.g. Redis was down).
      const sessionsUpdated = await this.deps.sessions.setRole(userId, role);
      return { user, role, created, changed: user.role !== role, sessionsUpdated };
    });
    if (!change) throw new UnknownUserError(`User ${userId} vanished`);
    return change;
  }
}

function checkPhone(phone: string): void {
  if (!PHONE_PATTERN.test(phone)) {
    throw new InvalidPhoneError(`Invalid phone ${JSON.stringify(phone)}: expected a mainland-China mobile number (11 digits starting with 13-19)`);
  }
}
