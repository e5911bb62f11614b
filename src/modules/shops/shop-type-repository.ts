import type { Db } from '../../infra/db.js';

export interface ShopTypeView {
  id: string;
  name: string;
  icon: string;
  sort: number;
}

export class ShopTypeRepository {
  constructor(private readonly db: Db) {}

  /** Every type in display order (hmdp: ORDER BY sort). */
  async listAll(): Promise<ShopTypeView[]> {
    return this.db.selectFrom('tb_shop_type').select(['id', 'name', 'icon', 'sort']).orderBy('sort').orderBy('id').execute();
  }

  async exists(typeId: string): Promise<boolean> {
    return (await this.db.selectFrom('tb_shop_type').select('id').where('id', '=', typeId).executeTakeFirst()) !== undefined;
  }
}
