import type { RowChange } from '../../lib/cdc/index.js';
import type { ShopPoint } from '../shops/index.js';

/** The tables whose rows the app caches: what the change follower reads of the binlog. */
export const FOLLOWED_TABLES = ['tb_shop', 'tb_shop_type', 'tb_voucher', 'tb_seckill_voucher'] as const;

/**
 * Columns of tb_seckill_voucher whose change alone leaves the voucher list as it is: the order
 * writer moves the stock on every order, and while a sale runs the list shows Redis's stock, not
 * this one (the list's TTL bounds the fallback it shows while Redis lacks a sale).
 */
const SALE_COUNTERS = new Set(['stock', 'total_stock', 'update_time']);

/** What a batch of committed transactions asks of the caches, each entry once. */
export interface Invalidations {
  /** tb_shop rows in commit order: before (update, delete) and after (insert, update). */
  shops: Array<{ before?: ShopPoint; after?: ShopPoint }>;
  shopTypes: boolean;
  /** Shops whose voucher list changed. */
  voucherListShops: Set<string>;
  /** Seckill vouchers changed whose shop the batch does not name (looked up in tb_voucher). */
  vouchersOfUnknownShop: Set<string>;
}

/** The invalidations a batch of committed row changes needs (pure: no I/O). */
export function invalidationsOf(changes: Iterable<RowChange>): Invalidations {
  const plan: Invalidations = { shops: [], shopTypes: false, voucherListShops: new Set(), vouchersOfUnknownShop: new Set() };
  const shopOfVoucher = new Map<string, string>();
  const seckillVouchers: string[] = [];
  for (const change of changes) {
    switch (change.table) {
      case 'tb_shop':
        plan.shops.push({ ...(change.before ? { before: pointOf(change.before) } : {}), ...(change.after ? { after: pointOf(change.after) } : {}) });
        break;
      case 'tb_shop_type':
        plan.shopTypes = true;
        break;
      case 'tb_voucher':
        for (const row of [change.before, change.after]) {
          if (row === undefined) continue;
          plan.voucherListShops.add(String(row.shop_id));
          shopOfVoucher.set(String(row.id), String(row.shop_id));
        }
        break;
      case 'tb_seckill_voucher':
        if (listedColumnsChanged(change)) seckillVouchers.push(String((change.after ?? change.before)!.voucher_id));
        break;
    }
  }
  for (const voucherId of seckillVouchers) {
    const shopId = shopOfVoucher.get(voucherId);
    if (shopId === undefined) plan.vouchersOfUnknownShop.add(voucherId);
    else plan.voucherListShops.add(shopId);
  }
  return plan;
}

const pointOf = (row: Record<string, unknown>): ShopPoint => ({ id: String(row.id), typeId: String(row.type_id), x: Number(row.x), y: Number(row.y) });

function listedColumnsChanged(change: RowChange): boolean {
  if (change.kind !== 'update') return true;
  const { before = {}, after = {} } = change;
  return Object.keys(after).some((column) => !SALE_COUNTERS.has(column) && !sameValue(before[column], after[column]));
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  return a === b || String(a) === String(b);
}
