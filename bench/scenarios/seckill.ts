/**
 * The seckill scenarios: one strategy (async: Lua + stream + worker; sync: lock + transaction)
 * under load, selling the sale of sale/sale.ts, then the correctness check of everything it sold.
 * `seckill-gated` is the async strategy on vouchers behind purchase tokens; `seckill-rabbitmq`
 * (seckill-rabbitmq.ts) the async strategy with its orders written through RabbitMQ.
 */
import { TokenSigner } from '../../src/lib/signed-token/index.js';
import { BENCH_PURCHASE_TOKEN_KEYS, startServer, workPerOrder, type BenchOptions, type BenchUser, type World } from '../harness/index.js';
import { checkSale, readVersions, Sale, waitForDrain, type Strategy } from '../sale/index.js';
import type { PreparedScenario } from './prepared-scenario.js';
import { saleSliceWork, scrapeWriteLag } from './sale-metrics.js';
import type { SeckillResult } from './seckill-result.js';

/** Planning figure for how many vouchers to create: more answers per second than any scenario reaches here. */
const MAX_EXPECTED_RPS = 25_000;

/** The async strategy's orders written through RabbitMQ (`SECKILL_QUEUE=rabbitmq`) instead of the stream's worker. */
export interface OverBroker {
  /** RABBITMQ_URL of the server: a vhost of the run's own. */
  url: string;
  /** The broker's process, whose CPU is counted beside the server's. */
  pid: number | undefined;
}

/**
 * One sale ready to be put under load: its server is started here with the given strategy, or,
 * with `--target`, is the one already running there (which must run that strategy). `finish`
 * waits for the order worker to drain and checks everything the sale promised.
 */
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
