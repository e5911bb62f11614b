import { describe, expect, it } from 'vitest';
import { invalidationsOf } from '../../../../src/modules/cdc/followed-tables.js';

/** What a batch of committed row changes asks of the caches (src/modules/cdc/followed-tables.ts). */
describe('invalidationsOf', () => {
  it("a shop's rows become its points before and after, in commit order; a type change flags the type list", () => {
    const plan = invalidationsOf([
      { table: 'tb_shop', kind: 'insert', after: { id: 7, type_id: 1, x: 120.1, y: 30.2, name: 'a' } },
      { table: 'tb_shop', kind: 'update', before: { id: 7, type_id: 1, x: 120.1, y: 30.2 }, after: { id: 7, type_id: 2, x: 120.1, y: 30.2 } },
      { table: 'tb_shop', kind: 'delete', before: { id: 8, type_id: 3, x: 1, y: 2 } },
      { table: 'tb_shop_type', kind: 'update', before: { id: 1, name: 'a' }, after: { id: 1, name: 'b' } },
    ]);
    expect(plan.shops).toEqual([
      { after: { id: '7', typeId: '1', x: 120.1, y: 30.2 } },
      { before: { id: '7', typeId: '1', x: 120.1, y: 30.2 }, after: { id: '7', typeId: '2', x: 120.1, y: 30.2 } },
      { before: { id: '8', typeId: '3', x: 1, y: 2 } },
    ]);
    expect(plan.shopTypes).toBe(true);
  });

  it('a voucher moved to another shop invalidates both lists; a seckill voucher of the batch finds its shop there', () => {
    const plan = invalidationsOf([
      { table: 'tb_voucher', kind: 'update', before: { id: 5, shop_id: 1 }, after: { id: 5, shop_id: 2 } },
      { table: 'tb_seckill_voucher', kind: 'update', before: { voucher_id: 5, end_time: new Date(1) }, after: { voucher_id: 5, end_time: new Date(2) } },
    ]);
    expect([...plan.voucherListShops].sort()).toEqual(['1', '2']);
    expect(plan.vouchersOfUnknownShop.size).toBe(0);
    expect(plan.shopTypes).toBe(false);
  });

  it("a seckill voucher's stock alone (the order writer's) asks nothing; another column of one not in the batch asks for its shop", () => {
    const stockOnly = invalidationsOf([
      {
        table: 'tb_seckill_voucher',
        kind: 'update',
        before: { voucher_id: 9, stock: 3, update_time: new Date(1) },
        after: { voucher_id: 9, stock: 2, update_time: new Date(2) },
      },
    ]);
    expect(stockOnly.voucherListShops.size + stockOnly.vouchersOfUnknownShop.size).toBe(0);
    const window = invalidationsOf([
      { table: 'tb_seckill_voucher', kind: 'update', before: { voucher_id: 9, end_time: new Date(1) }, after: { voucher_id: 9, end_time: new Date(2) } },
    ]);
    expect([...window.vouchersOfUnknownShop]).toEqual(['9']);
    const inserted = invalidationsOf([{ table: 'tb_seckill_voucher', kind: 'insert', after: { voucher_id: 10, stock: 5 } }]);
    expect([...inserted.vouchersOfUnknownShop]).toEqual(['10']);
  });

  it('tables not followed ask nothing', () => {
    const plan = invalidationsOf([{ table: 'tb_user', kind: 'insert', after: { id: 1 } }]);
    expect(plan).toEqual({ shops: [], shopTypes: false, voucherListShops: new Set(), vouchersOfUnknownShop: new Set() });
  });
});
