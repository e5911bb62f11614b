/**
 * Fault 3: restart Redis in the middle of a sale. A redis-server of its own (random port, temp
 * dir, `appendonly yes` with `appendfsync always` or `everysec`) serves the three app
 * instances; it is SIGKILLed, kept down DOWN_MS, and started again on the same port and dir, so it
 * loads the stock, buyers, queued orders, streams and consumer group from the AOF. The instances
 * reconnect by themselves (ioredis); requests meanwhile get 503. After the drain the
 * reconciliation (src/modules/seckill/admin/reconcile.ts) compares Redis with MySQL, then repairs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { reconcileSeckill } from '../../../src/modules/seckill/index.js';
import { startRedisServer, type RedisServer } from '../../../kit/redis-servers.js';
import {
  createFaultWorld,
  driveSale,
  prepareSale,
  saleChecks,
  saleFigures,
  saleRow,
  startInstances,
  stopInstances,
  timeDrain,
  withCleanup,
  type FaultScenario,
} from '../harness/index.js';

const DOWN_MS = 1_000;

export const redisRestart: FaultScenario = {
  name: 'redis-restart',
  variants: ['appendfsync always', 'appendfsync everysec'],
  run: (variant, size) =>
    withCleanup(async (defer) => {
      const appendfsync = variant.endsWith('everysec') ? 'everysec' : 'always';
      const dir = await mkdtemp(join(tmpdir(), 'hmdp-fault-aof-'));
      defer(() => rm(dir, { recursive: true, force: true }));
      let redis: RedisServer = await startRedisServer({ dir, appendfsync });
      defer(() => redis.kill()); // runs last: the world's clean-up still needs this server
      const world = await createFaultWorld({ redisUrl: redis.url, users: 150 });
      defer(() => world.destroy());
      const instances = await startInstances(3, world.env);
      defer(() => stopInstances(instances));
      const durationSeconds = size === 'test' ? 8 : 14;
      const setup = await prepareSale(world, { rate: 300, durationSeconds, stock: 50 });
      let downMs = 0;
      let reloadMs = 0;
      const load = await driveSale(instances, setup, [
        {
          atSeconds: durationSeconds * 0.4,
          run: async () => {
            const killedAt = performance.now();
            await redis.kill();
            await sleep(DOWN_MS);
            const startedAt = performance.now();
            redis = await startRedisServer({ port: redis.port, dir, appendfsync });
            reloadMs = Math.round(performance.now() - startedAt);
            downMs = Math.round(performance.now() - killedAt);
          },
        },
      ]);
      const drainMs = await timeDrain(world);
      const figures = await saleFigures(world, setup);
      const deps = { db: world.db, sale: world.sale };
      const before = await reconcileSeckill(deps, { repair: false, voucherIds: setup.vouchers });
      const repair = await reconcileSeckill(deps, { repair: true, voucherIds: setup.vouchers });
      const after = await reconcileSeckill(deps, { repair: false, voucherIds: setup.vouchers });
      const checks = saleChecks(figures, drainMs);
      checks.push(
        {
          name: 'Redis state recovered: no drift',
          pass: before.drifted.length === 0,
          detail: `${before.drifted.length} of ${before.vouchers} vouchers drifted before any repair`,
        },
        { name: 'zero drift after repair', pass: after.drifted.length === 0, detail: `${repair.repaired} repaired, ${after.drifted.length} drifted after` },
      );
      return {
        scenario: 'redis-restart',
        variant,
        figures: {
          ...saleRow(figures, load, drainMs),
          restartSeconds: Math.round(downMs / 100) / 10,
          reloadMs,
          non2xx: load.non2xx,
          unanswered: load.unanswered,
          p99Ms: Math.max(...load.phases.map((phase) => phase.latency.p99)),
          driftBefore: before.drifted.length,
          driftAfter: after.drifted.length,
        },
        checks,
      };
    }),
};
