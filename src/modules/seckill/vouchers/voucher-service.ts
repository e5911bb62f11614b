import { InvalidInput } from '../errors/index.js';
import type { Cache, CacheClient } from '../../../lib/cache/index.js';
import type { KeyReader } from '../../../lib/near-cache/index.js';
import { DEFAULT_LIMIT_PER_USER, MAX_BUCKETS, VOUCHER_LIST_CACHE_NAME, voucherListCacheKey } from '../keys.js';
import { CAPTCHA_MAX_NUMBER } from '../gate/captcha-challenges.js';
import { GATE_MODES, type GateMode } from '../gate/gate-settings-cache.js';
import type { Sale } from '../sale/sale.js';
import type { NewVoucher, VoucherRepository, VoucherWithSeckill } from '../record/voucher-repository.js';
import { SECKILL_MESSAGES } from '../messages.js';

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
  /** Live orders one user may hold (default 1). */
  limitPerUser?: number;
  /** Default `off`: hmdp's order route, no token. */
  purchaseGate?: GateMode;
  /** The captcha's cost (default CAPTCHA_MAX_NUMBER.default), used while the gate is `captcha`. */
  captchaMaxNumber?: number;
  /** Redis buckets the stock is sold from (default 1; docs/flows/seckill-buckets.md). */
  buckets?: number;
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
  limitPerUser?: number;
  /** Seckill vouchers: what an order needs besides the login (purchase-gate.ts). */
  purchaseGate?: GateMode;
}

export interface VoucherListCacheOptions {
  caches: CacheClient;
  /** Where the sale hashes' stock is read (the process's near cache, or a PassThroughReader). */
  reader: KeyReader;
  ttlMs: number;
  /** How long a shop without vouchers is remembered as such (the null marker). */
  nullTtlMs: number;
  jitterPercent: number;
  waitMs: number;
}

export class VoucherService {
  /**
   * `cache:voucher-list:{shopId}`: a shop's vouchers as listed, seckill ones with MySQL's stock
   * (shown only while Redis lacks the sale); null for a shop without any. Its loader is the only
   * reader of the list in MySQL.
   */
  readonly listCache: Cache<VoucherView[]>;
  private readonly reader: KeyReader;

  constructor(
    private readonly vouchers: VoucherRepository,
    /** Publishes the sales and reads their stock. */
    private readonly sale: Pick<Sale, 'keys' | 'publisher' | 'reads'>,
    list: VoucherListCacheOptions,
    /** Most buckets a voucher may be sold from (SECKILL_MAX_BUCKETS); default: all when the sale's keys have bucket lanes. */
    private readonly maxBuckets = sale.keys.bucketLanes ? MAX_BUCKETS : 1,
  ) {
    this.reader = list.reader;
    this.listCache = list.caches.define<VoucherView[]>({
      name: VOUCHER_LIST_CACHE_NAME,
      key: voucherListCacheKey,
      load: async (shopId) => {
        const rows = await this.vouchers.listByShop(shopId);
        return rows.length === 0 ? null : rows.map(toView);
      },
      ttlMs: list.ttlMs,
      nullTtlMs: list.nullTtlMs,
      jitterPercent: list.jitterPercent,
      waitMs: list.waitMs,
    });
  }

  /**
   * The Redis stock of the sales open now (at most `limit`, ending soonest first): one indexed
   * MySQL read and one HGET per voucher, for the `seckill_stock_left` gauge at scrape time.
   */
  async openSaleStock(limit: number, now = new Date()): Promise<Array<{ voucherId: string; stock: number }>> {
    const voucherIds = await this.vouchers.listOpenSeckillIds(now, limit);
    const stocks = await Promise.all(voucherIds.map((voucherId) => this.sale.reads.stockOf(voucherId)));
    return voucherIds.flatMap((voucherId, index) => (stocks[index] === null ? [] : [{ voucherId, stock: stocks[index]! }]));
  }

  /** After the commit, the shop's cached list is invalidated (every instance lists the new voucher). */
  async addVoucher(input: VoucherInput): Promise<string> {
    const voucherId = await this.vouchers.insertNormal(await this.validated(input));
    await this.listCache.invalidate(input.shopId);
    return voucherId;
  }

  /**
   * Writes both tables in one transaction, invalidates the shop's cached list, then publishes
   * stock and window to Redis (until then the list shows MySQL's stock). If Redis is unreachable
   * right then, the sale is published later (publishUnfinished at start, or on the first order),
   * never lost: MySQL is the source of the voucher.
   */
  async addSeckillVoucher(input: SeckillInput): Promise<string> {
    // DATETIME keeps whole seconds: cut the milliseconds here so MySQL and Redis hold one window.
    const begin = wholeSeconds(new Date(input.beginTime));
    const end = wholeSeconds(new Date(input.endTime));
    if (end.getTime() <= begin.getTime()) throw new InvalidInput(SECKILL_MESSAGES.endBeforeBegin());
    if (end.getTime() <= Date.now()) throw new InvalidInput(SECKILL_MESSAGES.endInPast());
    const voucher = await this.validated(input);
    const limitPerUser = input.limitPerUser ?? DEFAULT_LIMIT_PER_USER;
    const buckets = input.buckets ?? 1;
    if (buckets > this.maxBuckets) throw new InvalidInput(SECKILL_MESSAGES.bucketsOff({ most: this.maxBuckets }));
    const voucherId = await this.vouchers.insertSeckill(voucher, {
      stock: input.stock,
      total_stock: input.stock,
      begin_time: begin,
      end_time: end,
      limit_per_user: limitPerUser,
      purchase_gate: input.purchaseGate ?? 'off',
      captcha_max_number: input.captchaMaxNumber ?? CAPTCHA_MAX_NUMBER.default,
      buckets,
    });
    await this.listCache.invalidate(input.shopId);
    await this.sale.publisher.publish({ voucherId, stock: input.stock, begin, end, total: input.stock, limitPerUser, buckets });
    return voucherId;
  }

  /**
   * A shop's vouchers, seckill ones with their live stock: the list from its cache and each
   * sale's stock from its Redis hash, both through the near cache. A quiet shop's list then costs
   * neither MySQL nor Redis; an order, a control or a new voucher anywhere drops what it changed
   * on every instance (Redis client tracking).
   */
  async listByShop(shopId: string): Promise<VoucherView[]> {
    const listed = (await this.listCache.get(shopId)) ?? [];
    return Promise.all(listed.map((voucher) => this.withLiveStock(voucher)));
  }

  /**
   * Call after a change of a voucher's listed fields (window, limit, gate, stock: the sale
   * controls): its shop's list is loaded again, here at once and on every other instance when
   * Redis' invalidation arrives.
   */
  async forgetListOf(voucherId: string): Promise<void> {
    const shopId = await this.vouchers.shopOf(voucherId);
    if (shopId !== undefined) await this.listCache.invalidate(shopId);
  }

  /**
   * Puts every seckill voucher whose sale has not ended into Redis, unless it is there already.
   * Run at start: covers a publish that failed and a Redis that lost its data.
   */
  async publishUnfinished(now = new Date()): Promise<number> {
    let published = 0;
    for (const sale of await this.vouchers.listUnfinishedSales(now)) {
      if (await this.sale.publisher.publish(sale)) published += 1;
    }
    return published;
  }

  private async validated(input: VoucherInput): Promise<NewVoucher> {
    if (!(await this.vouchers.shopExists(input.shopId))) throw new InvalidInput(SECKILL_MESSAGES.shopMissing({ shopId: input.shopId }));
    if (input.payValue > input.actualValue) throw new InvalidInput(SECKILL_MESSAGES.payOverActual());
    return {
      shop_id: input.shopId,
      title: input.title,
      sub_title: input.subTitle ?? '',
      rules: input.rules ?? '',
      pay_value: String(input.payValue),
      actual_value: String(input.actualValue),
    };
  }

  /** Redis holds the live stock while a sale runs; MySQL's, cached with the list, lags behind by the queued orders. */
  private async withLiveStock(voucher: VoucherView): Promise<VoucherView> {
    if (voucher.stock === undefined) return voucher;
    const live = await this.sale.reads.liveStock(voucher.id, this.reader);
    // A new object: the cached one is shared by every request (and the near cache).
    return live === null || live === voucher.stock ? voucher : { ...voucher, stock: live };
  }
}

/** A voucher as listed; a seckill one with MySQL's stock, which listByShop replaces by Redis' when Redis knows the sale. */
function toView(row: VoucherWithSeckill): VoucherView {
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
  return {
    ...view,
    stock: row.stock,
    beginTime: row.begin_time.toISOString(),
    endTime: row.end_time.toISOString(),
    limitPerUser: row.limit_per_user ?? DEFAULT_LIMIT_PER_USER,
    purchaseGate: GATE_MODES.find((mode) => mode === row.purchase_gate) ?? 'off',
  };
}

const wholeSeconds = (date: Date): Date => new Date(Math.floor(date.getTime() / 1000) * 1000);
