import type { Selectable } from 'kysely';
import type { Db } from '../../infra/db.js';
import type { UserInfoTable, UserTable } from '../../infra/schema.js';

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

  async findInfo(userId: string): Promise<UserInfoRow | undefined> {
    return this.db.selectFrom('tb_user_info').selectAll().where('user_id', '=', userId).executeTakeFirst();
  }
}
