import type { Selectable } from 'kysely';
import type { Db } from '../../infra/db.js';
import type { UserInfoTable, UserRole, UserTable } from '../../infra/schema.js';

export type UserRow = Selectable<UserTable>;
export type UserInfoRow = Selectable<UserInfoTable>;

export class UserRepository {
  constructor(private readonly db: Db) {}

  async findById(id: string): Promise<UserRow | undefined> {
    return this.db.selectFrom('tb_user').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Users with these ids, in no particular order (missing ids are left out). */
  async findByIds(ids: readonly string[]): Promise<UserRow[]> {
    if (ids.length === 0) return [];
    return this.db.selectFrom('tb_user').selectAll().where('id', 'in', ids).execute();
  }

  async findByPhone(phone: string): Promise<UserRow | undefined> {
    return this.db.selectFrom('tb_user').selectAll().where('phone', '=', phone).executeTakeFirst();
  }

  /**
   * Returns the user with this phone, creating it first if there is none. Two first logins of
   * one phone at once both end up with the same row (INSERT IGNORE on the unique phone key).
   */
  async findOrCreateByPhone(phone: string, nickName: string): Promise<UserRow> {
    const existing = await this.findByPhone(phone);
    if (existing) return existing;
    await this.db.insertInto('tb_user').ignore().values({ phone, nick_name: nickName }).execute();
    const created = await this.findByPhone(phone);
    if (!created) throw new Error(`user with phone ${phone} vanished right after insert`);
    return created;
  }

  /**
   * Runs `fn` in a transaction holding the user's row lock (SELECT … FOR UPDATE), with the row as
   * locked and a way to change its role in that transaction. Logins (which copy the role into a
   * new session) and role changes (which push it into live sessions) of one user thus happen one
   * at a time, each seeing the role the previous one committed. Undefined if there is no such user.
   */
  async withUserLocked<T>(userId: string, fn: (user: UserRow, setRole: (role: UserRole) => Promise<void>) => Promise<T>): Promise<T | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const user = await trx.selectFrom('tb_user').selectAll().where('id', '=', userId).forUpdate().executeTakeFirst();
      if (!user) return undefined;
      const setRole = async (role: UserRole): Promise<void> => {
        await trx.updateTable('tb_user').set({ role }).where('id', '=', userId).execute();
      };
      return fn(user, setRole);
    });
  }

  async findByRole(role: UserRole): Promise<UserRow[]> {
    return this.db.selectFrom('tb_user').selectAll().where('role', '=', role).orderBy('id').execute();
  }

  async findInfo(userId: string): Promise<UserInfoRow | undefined> {
    return this.db.selectFrom('tb_user_info').selectAll().where('user_id', '=', userId).executeTakeFirst();
  }
}
