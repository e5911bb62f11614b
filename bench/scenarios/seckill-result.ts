/** What a sale scenario reports: its phases, its answers, its Redis work and its checks. */
import type { PhaseResult, WorkPerOrder } from '../harness/index.js';
import type { Check, Strategy } from '../sale/index.js';

export interface SeckillResult {
  /** `seckill-gated`: the async strategy on sales gated with a purchase token (src/modules/seckill/gate/purchase-gate.ts), each order carrying one. */
  scenario: `seckill-${Strategy}` | 'seckill-gated' | 'seckill-rabbitmq' | 'seckill-semaphore';
  /** `semaphore`: gulimall's design, a bench route (seckill-semaphore.ts), not a strategy of the app. */
  strategy: Strategy | 'semaphore';
  saturation: PhaseResult;
  fixedRate: PhaseResult;
  /** The saturation phase's slices (harness/measure.ts). */
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
