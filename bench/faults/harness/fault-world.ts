/** Where the fault scenarios' data lives: the shared MariaDB and Redis, each run with a database and key prefix of its own. */
import { randomBytes } from 'node:crypto';
import { createOwnWorld, type World } from '../../harness/index.js';

/** The MariaDB server the scenarios create their databases on (never stopped: faults go through a proxy). */
export const mysqlServerUrl = (): string => (process.env.MYSQL_SERVER_URL ?? process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, '');
/** The shared Redis, for scenarios whose fault is not Redis itself (only a key prefix of their own is used). */
export const sharedRedisUrl = (): string => process.env.REDIS_URL ?? process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';

/** A world (database, key prefix, users, shop) with a name of its own, so scenarios can run side by side. */
export async function createFaultWorld(options: { redisUrl?: string; redisClusterNodes?: string[]; users: number }): Promise<World> {
  const world = await createOwnWorld({
    redisUrl: options.redisUrl ?? sharedRedisUrl(),
    ...(options.redisClusterNodes ? { redisClusterNodes: options.redisClusterNodes } : {}),
    mysqlServerUrl: mysqlServerUrl(),
    users: options.users,
    name: `hmdp_fault_${randomBytes(4).toString('hex')}`,
  });
  // Redis going away is the point of some scenarios: the client reconnects, no need to print each refusal.
  world.redis.on('error', () => undefined);
  return world;
}

/** Host and port of a mysql:// URL. */
export function mysqlAddress(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port || 3306) };
}

/** The same mysql:// URL through a proxy on a loopback port. */
export function throughProxy(url: string, port: number): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(port);
  return parsed.toString();
}
