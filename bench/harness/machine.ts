/** The machine a run measured on, and how busy it was: every report states both. */
import { cpus, platform, release, totalmem } from 'node:os';
import { readFile } from 'node:fs/promises';
import { sql } from 'kysely';
import type { World } from './world.js';

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  os: string;
  node: string;
  redis: string;
  mysql: string;
}

/** The 1, 5 and 15 minute load averages: on two cores, above ~2 others compete for the CPU. */
export async function loadAverage(): Promise<string> {
  const text = await readFile('/proc/loadavg', 'utf8').catch(() => '');
  return text.split(' ').slice(0, 3).join(' ') || '?';
}

export async function describeMachine(world: World): Promise<Machine> {
  const info = await world.redis.info('server');
  const { rows } = await sql<{ v: string }>`SELECT VERSION() AS v`.execute(world.db);
  const version = rows[0]?.v ?? '?';
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? '?',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `${platform()} ${release()}`,
    node: process.version,
    redis: /redis_version:(\S+)/.exec(info)?.[1] ?? '?',
    mysql: /mariadb/i.test(version) ? `MariaDB ${version.split('-')[0]!}` : `MySQL ${version}`,
  };
}
