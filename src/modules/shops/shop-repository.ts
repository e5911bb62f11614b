import type { Insertable, Selectable, Transaction, Updateable } from 'kysely';
import type { Db } from '../../infra/db.js';
import type { Database, ShopTable } from '../../infra/schema.js';

export type ShopRow = Selectable<ShopTable>;
export type NewShop = Omit<Insertable<ShopTable>, 'id' | 'create_time' | 'update_time'>;
export type ShopChanges = Omit<Updateable<ShopTable>, 'id' | 'create_time' | 'update_time'>;

/** What the GEO index needs of a shop. */
export interface ShopPoint {
  id: string;
  typeId: string;
  x: number;
  y: number;
}

const POINT_COLUMNS = ['id', 'type_id', 'x', 'y'] as const;
const toPoint = (row: Pick<ShopRow, 'id' | 'type_id' | 'x' | 'y'>): ShopPoint => ({ id: row.id, typeId: row.type_id, x: row.x, y: row.y });

export class ShopRepository {
  constructor(private readonly db: Db) {}

  async findById(id: string): Promise<ShopRow | undefined> {
    return this.db.selectFrom('tb_shop').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async findByIds(ids: readonly string[]): Promise<ShopRow[]> {
    if (ids.length === 0) return [];
    return this.db.selectFrom('tb_shop').selectAll().where('id', 'in', ids).execute();
  }

  async pageByType(typeId: string, offset: number, limit: number): Promise<ShopRow[]> {
    return this.db.selectFrom('tb_shop').selectAll().where('type_id', '=', typeId).orderBy('id').limit(limit).offset(offset).execute();
  }

  /** Shops whose name contains `name` (all shops without one), by id. */
  async pageByName(name: string | undefined, offset: number, limit: number): Promise<ShopRow[]> {
    let query = this.db.selectFrom('tb_shop').selectAll();
    if (name) query = query.where('name', 'like', `%${escapeLike(name)}%`);
    return query.orderBy('id').limit(limit).offset(offset).execute();
  }

  /**
   * Inserts a shop and runs `beforeCommit(id)` inside the transaction: index updates that must
   * exist before anyone can see the shop (a Bloom filter that lacks a visible id rejects it).
   * If `beforeCommit` throws, nothing is committed.
   */
  async insert(shop: NewShop, beforeCommit: (id: string) => Promise<void> = async () => {}): Promise<string> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx.insertInto('tb_shop').values(shop).executeTakeFirstOrThrow();
      const id = String(result.insertId);
      await beforeCommit(id);
      return id;
    });
  }

  /**
   * Updates a shop in one transaction (row locked, read before and after) and returns both
   * versions, or undefined when the shop does not exist.
   */
  async update(id: string, changes: ShopChanges): Promise<{ before: ShopRow; after: ShopRow } | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const before = await lockRow(trx, id);
      if (!before) return undefined;
      if (Object.keys(changes).length > 0) await trx.updateTable('tb_shop').set(changes).where('id', '=', id).execute();
      const after = await lockRow(trx, id);
      return { before, after: after! };
    });
  }

  /** Every shop's position, in batches by id (keyset pages: cheap on a large table). */
  async *pointBatches(options: { typeId?: string; batchSize?: number } = {}): AsyncGenerator<ShopPoint[]> {
    const { typeId, batchSize = 1000 } = options;
    let after = '0';
    for (;;) {
      let query = this.db.selectFrom('tb_shop').select(POINT_COLUMNS).where('id', '>', after);
      if (typeId !== undefined) query = query.where('type_id', '=', typeId);
      const rows = await query.orderBy('id').limit(batchSize).execute();
      if (rows.length === 0) return;
      yield rows.map(toPoint);
      after = rows[rows.length - 1]!.id;
      if (rows.length < batchSize) return;
    }
  }

  /** Every shop id, in batches (for the Bloom filter). */
  async *idBatches(batchSize = 1000): AsyncGenerator<string[]> {
    for await (const points of this.pointBatches({ batchSize })) yield points.map((point) => point.id);
  }

  /** Type ids that have shops or exist as types: every possible GEO key. */
  async typeIds(): Promise<string[]> {
    const [types, used] = await Promise.all([
      this.db.selectFrom('tb_shop_type').select('id').execute(),
      this.db.selectFrom('tb_shop').select('type_id').distinct().execute(),
    ]);
    return [...new Set([...types.map((row) => row.id), ...used.map((row) => row.type_id)])].sort((a, b) => Number(a) - Number(b));
  }
}

function lockRow(trx: Transaction<Database>, id: string): Promise<ShopRow | undefined> {
  return trx.selectFrom('tb_shop').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

/** LIKE treats % and _ as wildcards and \ as escape: a name searched for is literal text. */
const escapeLike = (text: string): string => text.replace(/[\\%_]/g, '\\$&');
