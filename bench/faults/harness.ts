/**
 * The fault harness: several app instances (bench/server.ts: src/app.ts with the bench routes, in
 * processes of their own, each with its own port and consumer name and the order worker inside)
 * sharing one Redis and one MySQL database; a sale driven over HTTP spread over them; events (the
 * fault) at given seconds into the load; then the drain and the figures every scenario reports.
 */
import { randomBytes } from 'node:crypto';
import { fixedRate, type PhaseResult, type RequestTiming } from '../load.js';
import { scrapeMetrics, startServer, stopProcess, type ServerProcess } from '../processes.js';
import { Sale, readSaleFromMysql, streamBacklog, waitForDrain, type Check } from '../seckill.js';
import { createOwnWorld, type World } from '../world.js';

/** The MariaDB server the scenarios create their databases on (never stopped: faults go through a proxy). */
export const mysqlServerUrl = (): string => (process.env.MYSQL_SERVER_URL ?? process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, '');
/** The shared Redis, for scenarios whose fault is not Redis itself (only a key prefix of their own is used). */
export const sharedRedisUrl = (): string => process.env.REDIS_URL ?? process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';

/** `test`: small and quick, for test/system/faults; `report`: the size docs/RELIABILITY.md quotes. */
export type Size = 'test' | 'report';

/** A row of a scenario's figures table; keys are column names (see LABELS in report.ts). */
export type Figures = Record<string, number | string>;

export interface FaultRun {
  scenario: string;
  variant: string;
  figures: Figures;
  checks: Check[];
}

export interface FaultScenario {
  name: string;
  /** Settings a run can take (e.g. SECKILL_REPLICA_ACKS=0 / =1); at least one. */
  variants: string[];
  run(variant: string, size: Size): Promise<FaultRun>;
  /** Stops what runs kept for the next (the RabbitMQ scenarios' shared cluster); called once all runs are done. */
  close?(): Promise<void>;
}

/** A world (database, key prefix, users, shop) with a name of its own, so scenarios can run side by side. */
export async function createFaultWorld(options: { redisUrl?: string; redisClusterNodes?: string[]; users: number }): Promise<World> {
  const world = await createOwnWorld({
    redisUrl: options.redisUrl ?? sharedRedisUrl(),
    ...(options.redisClusterNodes ? { redisClusterNodes: options.redisClusterNodes } : {}),
    mysqlServerUrl: mysqlServerUrl(),
    users: options.users,
    name: `hmdp_fault_${randomBytes(4).toString('hex')}`,
  });
  // Redis going away is the point of some scenarios: the client reconnects, no need to print each refusal.
  world.redis.on('error', () => undefined);
  return world;
}

export interface Instance extends ServerProcess {
  consumer: string;
  /** Log lines (pino `msg`) the instance wrote, counted; LOG_LEVEL is warn, so these are warnings and errors. */
  logCounts: Map<string, number>;
  /** The log lines themselves (JSON). */
  log: string[];
}

/** Sum of a numeric field over the log lines of every instance whose message matches `pattern`. */
export function sumLogField(instances: readonly Instance[], pattern: RegExp, field: string): number {
  let sum = 0;
  for (const instance of instances) {
    for (const line of instance.log) {
      if (!pattern.test(/"msg":"([^"]*)"/.exec(line)?.[1] ?? '')) continue;
      sum += Number(new RegExp(`"${field}":(\\d+)`).exec(line)?.[1] ?? 0);
    }
  }
  return sum;
}

/** A counter summed over the instances' /metrics: every label set, or those whose labels contain `labels` (e.g. `result="duplicate"`). */
export async function sumMetric(instances: readonly Instance[], name: string, labels = ''): Promise<number> {
  let sum = 0;
  for (const instance of instances) {
    const response = await scrapeMetrics(instance.url);
    // A refused scrape must fail the run, not read as zero.
    if (!response.ok) throw new Error(`GET ${instance.url}/metrics answered ${String(response.status)}`);
    for (const match of (await response.text()).matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? ([\\d.e+-]+)$`, 'gm'))) {
      if ((match[1] ?? '').includes(labels)) sum += Number(match[2]);
    }
  }
  return sum;
}

/** Log lines of every instance with a message matching `pattern`. */
export function countLogs(instances: readonly Instance[], pattern: RegExp): number {
  let count = 0;
  for (const instance of instances) for (const [msg, n] of instance.logCounts) if (pattern.test(msg)) count += n;
  return count;
}

/**
 * `count` app instances with the order worker inside, consumer `fault-<i>`. Pending entries of
 * a dead instance are claimed by the others after `SECKILL_CLAIM_IDLE_MS` (2 s here).
 */
/** Instances still running: killed if this process exits first (a failed or timed-out test). */
const runningInstances = new Set<Instance>();
process.on('exit', () => {
  for (const instance of runningInstances) instance.child.kill('SIGKILL');
});

export async function startInstances(
  count: number,
  env: Record<string, string>,
  envOf: (index: number) => Record<string, string> = () => ({}),
): Promise<Instance[]> {
  const started = await Promise.allSettled(
    Array.from({ length: count }, async (_, index): Promise<Instance> => {
      const consumer = `fault-${index}`;
      const logCounts = new Map<string, number>();
      const log: string[] = [];
      const server = await startServer({
        env: { LOG_LEVEL: 'warn', SECKILL_WORKER: 'true', SECKILL_CLAIM_IDLE_MS: '2000', SECKILL_CONSUMER: consumer, ...env, ...envOf(index) },
        onLine: (line) => {
          const msg = /"msg":"([^"]*)"/.exec(line)?.[1] ?? line.slice(0, 80);
          logCounts.set(msg, (logCounts.get(msg) ?? 0) + 1);
          log.push(line);
        },
      });
      const instance: Instance = { ...server, consumer, logCounts, log };
      runningInstances.add(instance);
      server.child.once('exit', () => runningInstances.delete(instance));
      return instance;
    }),
  );
  const instances = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failure = started.find((result) => result.status === 'rejected');
  if (failure) {
    await stopInstances(instances);
    throw failure.reason;
  }
  return instances;
}

export async function stopInstances(instances: readonly Instance[]): Promise<void> {
  await Promise.all(
    instances.map((instance) => {
      instance.child.kill('SIGCONT');
      return stopProcess(instance.child);
    }),
  );
}

/** The sale's requests and answers, plus when each success came (ms, performance.now()). */
/** An order request with its Idempotency-Key. */
interface KeyedRequest {
  path: string;
  headers: { authorization: string; 'idempotency-key': string };
}

export class TimedSale extends Sale {
  readonly acceptedAt: number[] = [];
  /** Order ids answered per Idempotency-Key: more than one for a key would be a retry's second order. */
  readonly idsByKey = new Map<string, Set<string>>();
  /** Requests sent again (after a 5xx or no answer), and those that then got an order id. */
  retried = 0;
  recovered = 0;
  private readonly retries: KeyedRequest[] = [];
  private readonly attempts = new Map<string, number>();
  private sequence = 0;
  /** Unique per run, so keys never meet another run's in Redis (24 h). */
  private readonly keyPrefix = `f${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

  /** Each new request carries its own Idempotency-Key; a request to retry goes first, with its key. */
  override next(): KeyedRequest {
    const retry = this.retries.shift();
    if (retry) {
      this.retried += 1;
      return retry;
    }
    const request = super.next();
    return { path: request.path, headers: { ...request.headers, 'idempotency-key': `${this.keyPrefix}-${(this.sequence += 1)}` } };
  }

  override onResponse(status: number, body: string, timing?: RequestTiming): void {
    const before = this.accepted.size;
    super.onResponse(status, body);
    if (this.accepted.size > before) this.acceptedAt.push(performance.now());
    const key = timing?.request?.headers?.['idempotency-key'];
    if (key === undefined) return;
    const accepted = /^\{"success":true,"data":"(\d+)"/.exec(body);
    if (status === 200 && accepted) {
      const ids = this.idsByKey.get(key) ?? new Set<string>();
      ids.add(accepted[1]!);
      this.idsByKey.set(key, ids);
      if ((this.attempts.get(key) ?? 1) > 1) this.recovered += 1;
    } else if (status >= 500) this.retryLater(timing);
  }

  onNoAnswer(timing: RequestTiming): void {
    this.retryLater(timing);
  }

  /** Keys that got more than one order id: 0 when every retry returned its first order. */
  keysWithTwoOrders(): number {
    return [...this.idsByKey.values()].filter((ids) => ids.size > 1).length;
  }

  /** A 5xx or no answer: the outcome may be unknown, so the client retries with the same key (3 attempts in all). */
  private retryLater(timing: RequestTiming | undefined): void {
    const request = timing?.request;
    const authorization = request?.headers?.authorization;
    const key = request?.headers?.['idempotency-key'];
    if (request === undefined || authorization === undefined || key === undefined) return;
    const attempts = (this.attempts.get(key) ?? 1) + 1;
    if (attempts > 3) return;
    this.attempts.set(key, attempts);
    this.retries.push({ path: request.path, headers: { authorization, 'idempotency-key': key } });
  }

  acceptedBetween(from: number, to: number): number {
    return this.acceptedAt.filter((at) => at >= from && at < to).length;
  }
}

export interface SaleSetup {
  vouchers: string[];
  stock: number;
  sale: TimedSale;
  rate: number;
  durationSeconds: number;
}

/**
 * Vouchers for a sale of `durationSeconds` at `rate` requests/s: request i is user i mod U buying
 * voucher ⌊i / U⌋ (bench/seckill.ts), so each voucher sells out to the first `stock` of its U
 * buyers and successes keep coming all through the load, before, during and after a fault.
 */
export async function prepareSale(world: World, options: { rate: number; durationSeconds: number; stock: number }): Promise<SaleSetup> {
  const count = Math.ceil((options.rate * options.durationSeconds) / world.users.length) + 1;
  const vouchers = await world.createVouchers(count, options.stock);
  return { vouchers, stock: options.stock, sale: new TimedSale(vouchers, world.users), rate: options.rate, durationSeconds: options.durationSeconds };
}

export interface FaultEvent {
  atSeconds: number;
  run: () => Promise<void>;
}

export interface LoadResult {
  phases: PhaseResult[];
  /** Requests that got no answer (connection refused or reset, timeout). */
  unanswered: number;
  /** Answers outside 2xx (e.g. 503 while a dependency is away). */
  non2xx: number;
  /** performance.now() at the start and end of the load. */
  startedAt: number;
  endedAt: number;
}

/**
 * Open-loop load (bench/load.ts fixedRate) on every instance at once, `rate / instances` each,
 * with the events run at their times; resolves when the load and every event are done. There is
 * no balancer in front: requests sent to a dead instance fail (a balancer would retry them).
 */
export async function driveSale(instances: readonly Instance[], setup: SaleSetup, events: FaultEvent[] = [], connections = 16): Promise<LoadResult> {
  const timers: NodeJS.Timeout[] = [];
  // Events are timed from the first request, once every instance's connections are open (with
  // many connections on a loaded machine, opening them takes seconds).
  let started = 0;
  let startedAt = 0;
  let allStartedNow: () => void = () => undefined;
  const allStarted = new Promise<void>((resolve) => {
    allStartedNow = resolve;
  });
  const onStart = () => {
    started += 1;
    if (started === instances.length) {
      startedAt = performance.now();
      allStartedNow();
    }
  };
  const eventRuns = events.map((event) =>
    allStarted.then(
      () =>
        new Promise<void>((resolve, reject) => {
          timers.push(
            setTimeout(() => {
              event.run().then(resolve, reject);
            }, event.atSeconds * 1000),
          );
        }),
    ),
  );
  // Observed from the start: an event whose run() rejects during the load is otherwise an
  // unhandled rejection that ends the process before `finally` clears the timers. The await
  // after the load rethrows the first failure, so the scenario fails with the event's error.
  const eventsDone = Promise.all(eventRuns);
  eventsDone.catch(() => {});
  try {
    const phases = await Promise.all(
      instances.map((instance) =>
        fixedRate(instance.url, setup.sale, { rate: setup.rate / instances.length, connections, durationSeconds: setup.durationSeconds, onStart }),
      ),
    );
    const endedAt = performance.now();
    await eventsDone;
    return {
      phases,
      unanswered: phases.reduce((sum, phase) => sum + phase.errors, 0),
      non2xx: phases.reduce((sum, phase) => sum + phase.non2xx, 0),
      startedAt,
      endedAt,
    };
  } finally {
    timers.forEach(clearTimeout);
  }
}

/** Waits until nothing is queued or pending; ms taken (from now), or null after `timeoutMs`. */
export async function timeDrain(world: World, timeoutMs = 60_000): Promise<number | null> {
  const started = performance.now();
  const drained = await waitForDrain(world, timeoutMs);
  return drained ? Math.round(performance.now() - started) : null;
}

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

/** Runs `body`, then `cleanups` in reverse order whatever happened (each one even if another failed). */
export async function withCleanup<T>(body: (defer: (cleanup: () => Promise<unknown>) => void) => Promise<T>): Promise<T> {
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    return await body((cleanup) => cleanups.push(cleanup));
  } finally {
    const errors: unknown[] = [];
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) console.error('fault harness: cleanup failed:', ...errors);
  }
}

/** Host and port of a mysql:// URL. */
export function mysqlAddress(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port || 3306) };
}

/** The same mysql:// URL through a proxy on a loopback port. */
export function throughProxy(url: string, port: number): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(port);
  return parsed.toString();
}
