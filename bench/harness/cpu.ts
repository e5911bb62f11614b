/**
 * CPU time per request of every process a request costs: the app server, Redis, MariaDB, the
 * edge's nginx (master and workers) and the load generator (this process, and wrk where it runs). Rates on a shared two-core machine drift by tens of percent from
 * one minute to the next; CPU time spent per request hardly moves, so the targets are stated as
 * ratios of both.
 *
 * Each process's CPU is `utime + stime` of /proc/<pid>/stat (all its threads, in clock ticks of
 * 10 ms), read before and after a slice of load and divided by the answers of that slice. Redis'
 * pid comes from `INFO server`, MariaDB's from its `@@pid_file` (else the one `mariadbd` or
 * `mysqld` process found in /proc). A shared Redis or MariaDB also works for others meanwhile:
 * their work lands in these figures, which is why the bench starts a Redis of its own.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { sql } from 'kysely';
import type { Db } from '../../src/infra/db.js';
import type { RedisClient } from '../../src/infra/redis.js';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ): 100 on every Linux this runs on. */
const TICKS_PER_SECOND = 100;

export const CPU_PARTS = ['server', 'redis', 'mariadb', 'broker', 'nginx', 'generator'] as const;
export type CpuPart = (typeof CPU_PARTS)[number];

/**
 * µs of CPU per answered request, by process; `total` = server + redis + mariadb + broker + nginx
 * (what serving costs; broker and nginx: 0 where none is counted).
 */
export type CpuPerRequest = Record<CpuPart | 'total', number>;

/** Microseconds of CPU the process has used so far (user + system, all threads); NaN if it is gone. */
export function processCpuMicros(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime: fields 14 and 15 of the line
    return (ticks / TICKS_PER_SECOND) * 1e6;
  } catch {
    return Number.NaN;
  }
}

/** Resident memory of a process in bytes (VmRSS), NaN if it is gone. */
export function processRssBytes(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

export async function redisPid(redis: Pick<RedisClient, 'info'>): Promise<number | undefined> {
  const match = /process_id:(\d+)/.exec(await redis.info('server'));
  return match ? Number(match[1]) : undefined;
}

export async function mariadbPid(db: Db): Promise<number | undefined> {
  try {
    const { rows } = await sql<{ file: string }>`SELECT @@pid_file AS file`.execute(db);
    const pid = Number((await readFile(rows[0]!.file, 'utf8')).trim());
    if (Number.isInteger(pid) && pid > 0) return pid;
  } catch {
    // not readable from here (another host, another user): look in /proc
  }
  const found = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return /^(mariadbd|mysqld)$/.test(readFileSync(`/proc/${pid}/comm`, 'utf8').trim());
      } catch {
        return false;
      }
    });
  return found.length === 1 ? Number(found[0]) : undefined;
}

/** The pids of a process' children (an nginx master's workers), from each process' parent in /proc. */
export function childPids(parent: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Field 4, the parent's pid, is the second after the command name's last ')'.
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

/** The processes whose CPU a measurement counts; `server` is set per target. */
export interface CpuPids {
  redis?: number;
  mariadb?: number;
}

/**
 * Starts counting; the returned function gives µs per request for `requests` answers since the
 * start. `nginx`: a master's pid, counted with its workers (the processes that are its children
 * when counting starts: workers are forked once, at the master's start).
 */
export function startCpuCount(pids: CpuPids & { server?: number; broker?: number; nginx?: number }): (requests: number) => CpuPerRequest {
  const read = (pid: number | undefined) => (pid === undefined ? Number.NaN : processCpuMicros(pid));
  // Only the targets whose orders pass through a broker count one, and only those served by an
  // edge count its nginx: for the others they cost nothing.
  const readBroker = () => (pids.broker === undefined ? 0 : processCpuMicros(pids.broker));
  const nginxPids = pids.nginx === undefined ? [] : [pids.nginx, ...childPids(pids.nginx)];
  const readNginx = () => nginxPids.reduce((sum, pid) => sum + processCpuMicros(pid), 0);
  const before = {
    server: read(pids.server),
    redis: read(pids.redis),
    mariadb: read(pids.mariadb),
    broker: readBroker(),
    nginx: readNginx(),
    generator: generatorMicros(),
  };
  return (requests) => {
    const used = {
      server: read(pids.server) - before.server,
      redis: read(pids.redis) - before.redis,
      mariadb: read(pids.mariadb) - before.mariadb,
      broker: readBroker() - before.broker,
      nginx: readNginx() - before.nginx,
      generator: generatorMicros() - before.generator,
    };
    const per = (micros: number) => (requests > 0 ? micros / requests : Number.NaN);
    return {
      server: per(used.server),
      redis: per(used.redis),
      mariadb: per(used.mariadb),
      broker: per(used.broker),
      nginx: per(used.nginx),
      generator: per(used.generator),
      total: per(used.server + used.redis + used.mariadb + used.broker + used.nginx),
    };
  };
}

/** This process' CPU, and its children's that have ended (wrk, the saturation phase's generator for some sources: harness/wrk.ts). */
function generatorMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system + endedChildrenMicros();
}

/** cutime + cstime of /proc/self/stat: the CPU of this process' children that have ended and been waited for. */
function endedChildrenMicros(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND) * 1e6; // cutime, cstime: fields 16 and 17 of the line
}

/** A figure over slices: the median, and the lowest and highest slice. */
export interface Spread {
  median: number;
  min: number;
  max: number;
}

export function spreadOf(values: number[]): Spread {
  const finite = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (finite.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN };
  const middle = Math.floor(finite.length / 2);
  const median = finite.length % 2 === 1 ? finite[middle]! : (finite[middle - 1]! + finite[middle]!) / 2;
  return { median, min: finite[0]!, max: finite[finite.length - 1]! };
}

export type CpuSpread = Record<CpuPart | 'total', Spread>;

export function cpuSpread(slices: CpuPerRequest[]): CpuSpread {
  const parts = [...CPU_PARTS, 'total'] as const;
  return Object.fromEntries(parts.map((part) => [part, spreadOf(slices.map((slice) => slice[part]))])) as CpuSpread;
}

/** "123 (110–131)": a median with its range, to `digits` significant figures. */
export function formatSpread(spread: Spread, digits = 3, unit = ''): string {
  if (!Number.isFinite(spread.median)) return '–';
  const f = (value: number) => Number(value.toPrecision(digits)).toLocaleString('en-US');
  return `${f(spread.median)}${unit} (${f(spread.min)}–${f(spread.max)})`;
}
