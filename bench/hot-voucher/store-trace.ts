/** The store's reserve.lua attempts, refills and refill rounds, counted with their times. */
import type { Sale } from '../../src/modules/seckill/index.js';

export interface SaleTrace {
  reserveCalls: number[];
  moves: number[];
  rounds(): number;
  clear(): void;
}

/**
 * Counts, with their times, the store's reserve.lua attempts and the refills that moved units,
 * and its refill rounds, by wrapping the sale's own parts (the router calls `batches.reserve`
 * and `transfers.refill`, which calls `this.move`): the bench counts what the app does
 * without a hook in the app for it.
 */
export function traceStore(store: Sale): SaleTrace {
  const trace = { reserveCalls: [] as number[], moves: [] as number[], rounds: 0 };
  const reserve = store.batches.reserve.bind(store.batches);
  store.batches.reserve = (...args) => {
    trace.reserveCalls.push(performance.now());
    return reserve(...args);
  };
  const refill = store.transfers.refill.bind(store.transfers);
  const seen = new WeakSet<Promise<unknown>>();
  store.transfers.refill = (...args) => {
    // The orders waiting on one bucket share its refill: a round is a promise not seen before.
    const running = refill(...args);
    if (!seen.has(running)) {
      seen.add(running);
      trace.rounds += 1;
    }
    return running;
  };
  const move = store.transfers.move.bind(store.transfers);
  store.transfers.move = async (...args) => {
    const units = await move(...args);
    if (units > 0) trace.moves.push(performance.now());
    return units;
  };
  return {
    reserveCalls: trace.reserveCalls,
    moves: trace.moves,
    rounds: () => trace.rounds,
    clear: () => {
      trace.reserveCalls.length = 0;
      trace.moves.length = 0;
      trace.rounds = 0;
    },
  };
}
