/** What a fault scenario is and what one run of it gives: figures for its table and checks. */
import type { Check } from '../../sale/index.js';

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
