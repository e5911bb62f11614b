/**
 * Gray failures: the dependency is not gone but slow, hung, flaky or thin. The three app instances
 * reach Redis and MySQL through a toxic TCP proxy each (faults/proxy/tcp-proxy.ts; the harness's own checking
 * client goes direct), a sale runs, and a toxic is applied for a while in the middle of it. Every
 * gray scenario reports the same figures: the sale's (accepted, in MySQL, lost, duplicated,
 * oversold), the share of requests answered within the request deadline, 5xx other than 503, p99
 * before, during and after the fault, and the time the service took to come back.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { RequestTiming } from '../../harness/index.js';
import type { Check } from '../../sale/index.js';
import {
  createFaultWorld,
  driveSale,
  mysqlAddress,
  prepareSale,
  saleChecks,
  saleFigures,
  saleRow,
  sharedRedisUrl,
  startInstances,
  stopInstances,
  throughProxy,
  timeDrain,
  TimedSale,
  withCleanup,
  type FaultRun,
  type Figures,
  type Size,
} from '../harness/index.js';
import { startProxyProcess, type RemoteProxy } from '../proxy/index.js';

/** The app's per-request deadline (REQUEST_DEADLINE_MS, default 2000 ms): the instances get the same environment. */
export const requestDeadlineMs = (): number => Number(process.env.REQUEST_DEADLINE_MS ?? 2000);
/**
 * Slack on top of the deadline for "answered within the deadline": the server's timer starts when
 * the request is read, the client's clock at its due time, and on two shared cores timers and
 * event loops run late (the load generator's own event-loop lag p99 reaches 100–250 ms there). A
 * hung request waits out the whole fault, seconds beyond this.
 */
export const DEADLINE_SLACK_MS = 500;
/** Recovered: the first one-second window after the fault whose good share is within this of the share before it. */
const RECOVERY_TOLERANCE = 0.05;
/** Connections per instance: enough for the offered rate to keep going while requests wait up to the deadline. */
const CONNECTIONS = 256;
/** Below the 300 /s of the crash scenarios: two shared cores need headroom to work off a backlog once the fault ends. */
const RATE = 200;
/** A request due this long before the fault is still in flight when it begins: counted as "during". */
const CAUGHT_MS = 500;

export interface Proxies {
  redis: RemoteProxy;
  mysql: RemoteProxy;
}

export interface GrayFault {
  /** Applies the fault (e.g. adds a toxic). */
  begin(proxies: Proxies): Promise<void>;
  /** Removes it. */
  end(proxies: Proxies): Promise<void>;
  /** Figures of the fault itself (e.g. connections reset), added to the row. */
  figures?(proxies: Proxies): Promise<Figures>;
  /** Adds the KiB/s from Redis to the app before and during the fault (what a bandwidth limit cuts). */
  reportRedisThroughput?: boolean;
}

interface Answer {
  dueAt: number;
  latencyMs: number;
  /** HTTP status; 0: no answer. */
  status: number;
}

/** The sale's answers with their timing, for the figures by phase. */
class GraySale extends TimedSale {
  readonly answers: Answer[] = [];

  override onResponse(status: number, body: string, timing?: RequestTiming): void {
    super.onResponse(status, body);
    if (timing) this.answers.push({ ...timing, status });
  }

  override onNoAnswer(timing: RequestTiming): void {
    this.answers.push({ ...timing, status: 0 });
  }
}

export interface GrayFigures {
  /** Share of requests answered (any status) within the deadline (+ slack), in %. */
  withinDeadlinePct: number;
  /** Answers 500–599 other than 503 (a stalled dependency must give 503, never a crash). */
  other5xx: number;
  answered503: number;
  unanswered: number;
  p99BeforeMs: number;
  p99DuringMs: number;
  p99AfterMs: number;
  /** ms from the end of the fault to the start of the first second back to normal; null: never within the load. */
  recoverMs: number | null;
}

const p99 = (answers: readonly Answer[]): number => {
  if (answers.length === 0) return 0;
  const sorted = answers.map((answer) => answer.latencyMs).sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)]!);
};

/** Figures of a run's answers, with the fault from `faultStart` to `faultEnd` (performance.now()). */
export function grayFigures(answers: readonly Answer[], loadStart: number, faultStart: number, faultEnd: number, deadlineMs: number): GrayFigures {
  const limit = deadlineMs + DEADLINE_SLACK_MS;
  // Good: a 200 answer (success, or a business refusal such as "sold out") within the deadline.
  const good = (answer: Answer) => answer.status === 200 && answer.latencyMs <= limit;
  const between = (from: number, to: number) => answers.filter((answer) => answer.dueAt >= from && answer.dueAt < to);
  // The first second warms up connections and JIT: the baseline is the rest of the time before the fault.
  const before = between(loadStart + 1000, faultStart - CAUGHT_MS);
  const during = between(faultStart - CAUGHT_MS, faultEnd);
  const after = between(faultEnd, Infinity);
  const baseline = before.length === 0 ? 1 : before.filter(good).length / before.length;
  let recoverMs: number | null = null;
  const lastDue = Math.max(...answers.map((answer) => answer.dueAt));
  for (let offset = 0; faultEnd + offset + 1000 <= lastDue + 1; offset += 100) {
    const window = between(faultEnd + offset, faultEnd + offset + 1000);
    if (window.length > 0 && window.filter(good).length / window.length >= baseline - RECOVERY_TOLERANCE) {
      recoverMs = offset;
      break;
    }
  }
  return {
    withinDeadlinePct: Math.round((answers.filter((answer) => answer.status !== 0 && answer.latencyMs <= limit).length / answers.length) * 1000) / 10,
    other5xx: answers.filter((answer) => answer.status >= 500 && answer.status <= 599 && answer.status !== 503).length,
    answered503: answers.filter((answer) => answer.status === 503).length,
    unanswered: answers.filter((answer) => answer.status === 0).length,
    p99BeforeMs: p99(before),
    p99DuringMs: p99(during),
    p99AfterMs: p99(after),
    recoverMs,
  };
}

export interface GrayScenarioOptions {
  scenario: string;
  variant: string;
  size: Size;
  /** How long the fault lasts at each size. */
  faultMs: Record<Size, number>;
  fault: GrayFault;
}

/** One run of a gray scenario: the sale, the fault in its middle, the drain, the figures and the checks. */
export function runGrayScenario(options: GrayScenarioOptions): Promise<FaultRun> {
  const { size, fault } = options;
  return withCleanup(async (defer) => {
    const world = await createFaultWorld({ users: 150 });
    defer(() => world.destroy());
    const proxyProcess = await startProxyProcess();
    defer(() => proxyProcess.close());
    const redisTarget = new URL(sharedRedisUrl());
    const redis = await proxyProcess.start({ host: redisTarget.hostname, port: Number(redisTarget.port || 6379) });
    const mysql = await proxyProcess.start(mysqlAddress(world.env.MYSQL_URL!));
    const proxies: Proxies = { redis, mysql };
    const instances = await startInstances(3, {
      ...world.env,
      REDIS_URL: throughProxy(world.env.REDIS_URL!, redis.port),
      MYSQL_URL: throughProxy(world.env.MYSQL_URL!, mysql.port),
    });
    defer(() => stopInstances(instances));

    const faultMs = options.faultMs[size];
    const faultAtSeconds = size === 'test' ? 3 : 5;
    const afterSeconds = size === 'test' ? 5 : 8;
    const durationSeconds = faultAtSeconds + faultMs / 1000 + afterSeconds;
    const setup = await prepareSale(world, { rate: RATE, durationSeconds, stock: 50 });
    const sale = new GraySale(setup.vouchers, world.users);
    const saleSetup = { ...setup, sale };
    let faultStart = 0;
    let faultEnd = 0;
    const redisBytes: Array<{ at: number; up: number; down: number }> = [];
    const countRedisBytes = async () => {
      const { upstream, downstream } = (await redis.stats()).bytesForwarded;
      redisBytes.push({ at: performance.now(), up: upstream, down: downstream });
    };
    const load = await driveSale(
      instances,
      saleSetup,
      [
        { atSeconds: 1, run: countRedisBytes },
        {
          atSeconds: faultAtSeconds,
          run: async () => {
            await countRedisBytes();
            await fault.begin(proxies);
            faultStart = performance.now();
            try {
              await sleep(faultMs);
            } finally {
              await fault.end(proxies);
              faultEnd = performance.now();
              await countRedisBytes();
            }
          },
        },
      ],
      CONNECTIONS,
    );
    /** "app → Redis / Redis → app" KiB/s between two counts. */
    const kibPerSecond = (from: number) => {
      const [a, b] = [redisBytes[from]!, redisBytes[from + 1]!];
      const rate = (bytes: number) => Math.round(bytes / 1.024 / (b.at - a.at));
      return `${rate(b.up - a.up)} / ${rate(b.down - a.down)}`;
    };
    const drainMs = await timeDrain(world);
    const figures = await saleFigures(world, saleSetup);
    const deadlineMs = requestDeadlineMs();
    const gray = grayFigures(sale.answers, load.startedAt, faultStart, faultEnd, deadlineMs);
    const checks: Check[] = [
      ...saleChecks(figures, drainMs),
      {
        name: 'MySQL orders = accepted + accepted unanswered',
        pass: figures.inMysql === figures.accepted + figures.acceptedUnanswered,
        detail: `${figures.inMysql} in MySQL, ${figures.accepted} accepted, ${figures.acceptedUnanswered} accepted unanswered`,
      },
      { name: 'no 5xx other than 503', pass: gray.other5xx === 0, detail: `${gray.other5xx} answers 5xx ≠ 503` },
      {
        name: 'answered within the deadline ≥ 99 %',
        pass: gray.withinDeadlinePct >= 99,
        detail: `${gray.withinDeadlinePct} % within ${deadlineMs} ms (+ ${DEADLINE_SLACK_MS} ms slack); ${gray.unanswered} unanswered`,
      },
      {
        name: 'recovered after the fault',
        pass: gray.recoverMs !== null,
        detail: gray.recoverMs === null ? `not within the ${afterSeconds} s after it` : `back to normal ${gray.recoverMs} ms after it ended`,
      },
    ];
    return {
      scenario: options.scenario,
      variant: options.variant,
      figures: {
        ...saleRow(figures, load, drainMs),
        faultSeconds: Math.round((faultEnd - faultStart) / 100) / 10,
        withinDeadlinePct: gray.withinDeadlinePct,
        answered503: gray.answered503,
        other5xx: gray.other5xx,
        unanswered: gray.unanswered,
        p99BeforeMs: gray.p99BeforeMs,
        p99DuringMs: gray.p99DuringMs,
        p99AfterMs: gray.p99AfterMs,
        recoverMs: gray.recoverMs ?? 'never',
        ...(fault.reportRedisThroughput ? { redisKibPerSecondBefore: kibPerSecond(0), redisKibPerSecondDuring: kibPerSecond(1) } : {}),
        ...(await fault.figures?.(proxies)),
      },
      checks,
    };
  });
}
