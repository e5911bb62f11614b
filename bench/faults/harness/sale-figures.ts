/** What a fault run's sale left in MySQL and Redis against what its answers said: the figures and checks every sale scenario shares. */
import type { World } from '../../harness/index.js';
import { readSaleFromMysql, streamBacklog, type Check } from '../../sale/index.js';
import type { Figures } from './scenario.js';
import type { LoadResult, SaleSetup } from './drive-sale.js';

export interface SaleFigures {
  /** Answers with success: true. */
  accepted: number;
  /** Orders in MySQL nobody was told about (the request's answer was lost: e.g. its instance died). */
  acceptedUnanswered: number;
  inMysql: number;
  /** Orders beyond the first of a user for a voucher (order ids are the primary key: never twice). */
  duplicates: number;
  /** Units sold beyond a voucher's stock (orders over stock, or negative stock). */
  oversold: number;
  /** Answered success: true but not in MySQL. */
  lost: number;
  /** Units taken from MySQL stock minus orders (0: stock and orders agree). */
  stockVsOrders: number;
  /** Vouchers whose Redis stock differs from MySQL's. */
  redisStockDrift: number;
  deadLetters: number;
  pending: number;
  /** Idempotency-Keys answered with two different order ids (a retry made a second order). */
  keysWithTwoOrders: number;
  retried: number;
  recovered: number;
}

/** What the sale left in MySQL and Redis, against what its answers said. */
export async function saleFigures(world: World, setup: SaleSetup): Promise<SaleFigures> {
  const { vouchers, stock, sale } = setup;
  const { perVoucher: rows, orderIds: ids, mysqlStock } = await readSaleFromMysql(world.db, vouchers);
  let redisStockDrift = 0;
  for (const voucher of vouchers) if ((await world.sale.reads.read(voucher))?.stock !== mysqlStock.get(voucher)) redisStockDrift += 1;
  const orders = new Map(rows.map((row) => [row.voucher_id, Number(row.orders)]));
  const inMysql = ids.size;
  const sold = vouchers.reduce((sum, voucher) => sum + (stock - (mysqlStock.get(voucher) ?? stock)), 0);
  const backlog = await streamBacklog(world);
  return {
    accepted: sale.accepted.size,
    acceptedUnanswered: [...ids].filter((id) => !sale.accepted.has(id)).length,
    inMysql,
    duplicates: rows.reduce((sum, row) => sum + Number(row.orders) - Number(row.users), 0),
    oversold: vouchers.reduce((sum, voucher) => sum + Math.max(0, (orders.get(voucher) ?? 0) - stock) + Math.max(0, -(mysqlStock.get(voucher) ?? 0)), 0),
    lost: [...sale.accepted].filter((id) => !ids.has(id)).length,
    stockVsOrders: sold - inMysql,
    redisStockDrift,
    deadLetters: backlog.dead,
    pending: backlog.pending + backlog.queued,
    keysWithTwoOrders: sale.keysWithTwoOrders(),
    retried: sale.retried,
    recovered: sale.recovered,
  };
}

/** The promises every sale keeps whatever the fault: checks with PASS/FAIL for the CLI. */
export function saleChecks(figures: SaleFigures, drainMs: number | null): Check[] {
  return [
    { name: 'drained', pass: drainMs !== null && figures.pending === 0, detail: drainMs === null ? 'still queued or pending' : `in ${drainMs} ms` },
    { name: 'no accepted order lost', pass: figures.lost === 0, detail: `${figures.lost} of ${figures.accepted} answered orders missing from MySQL` },
    { name: 'no user twice', pass: figures.duplicates === 0, detail: `${figures.duplicates} repeated buyers` },
    { name: 'no oversell', pass: figures.oversold === 0, detail: `${figures.oversold} units beyond stock` },
    { name: 'MySQL stock = orders', pass: figures.stockVsOrders === 0, detail: `stock taken − orders = ${figures.stockVsOrders}` },
    { name: 'no dead letters', pass: figures.deadLetters === 0, detail: `${figures.deadLetters} dead letters` },
    {
      name: 'a retry is the same order',
      pass: figures.keysWithTwoOrders === 0,
      detail: `${figures.retried} retried with their Idempotency-Key (${figures.recovered} then got their order id), ${figures.keysWithTwoOrders} keys with two orders`,
    },
  ];
}

/** Figures row from the sale figures and the load (the columns every sale scenario shares). */
export function saleRow(figures: SaleFigures, load: LoadResult, drainMs: number | null): Figures {
  return {
    requests: load.phases.reduce((sum, phase) => sum + phase.requests, 0) + load.unanswered,
    accepted: figures.accepted,
    acceptedUnanswered: figures.acceptedUnanswered,
    inMysql: figures.inMysql,
    duplicates: figures.duplicates,
    oversold: figures.oversold,
    lost: figures.lost,
    drainMs: drainMs ?? 'timeout',
  };
}
