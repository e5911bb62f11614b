/**
 * Fault 4: MySQL unreachable for 10 s in the middle of a sale. The shared MariaDB is never
 * touched: the three app instances reach it through a TCP proxy (faults/proxy/tcp-proxy.ts), and the proxy is
 * cut (every connection reset, every new one reset on arrival) for OUTAGE_MS, then restored.
 *
 * The order path does not touch MySQL (Redis decides, the stream queues), so the API keeps
 * accepting; the workers cannot write, keep the entries pending (never dead letters: an outage is
 * not the entry's fault), open their circuit breaker (one probe at a time, backing off), and
 * catch up once MySQL is back. Worker MySQL attempts are read from each instance's /metrics
 * (seckill_worker_mysql_attempts_total), so the figure is the calls made, not log lines.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  countLogs,
  createFaultWorld,
  driveSale,
  mysqlAddress,
  prepareSale,
  saleChecks,
  saleFigures,
  saleRow,
  startInstances,
  stopInstances,
  throughProxy,
  timeDrain,
  withCleanup,
  type FaultScenario,
  type Instance,
} from '../harness/index.js';
import { scrapeMetrics } from '../../harness/index.js';
import { streamBacklog } from '../../sale/index.js';
import { startTcpProxy } from '../proxy/index.js';

const OUTAGE_MS = 10_000;

/** The worker's MySQL calls (writes and probes) so far, summed over the instances' /metrics. */
async function workerMysqlAttempts(instances: readonly Instance[]): Promise<number> {
  let total = 0;
  for (const instance of instances) {
    const response = await scrapeMetrics(instance.url);
    // A refused scrape must fail the run, not read as zero attempts.
    if (!response.ok) throw new Error(`GET ${instance.url}/metrics answered ${String(response.status)}`);
    const text = await response.text();
    for (const line of text.split('\n')) if (line.startsWith('seckill_worker_mysql_attempts_total{')) total += Number(line.split(' ').pop());
  }
  return total;
}

export const mysqlOutage: FaultScenario = {
  name: 'mysql-outage',
  variants: ['outage 10 s'],
  run: (variant, size) =>
    withCleanup(async (defer) => {
      const world = await createFaultWorld({ users: 150 });
      defer(() => world.destroy());
      const proxy = await startTcpProxy(mysqlAddress(world.env.MYSQL_URL!));
      defer(() => proxy.close());
      const instances = await startInstances(3, { ...world.env, MYSQL_URL: throughProxy(world.env.MYSQL_URL!, proxy.port) });
      defer(() => stopInstances(instances));
      const cutAtSeconds = size === 'test' ? 2 : 4;
      const durationSeconds = cutAtSeconds + OUTAGE_MS / 1000 + (size === 'test' ? 3 : 6);
      const setup = await prepareSale(world, { rate: 300, durationSeconds, stock: 50 });

      let cutAt = 0;
      let restoredAt = 0;
      // Set by the event: a `: number | null = null` declaration would make TypeScript see only null.
      let caughtUpMs = null as number | null;
      let failuresBefore = 0;
      let attemptsBefore = 0;
      let outageAttempts = 0;
      let refusedDuringOutage = 0;
      let backlogAtRestore = 0;
      const failureLines = () => countLogs(instances, /order worker/);
      const load = await driveSale(instances, setup, [
        {
          atSeconds: cutAtSeconds,
          run: async () => {
            failuresBefore = failureLines();
            attemptsBefore = await workerMysqlAttempts(instances);
            proxy.cut();
            cutAt = performance.now();
            await sleep(OUTAGE_MS);
            const backlog = await streamBacklog(world);
            backlogAtRestore = backlog.queued;
            refusedDuringOutage = proxy.connectionsRefused;
            outageAttempts = (await workerMysqlAttempts(instances)) - attemptsBefore;
            proxy.restore();
            restoredAt = performance.now();
            // Caught up: the backlog of the outage is written (new orders keep coming meanwhile, so "nothing queued" is a moment between batches).
            for (;;) {
              const { queued, pending } = await streamBacklog(world);
              if (queued === 0 && pending === 0) break;
              if (performance.now() - restoredAt > 60_000) return;
              await sleep(20);
            }
            caughtUpMs = Math.round(performance.now() - restoredAt);
          },
        },
      ]);
      const drainMs = await timeDrain(world);
      const figures = await saleFigures(world, setup);
      const outageFailures = failureLines() - failuresBefore;
      const outageSeconds = Math.round((restoredAt - cutAt) / 100) / 10;
      const checks = saleChecks(figures, drainMs);
      const acceptedDuringOutage = setup.sale.acceptedBetween(cutAt, restoredAt);
      checks.push(
        { name: 'accepting during the outage', pass: acceptedDuringOutage > 0, detail: `${acceptedDuringOutage} orders accepted while MySQL was cut` },
        {
          name: 'caught up after MySQL returned',
          pass: caughtUpMs !== null,
          detail: caughtUpMs === null ? 'not within 60 s' : `backlog of ${backlogAtRestore} written in ${caughtUpMs} ms`,
        },
      );
      return {
        scenario: 'mysql-outage',
        variant,
        figures: {
          ...saleRow(figures, load, drainMs),
          outageSeconds,
          acceptedDuringOutage,
          non2xx: load.non2xx,
          // Answers outside 2xx that blame MySQL: the order path never needs it, so none. (A
          // request deadline's 503 on a starved machine is load, not MySQL, and is counted above.)
          non2xxNamingMysql: Object.entries(setup.sale.unexpected)
            .filter(([answer]) => /mysql|database/i.test(answer))
            .reduce((sum, [, count]) => sum + count, 0),
          backlogAtRestore,
          caughtUpMs: caughtUpMs ?? 'timeout',
          workerFailures: outageFailures,
          workerFailuresPerSecond: Math.round((outageFailures / outageSeconds / instances.length) * 10) / 10,
          workerMysqlAttempts: outageAttempts,
          workerMysqlAttemptsPerSecond: Math.round((outageAttempts / outageSeconds / instances.length) * 10) / 10,
          connectAttempts: refusedDuringOutage,
          connectAttemptsPerSecond: Math.round((refusedDuringOutage / outageSeconds / instances.length) * 10) / 10,
        },
        checks,
      };
    }),
};
