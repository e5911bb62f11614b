/**
 * The app instances of a fault run: bench servers (bench/server/main.ts: src/app.ts with the bench
 * routes) in processes of their own, each with its own port and consumer name and the order
 * worker inside, sharing one Redis and one MySQL database; what they logged and counted.
 */
import { scrapeMetrics, startServer, stopProcess, type ServerProcess } from '../../harness/index.js';

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

/** Instances still running: killed if this process exits first (a failed or timed-out test). */
const runningInstances = new Set<Instance>();
process.on('exit', () => {
  for (const instance of runningInstances) instance.child.kill('SIGKILL');
});

/**
 * `count` app instances with the order worker inside, consumer `fault-<i>`. Pending entries of
 * a dead instance are claimed by the others after `SECKILL_CLAIM_IDLE_MS` (2 s here).
 */
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
