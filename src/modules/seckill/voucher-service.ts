import { badRequest } from '../../http/errors.js';
import type { SaleStore } from './sale-store.js';
import type { NewVoucher, VoucherRepository, VoucherWithSeckill } from './voucher-repository.js';

export interface VoucherInput {
  shopId: string;
  title: string;
  subTitle?: string;
  rules?: string;
  payValue: number;
  actualValue: number;
}

export interface SeckillInput extends VoucherInput {
  stock: number;
  beginTime: string;
  endTime: string;
}

export interface VoucherView {
  id: string;
  shopId: string;
  title: string;
  subTitle: string;
  rules: string;
  payValue: number;
  actualValue: number;
  type: number;
  status: number;
  stock?: number;
  beginTime?: string;
  endTime?: string;
}

export class VoucherService {
  constructor(
    private readonly vouchers: VoucherRepository,
    private readonly seckill: SaleStore,
  ) {}

  async addVoucher(input: VoucherInput): Promise<string> {
    return this.vouchers.insertNormal(await this.validated(input));
  }

  /**
   * Writes both tables in one transaction, then publishes stock and window to Redis. If Redis
   * is unreachable right then, the sale is published later (publishUnfinished at start, or on
   * the first order), never lost: MySQL is the source of the voucher.
   */
  async addSeckillVoucher(input: SeckillInput): Promise<string> {
    // DATETIME keeps whole seconds: cut the milliseconds here so MySQL and Redis hold one window.
    const begin = wholeSeconds(new Date(input.beginTime));
    const end = wholeSeconds(new Date(input.endTime));
    if (end.getTime() <= begin.getTime()) throw badRequest('body.endTime must be after body.beginTime');
    if (end.getTime() <= Date.now()) throw badRequest('body.endTime must be in the future');
    const voucher = await this.validated(input);
    const voucherId = await this.vouchers.insertSeckill(voucher, { stock: input.stock, total_stock: input.stock, begin_time: begin, end_time: end });
    await this.seckill.publish({ voucherId, stock: input.stock, begin, end, total: input.stock });
    return voucherId;
  }

  async listByShop(shopId: string): Promise<VoucherView[]> {
    const rows = await this.vouchers.listByShop(shopId);
    return Promise.all(rows.map((row) => this.toView(row)));
  }

  /**
   * Puts every seckill voucher whose sale has not ended into Redis, unless it is there already.
   * Run at start: covers a publish that failed and a Redis that lost its data.
   */
  async publishUnfinished(now = new Date()): Promise<number> {
    let published = 0;
    for (const row of await this.vouchers.listUnfinishedSeckill(now)) {
      const state = {
        voucherId: row.voucher_id,
        stock: row.stock,
        begin: row.begin_time,
        end: row.end_time,
        total: row.total_stock,
        suspended: row.paused === 1,
      };
      if (await this.seckill.publish(state)) published += 1;
    }
    return published;
  }

  private async validated(input: VoucherInput): Promise<NewVoucher> {
    if (!(await this.vouchers.shopExists(input.shopId))) throw badRequest(`body.shopId: shop ${input.shopId} does not exist`);
    if (input.payValue > input.actualValue) throw badRequest('body.payValue must not exceed body.actualValue');
    return {
      shop_id: input.shopId,
      title: input.title,
      sub_title: input.subTitle ?? '',
      rules: input.rules ?? '',
      pay_value: String(input.payValue),
      actual_value: String(input.actualValue),
    };
  }

  private async toView(row: VoucherWithSeckill): Promise<VoucherView> {
    const view: VoucherView = {
      id: row.id,
      shopId: row.shop_id,
      title: row.title,
      subTitle: row.sub_title,
      rules: row.rules,
      payValue: Number(row.pay_value),
      actualValue: Number(row.actual_value),
      type: row.type,
      status: row.status,
    };
    if (row.stock === null || row.begin_time === null || row.end_time === null) return view;
    // Redis holds the live stock while a sale runs; MySQL lags behind by the queued orders.
    const live = await this.seckill.read(row.id);
    return {
      ...view,
      stock: live?.stock ?? row.stock,
      beginTime: row.begin_time.toISOString(),
      endTime: row.end_time.toISOString(),
    };
  }
}

const wholeSeconds = (date: Date): Date => new Date(Math.floor(date.getTime() / 1000) * 1000);
