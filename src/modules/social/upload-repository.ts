import type { Db } from '../../infra/db.js';

/** tb_upload: the owner of each uploaded file. */
export class UploadRepository {
  constructor(private readonly db: Db) {}

  async insert(userId: string, name: string, size: number): Promise<void> {
    await this.db.insertInto('tb_upload').values({ user_id: userId, name, size }).execute();
  }

  async ownerOf(name: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('tb_upload').select('user_id').where('name', '=', name).executeTakeFirst();
    return row?.user_id;
  }

  async delete(name: string): Promise<void> {
    await this.db.deleteFrom('tb_upload').where('name', '=', name).execute();
  }
}
