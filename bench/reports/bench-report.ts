/** The run of `npm run bench` as one object: what run.ts assembles and the reports render. */
import type { BenchOptions, Machine, Spread } from '../harness/index.js';
import type { OpsRow } from '../micro/index.js';
import type { EdgeSaleResult, EdgeShopResult, HttpResult, SeckillResult } from '../scenarios/index.js';
import type { ProfileSummary } from './profile.js';

export interface Target {
  name: string;
  target: string;
  measured: string;
  /** null: shown, not judged (e.g. the p99 at another connection count than the target's). */
  met: boolean | null;
  /** "met", "missed by 43 %" (how far the median is from the aim, relative to the aim) or "not judged". */
  verdict: string;
  /** Ratios: median and range over the rounds of alternating slices. */
  spread?: Spread;
}

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  commandLine: string;
  machine: Machine;
  /** /proc/loadavg (1, 5, 15 min) at the start → at the end: above ~2, others competed for the two cores. */
  loadAverage: string;
  options: Omit<BenchOptions, 'commandLine'>;
  baseline?: HttpResult;
  seckill: SeckillResult[];
  shopHot?: { cached: HttpResult; bare: HttpResult };
  /** The shop read by the app from Redis, its near cache off (`shop-redis`). */
  shopRedis?: HttpResult;
  /** The shop read answered at the edge's nginx from its L1 or L2 (`edge-shop-l1`, `edge-shop-l2`). */
  edgeShop?: { l1?: EdgeShopResult; l2?: EdgeShopResult };
  /** The sale through the edge (`app-sold-out`, `edge-sold-out`, `proxy-order`, `edge-order`), those that ran, in that order. */
  edgeSale?: EdgeSaleResult[];
  ids?: OpsRow[];
  locks?: OpsRow[];
  targets: Target[];
  /** CPU profiles (`--cpu-prof`), by the server they profiled: `baseline`, `seckill-async`, `shop-hot` (its process also serves the bare route). */
  profiles?: Record<string, ProfileSummary>;
  /** Every correctness check passed. */
  pass: boolean;
}
