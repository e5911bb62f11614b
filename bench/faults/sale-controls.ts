/**
 * An administrator steering a sale while orders flow across three instances: pause it, resume
 * it, top its stock up, lower it, end it (PATCH endTime = now), each over HTTP on an instance of
 * its own choosing. Then every promise of the sale still holds (no oversell against the final
 * total, one order per user, no accepted order lost, MySQL and Redis agree), and the answers tell
 * the buyers what happened: while paused, only "paused" refusals and no order; after the end, only
 * "ended" refusals.
 *
 * The sale: one voucher, a new buyer per request (so every refusal says something about the sale,
 * never "already bought"), the stock small enough to sell out between the resume and the top-up,
 * so the top-up shows units coming back to instances that knew the voucher sold out.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { REFUSALS } from '../../src/modules/seckill/index.js';
import { SessionStore } from '../../src/modules/users/index.js';
import { type Check, readSaleFromMysql } from '../sale/index.js';
import type { World } from '../harness/index.js';
import {
  createFaultWorld,
  driveSale,
  startInstances,
  stopInstances,
  TimedSale,
  timeDrain,
  withCleanup,
  type FaultScenario,
  type Instance,
  type SaleSetup,
  type Size,
} from './harness/index.js';

/** Answers counted as landing inside a window only this long after the change was answered: a reserve decided before it may still be on its way. */
const IN_FLIGHT_MS = 100;

/** The sale's answers with their times (performance.now()): successes and refusals by message. */
class WatchedSale extends TimedSale {
  readonly answers: Array<{ at: number; accepted: boolean; message: string }> = [];

  override onResponse(status: number, body: string): void {
    super.onResponse(status, body);
    const accepted = status === 200 && body.startsWith('{"success":true');
    this.answers.push({ at: performance.now(), accepted, message: /"errorMsg":"([^"]*)"/.exec(body)?.[1] ?? (accepted ? '' : `HTTP ${status}`) });
  }

  between(from: number, to: number) {
    return this.answers.filter((answer) => answer.at >= from && answer.at < to);
  }
}

interface Change {
  name: string;
  /** When it was sent and answered (performance.now()). */
  sentAt: number;
  doneAt: number;
  status: number;
  /** The sale after it: total units offered and units left (the API's answer). */
  total: number;
  left: number;
}

export const saleControls: FaultScenario = {
  name: 'sale-controls',
  variants: ['pause, resume, top up, lower, end'],
  run: (variant, size) =>
    withCleanup(async (defer) => {
      const { rate, durationSeconds, stock, topUp } = dimensions(size);
      const requests = rate * durationSeconds;
      const world = await createFaultWorld({ users: requests + 50 });
      defer(() => world.destroy());
      const instances = await startInstances(3, world.env);
      defer(() => stopInstances(instances));
      const [voucherId] = await world.createVouchers(1, stock);
      const sale = new WatchedSale([voucherId!], world.users);
      const setup: SaleSetup = { vouchers: [voucherId!], stock, sale, rate, durationSeconds };
      const admin = await adminToken(world);
      const changes: Change[] = [];
      // Each change on another instance: whichever instance changes it, every instance obeys.
      const change = (name: string, instance: Instance, path: string, method: 'POST' | 'PATCH', body?: () => object) => async () => {
        changes.push(await control(instance, voucherId!, admin, name, path, method, body?.()));
      };
      const at = (share: number) => durationSeconds * share;
      const load = await driveSale(instances, setup, [
        { atSeconds: at(0.2), run: change('pause', instances[0]!, '/pause', 'POST') },
        { atSeconds: at(0.35), run: change('resume', instances[1]!, '/resume', 'POST') },
        {
          atSeconds: at(0.5),
          run: async () => {
            const before = await totalOf(world, voucherId!);
            await change('top up', instances[2]!, '', 'PATCH', () => ({ stock: before + topUp }))();
          },
        },
        {
          atSeconds: at(0.6),
          run: async () => {
            // Lower by a third of what is left: above what is sold or queued, however fast it sells.
            const latest = changes[changes.length - 1]!;
            const left = (await world.sale.reads.read(voucherId!))?.stock ?? 0;
            await change('lower', instances[0]!, '', 'PATCH', () => ({ stock: latest.total - Math.floor(left / 3) }))();
          },
        },
        { atSeconds: at(0.7), run: change('end', instances[1]!, '', 'PATCH', () => ({ endTime: new Date().toISOString() })) },
      ]);
      const drainMs = await timeDrain(world);
      await sleep(200);
      return {
        scenario: 'sale-controls',
        variant,
        ...(await judge(world, voucherId!, sale, changes, load.startedAt, drainMs)),
      };
    }),
};

function dimensions(size: Size) {
  // 80 requests/s: the stock lasts past the pause (even a change a second late) and sells out
  // after the resume, about when the top-up comes.
  return size === 'test' ? { rate: 80, durationSeconds: 10, stock: 300, topUp: 300 } : { rate: 80, durationSeconds: 20, stock: 500, topUp: 600 };
}

/** An administrator's session (the sale's changes are audited under this user). */
async function adminToken(world: World): Promise<string> {
  const user = world.users[world.users.length - 1]!;
  return new SessionStore(world.redis, 3600).create({ id: user.id, nickName: 'bench admin', icon: '', role: 'admin' });
}

async function control(
  instance: Instance,
  voucherId: string,
  token: string,
  name: string,
  path: string,
  method: 'POST' | 'PATCH',
  body?: object,
): Promise<Change> {
  const sentAt = performance.now();
  const response = await fetch(`${instance.url}/api/voucher/seckill/${voucherId}${path}`, {
    method,
    headers: { authorization: token, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const answer = (await response.json()) as { success: boolean; data?: { stock: number; left: number }; errorMsg?: string };
  if (!answer.success || !answer.data) throw new Error(`sale-controls: ${name} answered ${response.status} ${answer.errorMsg ?? ''}`);
  return { name, sentAt, doneAt: performance.now(), status: response.status, total: answer.data.stock, left: answer.data.left };
}

/** Units the sale offers in total, per MySQL (what a PATCH of stock sets). */
async function totalOf(world: World, voucherId: string): Promise<number> {
  const row = await world.db.selectFrom('tb_seckill_voucher').select(['total_stock', 'stock']).where('voucher_id', '=', voucherId).executeTakeFirstOrThrow();
  if (row.total_stock !== null) return row.total_stock;
  const { perVoucher } = await readSaleFromMysql(world.db, [voucherId]);
  return row.stock + Number(perVoucher[0]?.orders ?? 0);
}

async function judge(world: World, voucherId: string, sale: WatchedSale, changes: Change[], startedAt: number, drainMs: number | null) {
  const { perVoucher, orderIds, mysqlStock } = await readSaleFromMysql(world.db, [voucherId]);
  const orders = Number(perVoucher[0]?.orders ?? 0);
  const buyers = Number(perVoucher[0]?.users ?? 0);
  const total = await totalOf(world, voucherId);
  const inMysql = mysqlStock.get(voucherId) ?? 0;
  const inRedis = (await world.sale.reads.read(voucherId))?.stock;
  const lost = [...sale.accepted].filter((id) => !orderIds.has(id)).length;
  const byName = new Map(changes.map((c) => [c.name, c]));
  const [pause, resume, topUp, lower, end] = ['pause', 'resume', 'top up', 'lower', 'end'].map((name) => byName.get(name));
  const whilePaused = pause && resume ? sale.between(pause.doneAt + IN_FLIGHT_MS, resume.sentAt) : [];
  const afterEnd = end ? sale.between(end.doneAt + IN_FLIGHT_MS, Infinity) : [];
  const afterTopUp = topUp && lower ? sale.between(topUp.doneAt, lower.sentAt) : [];
  const count = (answers: typeof sale.answers, message: string) => answers.filter((answer) => answer.message === message).length;
  const seconds = (change: Change | undefined) => (change ? Math.round((change.doneAt - startedAt) / 100) / 10 : '–');

  const checks: Check[] = [
    { name: 'every change answered', pass: changes.length === 5, detail: changes.map((c) => `${c.name} ${c.status}`).join(', ') },
    { name: 'drained', pass: drainMs !== null, detail: drainMs === null ? 'still queued or pending' : `in ${drainMs} ms` },
    { name: 'no accepted order lost', pass: lost === 0, detail: `${lost} of ${sale.accepted.size} answered orders missing from MySQL` },
    { name: 'no user twice', pass: orders === buyers, detail: `${orders} orders, ${buyers} buyers` },
    { name: 'no oversell', pass: orders <= total && inMysql >= 0 && (inRedis ?? 0) >= 0, detail: `${orders} orders of ${total} units offered at the end` },
    { name: 'MySQL stock = total − orders', pass: inMysql === total - orders, detail: `${inMysql} left in MySQL, ${total} − ${orders}` },
    { name: 'MySQL stock = Redis stock', pass: inRedis === inMysql, detail: `MySQL ${inMysql}, Redis ${inRedis ?? 'none'}` },
    {
      name: 'while paused: no order, only "paused" refusals',
      pass: whilePaused.length > 0 && whilePaused.every((answer) => answer.message === REFUSALS.suspended),
      detail: `${count(whilePaused, REFUSALS.suspended)} of ${whilePaused.length} answers "${REFUSALS.suspended}"`,
    },
    {
      name: 'after the top-up: orders again',
      pass: afterTopUp.some((answer) => answer.accepted),
      detail: `${afterTopUp.filter((answer) => answer.accepted).length} accepted between the top-up and the lowering`,
    },
    {
      name: 'after the end: no order, only "ended" refusals',
      pass: afterEnd.length > 0 && afterEnd.every((answer) => answer.message === REFUSALS.ended),
      detail: `${count(afterEnd, REFUSALS.ended)} of ${afterEnd.length} answers "${REFUSALS.ended}"`,
    },
  ];
  return {
    figures: {
      requests: sale.answers.length,
      accepted: sale.accepted.size,
      inMysql: orders,
      duplicates: orders - buyers,
      oversold: Math.max(0, orders - total),
      lost,
      drainMs: drainMs ?? 'timeout',
      changesAtSeconds: [pause, resume, topUp, lower, end].map(seconds).join(' / '),
      totals: [topUp, lower].map((c) => c?.total ?? '–').join(' → '),
      refusedPaused: count(sale.answers, REFUSALS.suspended),
      refusedSoldOut: count(sale.answers, REFUSALS.soldOut),
      refusedEnded: count(sale.answers, REFUSALS.ended),
      changeMs: Math.max(...changes.map((c) => Math.round(c.doneAt - c.sentAt))),
    },
    checks,
  };
}
