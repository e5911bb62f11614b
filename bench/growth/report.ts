/** What `npm run bench -- growth` measures, section by section, as one report. */
import type { Spread } from '../harness/index.js';

export const SECTIONS = ['sessions', 'buyers', 'sales', 'connections', 'feed'] as const;
export type Section = (typeof SECTIONS)[number];

export interface MemoryRow {
  count: number;
  bytesPerItem: number;
}

export interface SalesRow {
  sales: number;
  rps: Spread;
  cpu: Record<'server' | 'redis' | 'mariadb' | 'total', Spread>;
}

export interface ConnectionsRow {
  connections: number;
  offeredRate: number;
  p50: number;
  p99: number;
  serverBytesPerConnection: number;
}

export interface FeedRow {
  followers: number;
  ms: Spread;
}

export interface GrowthReport {
  startedAt: string;
  commandLine: string;
  loadAverage: string;
  sessions?: MemoryRow[];
  buyers?: Array<MemoryRow & { bytesPerQueuedOrder: number }>;
  sales?: SalesRow[];
  connections?: ConnectionsRow[];
  feed?: FeedRow[];
}
