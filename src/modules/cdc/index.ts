/**
 * The change follower's one door: `buildCdc` makes a follower of the binlog that keeps the app's
 * caches true to the followed tables whoever writes them (docs/flows/cdc.md). The business-agnostic
 * part (reading the binlog, the fenced position, the lease) is src/lib/cdc; this module maps
 * tables to the app's invalidations.
 */
import type { Config } from '../../infra/config.js';
import { cacheChangesChannel } from '../../infra/cache-changes.js';
import type { Db } from '../../infra/db.js';
import type { Log } from '../../infra/logging.js';
import type { Metrics } from '../../infra/metrics.js';
import type { RedisClient } from '../../infra/redis.js';
import { CacheClient } from '../../lib/cache/index.js';
import { ChangeFollower } from '../../lib/cdc/index.js';
import type { LockClient } from '../../lib/lock/index.js';
import { buildShops, ShopGeoIndex, ShopRepository } from '../shops/index.js';
import { CacheInvalidator } from './cache-invalidator.js';
import { createCdcMetrics } from './cdc-metrics.js';
import { FOLLOWED_TABLES } from './followed-tables.js';
import { followerStatus } from './follower-status.js';

export { FOLLOWED_TABLES } from './followed-tables.js';
export type { FollowerHealth } from './follower-status.js';

/** Names the lease (`lock:{cdc:follower}`) and the position (`cdc:follower:position`). */
export const CDC_FOLLOWER_NAME = 'cdc:follower';

export interface CdcDeps {
  config: Pick<Config, 'shop' | 'cache' | 'redisKeyPrefix' | 'mysqlUrl'>;
  redis: RedisClient;
  db: Db;
  log: Log;
  metrics: Metrics;
  /** The lease's lock client: its defaultLeaseMs is the lease (a standby takes over about this long after the leader died). */
  locks: LockClient;
  /** Replica id of the binlog connection, unique among the server's replicas. */
  serverId: number;
}

export type Cdc = ReturnType<typeof buildCdc>;

export function buildCdc(deps: CdcDeps) {
  const { config, redis, db, log, metrics, locks } = deps;
  const shops = buildShops({ config, redis, db, log, metrics, locks });
  const caches = new CacheClient(redis, { locks, changeChannel: cacheChangesChannel(config.redisKeyPrefix) });
  const invalidator = new CacheInvalidator({
    redis,
    db,
    shops,
    geo: new ShopGeoIndex(redis, new ShopRepository(db)),
    caches,
    keyPrefix: config.redisKeyPrefix,
  });
  const status = followerStatus(log, createCdcMetrics(metrics.registry));
  const follower = new ChangeFollower({
    redis,
    locks,
    name: CDC_FOLLOWER_NAME,
    mysqlUrl: config.mysqlUrl,
    tables: FOLLOWED_TABLES,
    serverId: deps.serverId,
    apply: (batch) => invalidator.apply(batch),
    dropAll: async (reason) => {
      const dropped = await invalidator.dropAll();
      log.warn({ reason, dropped }, 'change follower: dropped the cached entries of the followed tables');
    },
    observer: status.observer,
  });
  return {
    follower,
    health: () => status.health(),
    /** Follows until `signal` aborts. */
    run: (signal: AbortSignal) => follower.run(signal),
  };
}
