/**
 * A fault run's sale under load: its vouchers, the open-loop load on every instance at once, the
 * events (the fault) at their times, then the drain.
 */
import { fixedRate, type PhaseResult, type World } from '../../harness/index.js';
import { waitForDrain } from '../../sale/index.js';
import type { Instance } from './instances.js';
import { TimedSale } from './timed-sale.js';

export interface SaleSetup {
  vouchers: string[];
  stock: number;
  sale: TimedSale;
  rate: number;
  durationSeconds: number;
}

/**
 * Vouchers for a sale of `durationSeconds` at `rate` requests/s: request i is user i mod U buying
 * voucher ⌊i / U⌋ (bench/sale/sale.ts), so each voucher sells out to the first `stock` of its U
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
 * Open-loop load (bench/harness/fixed-rate.ts) on every instance at once, `rate / instances` each,
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
