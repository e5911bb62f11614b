/**
 * The seckill scenarios: one strategy (async: Lua + stream + worker; sync: lock + transaction)
 * under load, then the correctness check of everything it sold.
 *
 * The sale: vouchers with `stock` units each, offered one after the other to all users: request
 * i is user i mod U buying voucher ⌊i / U⌋. So each voucher sees U buyers at once for `stock`
 * units (sold out part-way: the oversell boundary is crossed under full concurrency), and a user
 * never asks twice for one voucher until every voucher made for the run has been offered (then
 * the offers wrap round and the answer is "already bought").
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { BenchOptions } from './options.js';
import type { BenchUser, World } from './world.js';
import type { PhaseResult, RequestSource, RequestTiming, SentRequest } from './load.js';
import type { PreparedScenario } from './http-scenarios.js';
import { TokenSigner } from '../src/lib/signed-token/index.js';
import { REFUSALS } from '../src/modules/seckill/index.js';
import { BENCH_PURCHASE_TOKEN_KEYS, scrapeMetrics, startServer } from './processes.js';
import { startSliceWork, workPerOrder, type WorkPerOrder } from './redis-work.js';

export type Strategy = 'async' | 'sync';

export interface Check {
  name: string;
  pass: boolean;
  detail: string;
}

export interface SeckillResult {
  /** `seckill-gated`: the async strategy on sales gated with a purchase token (purchase-gate.ts), each order carrying one. */
  scenario: `seckill-${Strategy}` | 'seckill-gated' | 'seckill-rabbitmq' | 'seckill-semaphore';
  /** `semaphore`: gulimall's design, a bench route (seckill-semaphore.ts), not a strategy of the app. */
  strategy: Strategy | 'semaphore';
  saturation: PhaseResult;
  fixedRate: PhaseResult;
  /** The saturation phase's slices (bench/load.ts). */
  slices: PhaseResult[];
  vouchers: number;
  stockPerVoucher: number;
  /** Answers with success: true, over all phases (warm-up included). */
  accepted: number;
  /** Answers with success: false, by message. */
  refused: Record<string, number>;
  /** From the end of the load until the order worker had written everything (async). */
  drainMs: number;
  /** Redis commands, script calls, reserve batch size and CPU per accepted order over the saturation slices. */
  work?: WorkPerOrder;
  /** From acceptance to MySQL commit, p50 and p99 in ms, over the whole run (the server's seckill_order_write_lag_seconds; bucket bounds). */
  writeLag?: { p50: number; p99: number; count: number };
  checks: Check[];
  pass: boolean;
}

/** What one request of a sale got, as the sold-out checks count it. */
export type SaleAnswer = 'accepted' | 'sold-out' | 'other';

/**
 * What the buyers of a sale were told, per voucher, with the times that make the "no false sold
 * out" check sound: when each request went out and when each "sold out" answer came back, on this
 * process's one clock (performance.now()). Fed by the HTTP scenarios (Sale) and by
 * `npm run bench -- hot-voucher`'s bucketed sales.
 */
export class SoldOutLedger {
  private readonly byVoucher = new Map<string, VoucherAnswers>();

  /** A request for `voucher` sent at `sentAt` was answered now (or at `receivedAt`). */
  answered(voucher: string, answer: SaleAnswer, sentAt: number, receivedAt = performance.now()): void {
    let tally = this.byVoucher.get(voucher);
    if (!tally) {
      tally = { accepted: 0, soldOut: 0, firstSoldOutAt: undefined, acceptedAfterSoldOut: 0 };
      this.byVoucher.set(voucher, tally);
    }
    if (answer === 'accepted') {
      tally.accepted += 1;
      // Set once, never moved: a request answered before the first "sold out" arrived was sent before it.
      if (tally.firstSoldOutAt !== undefined && sentAt > tally.firstSoldOutAt) tally.acceptedAfterSoldOut += 1;
    } else if (answer === 'sold-out') {
      tally.soldOut += 1;
      tally.firstSoldOutAt ??= receivedAt;
    }
  }

  of(voucher: string): VoucherAnswers | undefined {
    return this.byVoucher.get(voucher);
  }
}

export interface VoucherAnswers {
  accepted: number;
  /** "Sold out" answers. */
  soldOut: number;
  /** When the first "sold out" answer arrived. */
  firstSoldOutAt: number | undefined;
  /** Accepted orders whose request was sent after the first "sold out" answer had arrived. */
  acceptedAfterSoldOut: number;
}

/**
 * "Every unit sold" and "no false sold out", per voucher, from what its buyers were told
 * (`ledger`), the units left at the end (`left`: stock not sold, in Redis or MySQL, units on their
 * way between buckets included) and the units given back during the sale (`givenBack`: cancelled
 * orders; a raise of the stock counts here too, where a scenario makes one).
 *
 * Why they are sound, that is, never fail a correct sale: a "sold out" answer is decided before it
 * arrives, at an instant when no unit was left anywhere (B = 1: the stock read 0; B > 1: every
 * bucket empty with nothing pending, transfers.ts `soldOutBetween`; the sold-out memory holds only
 * such a reading), and the units left can only rise by being given back. So, for a voucher that
 * answered "sold out" at least once (its buyers outnumbered its units):
 * - every unit sold: at the end at most the units given back are left; more means units were
 *   there when a buyer was told there were none, and nobody bought them;
 * - no false sold out: a request sent after a "sold out" answer had arrived is decided after that
 *   instant, so it can be accepted only for a unit given back in between: such acceptances are at
 *   most the units given back.
 * (Also sold out when every unit was accepted: then nothing may be left.) What neither sees: a
 * false "sold out" whose unit went to a request sent before that answer arrived; telling it from
 * a true one would need Redis' own order of the decisions.
 */
export function soldOutChecks(
  ledger: SoldOutLedger,
  vouchers: readonly string[],
  stock: number,
  left: ReadonlyMap<string, number | undefined>,
  givenBack: ReadonlyMap<string, number> = new Map(),
): Check[] {
  const demanded = vouchers.filter((voucher) => {
    const answers = ledger.of(voucher);
    return answers !== undefined && (answers.soldOut > 0 || answers.accepted >= stock);
  });
  const unsold = demanded.filter((voucher) => (left.get(voucher) ?? 0) > (givenBack.get(voucher) ?? 0));
  const early = vouchers.filter((voucher) => (ledger.of(voucher)?.acceptedAfterSoldOut ?? 0) > (givenBack.get(voucher) ?? 0));
  const lateAccepted = vouchers.reduce((sum, voucher) => sum + (ledger.of(voucher)?.acceptedAfterSoldOut ?? 0), 0);
  return [
    {
      name: 'every unit sold',
      pass: unsold.length === 0,
      detail:
        unsold.length === 0
          ? `${demanded.length} vouchers sold out or fully sold, none with a unit left`
          : `${unsold.length} of ${demanded.length} sold-out vouchers have units left, e.g. ${unsold[0]!}: ${left.get(unsold[0]!) ?? '?'} left`,
    },
    {
      name: 'no false sold out',
      pass: early.length === 0,
      detail:
        early.length === 0
          ? `no order accepted after its voucher answered "sold out" beyond the units given back (${lateAccepted} after, all for units given back)`
          : `${early.length} vouchers accepted orders sent after they had answered "sold out", e.g. ${early[0]!}: ${ledger.of(early[0]!)?.acceptedAfterSoldOut ?? 0}`,
    },
  ];
}

/** Planning figure for how many vouchers to create: more answers per second than any scenario reaches here. */
const MAX_EXPECTED_RPS = 25_000;

/**
 * One sale ready to be put under load: its server is started here with the given strategy, or,
 * with `--target`, is the one already running there (which must run that strategy). `finish`
 * waits for the order worker to drain and checks everything the sale promised.
 */
/** The async strategy's orders written through RabbitMQ (`SECKILL_QUEUE=rabbitmq`) instead of the stream's worker. */
export interface OverBroker {
  /** RABBITMQ_URL of the server: a vhost of the run's own. */
  url: string;
  /** The broker's process, whose CPU is counted beside the server's. */
  pid: number | undefined;
}

export async function prepareSale(
  strategy: Strategy,
  options: BenchOptions,
  world: World,
  cpuProfDir?: string,
  gated = false,
  broker?: OverBroker,
): Promise<PreparedScenario<SeckillResult>> {
  const name = gated ? 'seckill-gated' : broker ? 'seckill-rabbitmq' : (`seckill-${strategy}` as const);
  const queueEnv: Record<string, string> = broker ? { SECKILL_QUEUE: 'rabbitmq', RABBITMQ_URL: broker.url } : {};
  const server = options.target
    ? undefined
    : await startServer({
        env: { ...world.env, ...queueEnv, SECKILL_STRATEGY: strategy, SECKILL_WORKER: 'true', SECKILL_CONSUMER: `bench-${name}` },
        ...(cpuProfDir ? { cpuProfDir } : {}),
      });
  const stop = async () => {
    await server?.stop();
  };
  try {
    const plannedRequests = (2.5 + 2 * options.durationSeconds) * MAX_EXPECTED_RPS;
    const voucherCount = Math.min(500, Math.ceil(plannedRequests / options.users));
    const vouchers = await world.createVouchers(voucherCount, options.stock);
    if (gated) await world.db.updateTable('tb_seckill_voucher').set({ purchase_gate: 'token' }).where('voucher_id', 'in', vouchers).execute();
    const sale = new Sale(vouchers, world.users, undefined, gated ? purchaseTokens() : undefined);
    sale.versionsBefore = await readVersions(world, vouchers);
    let drained = false;
    let drainMs = 0;
    let writeLag: SeckillResult['writeLag'];
    const waitForWorker = async () => {
      const drainStarted = performance.now();
      drained = await waitForDrain(world, options.drainTimeoutSeconds * 1000);
      drainMs = Math.round(performance.now() - drainStarted);
      if (server) writeLag = await scrapeWriteLag(server.url);
    };
    const url = options.target ?? server!.url;
    const sliceWork = saleSliceWork(world, url, sale, options);
    return {
      targets: [
        {
          name,
          url,
          ...(server ? { serverPid: server.child.pid } : {}),
          ...(broker?.pid === undefined ? {} : { brokerPid: broker.pid }),
          source: sale,
          afterLoad: waitForWorker,
          sliceWork,
        },
      ],
      stop,
      finish: async (measurements) => {
        const { saturation, fixedRate, slices } = measurements.get(name)!;
        await stop();
        const checks = await checkSale(world, strategy, vouchers, options.stock, sale);
        if (!drained) checks.unshift({ name: 'worker drained', pass: false, detail: `still queued or pending after ${options.drainTimeoutSeconds} s` });
        return {
          scenario: name,
          strategy,
          saturation,
          fixedRate,
          slices,
          vouchers: voucherCount,
          stockPerVoucher: options.stock,
          accepted: sale.accepted.size,
          refused: sale.refused,
          drainMs,
          ...(writeLag ? { writeLag } : {}),
          work: workPerOrder(slices),
          checks,
          pass: checks.every((check) => check.pass),
        };
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * p50 and p99 of seckill_order_write_lag_seconds from the server's /metrics: the upper bound of
 * the bucket that holds the quantile (the histogram's resolution), in ms.
 */
async function scrapeWriteLag(url: string): Promise<SeckillResult['writeLag']> {
  const response = await scrapeMetrics(url).catch(() => undefined);
  if (!response?.ok) return undefined;
  const text = await response.text();
  const buckets = [...text.matchAll(/^seckill_order_write_lag_seconds_bucket\{le="([^"]+)"\} (\S+)$/gm)].map((match) => ({
    le: match[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(match[1]),
    count: Number(match[2]),
  }));
  const count = buckets.at(-1)?.count ?? 0;
  if (count === 0) return undefined;
  const quantile = (q: number) => (buckets.find((bucket) => bucket.count >= q * count)?.le ?? Number.POSITIVE_INFINITY) * 1000;
  return { p50: quantile(0.5), p99: quantile(0.99), count };
}

/** Counts a sale's Redis commands per accepted order over each saturation slice (bench/redis-work.ts). */
export function saleSliceWork(
  world: Pick<World, 'redis' | 'stream'>,
  url: string,
  sale: Pick<Sale, 'accepted'>,
  options: Pick<BenchOptions, 'drainTimeoutSeconds'>,
) {
  return () =>
    startSliceWork({
      redis: world.redis,
      url,
      accepted: () => sale.accepted.size,
      drained: () => waitForDrain(world, options.drainTimeoutSeconds * 1000),
    });
}

/**
 * Purchase tokens as the server would issue them (POST .../token), signed here with the bench
 * servers' key, one per request (a token buys one order): the scenario measures the order route's check and spend, not the issuing.
 */
function purchaseTokens(): (user: BenchUser, voucher: string) => string {
  const signing = BENCH_PURCHASE_TOKEN_KEYS.split(',')[0] ?? '';
  const kid = signing.slice(0, signing.indexOf(':'));
  const secret = signing.slice(signing.indexOf(':') + 1);
  const signer = new TokenSigner([{ kid, secret }]);
  return (user, voucher) => signer.sign([user.id, voucher, 'token'], 3_600_000).token;
}

/** Requests of the sale and what their answers said. */
export class Sale implements RequestSource {
  readonly method = 'POST' as const;
  /** Order ids answered with success: true. */
  readonly accepted = new Set<string>();
  readonly refused: Record<string, number> = {};
  /** Answers that were not the API's {success, …} JSON (status and first bytes), counted. */
  readonly unexpected: Record<string, number> = {};
  /** What each voucher's buyers were told, and when (the sold-out checks). */
  readonly ledger = new SoldOutLedger();
  /** Each voucher's `restocks` version before the load (readVersions): how many units came back during it. */
  versionsBefore: ReadonlyMap<string, number> | undefined;
  /** The voucher of each request sent and when it went out, until its answer comes. */
  private readonly sent = new WeakMap<SentRequest, { voucher: string; sentAt: number }>();
  private index = 0;

  constructor(
    readonly vouchers: readonly string[],
    private readonly users: readonly BenchUser[],
    private readonly pathOf: (voucher: string) => string = (voucher) => `/api/voucher-order/seckill/${voucher}`,
    /** A gated sale: the purchase token of each request (the X-Purchase-Token header). */
    private readonly tokenOf?: (user: BenchUser, voucher: string) => string,
  ) {}

  next() {
    const users = this.users;
    const user = users[this.index % users.length]!;
    const voucher = this.vouchers[Math.floor(this.index / users.length) % this.vouchers.length]!;
    this.index += 1;
    const headers: { authorization: string; 'x-purchase-token'?: string } = { authorization: user.token };
    if (this.tokenOf) headers['x-purchase-token'] = this.tokenOf(user, voucher);
    const request = { path: this.pathOf(voucher), headers };
    // The load generators send a request as soon as next() returns it.
    this.sent.set(request, { voucher, sentAt: performance.now() });
    return request;
  }

  onResponse(status: number, body: string, _timing?: RequestTiming, request?: SentRequest): void {
    const sent = request && this.sent.get(request);
    const accepted = /^\{"success":true,"data":"(\d+)"/.exec(body);
    if (status === 200 && accepted) {
      this.accepted.add(accepted[1]!);
      if (sent) this.ledger.answered(sent.voucher, 'accepted', sent.sentAt);
      return;
    }
    const refusal = /"errorMsg":"([^"]*)"/.exec(body);
    if (sent) this.ledger.answered(sent.voucher, status === 200 && refusal?.[1] === REFUSALS.soldOut ? 'sold-out' : 'other', sent.sentAt);
    const key = refusal ? `${status} ${refusal[1]!}` : `${status} ${body.slice(0, 60)}`;
    const bucket = status === 200 && refusal ? this.refused : this.unexpected;
    bucket[key] = (bucket[key] ?? 0) + 1;
  }
}

/** Each voucher's `restocks` version: every step that gives units back (release, raise, repair) adds one to it. */
export async function readVersions(world: Pick<World, 'redis' | 'sale'>, vouchers: readonly string[]): Promise<Map<string, number>> {
  const versions = await Promise.all(vouchers.map((voucher) => world.redis.hget(world.sale.keys.voucher(voucher).voucher, 'restocks')));
  return new Map(vouchers.map((voucher, index) => [voucher, Number(versions[index] ?? Number.NaN)]));
}

/** True once every accepted order is in MySQL: nothing queued, nothing pending in any shard. */
export async function waitForDrain(world: Pick<World, 'redis' | 'stream'>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { queued, pending } = await streamBacklog(world);
    if (queued === 0 && pending === 0) return true;
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
}

export async function streamBacklog(world: Pick<World, 'redis' | 'stream'>): Promise<{ queued: number; pending: number; dead: number }> {
  const { redis, stream } = world;
  const stats = await stream.stats();
  const pending = stats.reduce((sum, shard) => sum + shard.pending, 0);
  const dead = stats.reduce((sum, shard) => sum + shard.deadLetters, 0);
  let queued = 0;
  for (const shard of stream.keys.allShards()) queued += await redis.hlen(stream.keys.shard(shard).queued);
  return { queued, pending, dead };
}

export interface SaleInMysql {
  /** Orders and distinct buyers per voucher (vouchers without orders are absent). */
  perVoucher: Array<{ voucher_id: string; orders: string; users: string }>;
  orderIds: Set<string>;
  mysqlStock: Map<string, number>;
}

/** What MySQL holds of a sale's vouchers: the record the checks hold the answers against. */
export async function readSaleFromMysql(db: World['db'], vouchers: readonly string[]): Promise<SaleInMysql> {
  const { rows: perVoucher } = await sql<{ voucher_id: string; orders: string; users: string }>`
    SELECT voucher_id, COUNT(*) AS orders, COUNT(DISTINCT user_id) AS users
    FROM tb_voucher_order WHERE voucher_id IN (${sql.join(vouchers)}) GROUP BY voucher_id`.execute(db);
  const orderIds = new Set((await db.selectFrom('tb_voucher_order').select('id').where('voucher_id', 'in', vouchers).execute()).map((row) => row.id));
  const mysqlStock = new Map(
    (await db.selectFrom('tb_seckill_voucher').select(['voucher_id', 'stock']).where('voucher_id', 'in', vouchers).execute()).map((row) => [
      row.voucher_id,
      row.stock,
    ]),
  );
  return { perVoucher, orderIds, mysqlStock };
}

/**
 * Everything the sale promised, read back from MySQL and Redis after the drain. Exported for the
 * harness's own tests, which show that each check can fail.
 */
export async function checkSale(
  world: Pick<World, 'db' | 'sale' | 'redis' | 'stream'>,
  strategy: Strategy,
  vouchers: readonly string[],
  stock: number,
  sale: Pick<Sale, 'accepted'> & Partial<Pick<Sale, 'ledger' | 'versionsBefore'>>,
): Promise<Check[]> {
  const { perVoucher, orderIds, mysqlStock } = await readSaleFromMysql(world.db, vouchers);
  const redisStock = new Map<string, number | undefined>();
  for (const voucher of vouchers) redisStock.set(voucher, (await world.sale.reads.read(voucher))?.stock);
  const backlog = await streamBacklog(world);

  const orders = perVoucher.reduce((sum, row) => sum + Number(row.orders), 0);
  const sold = vouchers.reduce((sum, voucher) => sum + (stock - (mysqlStock.get(voucher) ?? stock)), 0);
  const lost = [...sale.accepted].filter((id) => !orderIds.has(id));
  const unexpected = [...orderIds].filter((id) => !sale.accepted.has(id));
  const overs = vouchers.filter((voucher) => {
    const row = perVoucher.find((r) => r.voucher_id === voucher);
    return Number(row?.orders ?? 0) > stock || (mysqlStock.get(voucher) ?? 0) < 0 || (redisStock.get(voucher) ?? 0) < 0;
  });
  const twice = perVoucher.filter((row) => row.orders !== row.users);
  const drift = vouchers.filter((voucher) => redisStock.get(voucher) !== mysqlStock.get(voucher));

  const checks: Check[] = [
    {
      name: 'orders in MySQL = successes returned',
      pass: orders === sale.accepted.size && lost.length === 0 && unexpected.length === 0,
      detail: `${orders} orders, ${sale.accepted.size} successes; ${lost.length} answered but missing, ${unexpected.length} never answered`,
    },
    { name: 'stock sold = orders', pass: sold === orders, detail: `${sold} units taken from MySQL stock for ${orders} orders` },
    {
      name: 'no oversell',
      pass: overs.length === 0,
      detail: overs.length === 0 ? `no voucher above its stock of ${stock}` : `vouchers ${overs.slice(0, 5).join(', ')} oversold`,
    },
    {
      name: 'no user twice',
      pass: twice.length === 0,
      detail: twice.length === 0 ? 'one order per user and voucher' : `${twice.length} vouchers with a repeated buyer`,
    },
  ];
  if (sale.ledger && sale.versionsBefore) {
    const after = await readVersions(world, vouchers);
    // A version unread (a voucher Redis did not hold) could hide any give-back: counted as unbounded.
    const givenBack = new Map(
      vouchers.map((voucher) => {
        const units = (after.get(voucher) ?? Number.NaN) - (sale.versionsBefore!.get(voucher) ?? Number.NaN);
        return [voucher, Number.isFinite(units) ? units : Number.POSITIVE_INFINITY];
      }),
    );
    checks.push(...soldOutChecks(sale.ledger, vouchers, stock, mysqlStock, givenBack));
  }
  if (strategy === 'async') {
    checks.push({
      name: 'MySQL stock = Redis stock',
      pass: drift.length === 0,
      detail:
        drift.length === 0
          ? `all ${vouchers.length} vouchers agree`
          : `${drift.length} vouchers differ, e.g. ${drift[0]!}: MySQL ${mysqlStock.get(drift[0]!) ?? 'none'}, Redis ${redisStock.get(drift[0]!) ?? 'none'}`,
    });
  }
  checks.push(
    {
      name: 'nothing pending',
      pass: backlog.pending === 0 && backlog.queued === 0,
      detail: `${backlog.pending} pending entries, ${backlog.queued} queued orders`,
    },
    { name: 'no dead letters', pass: backlog.dead === 0, detail: `${backlog.dead} entries in the dead-letter streams` },
  );
  return checks;
}
