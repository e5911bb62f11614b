import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onServer } from '../../../../kit/mariadb-binlog.js';
import { testRedisUrl } from '../../../../kit/services.js';
import type { Fixture } from '../../../../kit/children.js';
import { freePort } from '../../../../kit/redis-servers.js';
import { metricsAuth } from '../../../support/test-env.js';
import { eventually } from '../../../support/eventually.js';
import { comparePositions, msUntil, savedPosition, shopThroughApp, startCdcWorld, type CdcWorld, visibleFigures } from '../../../support/cdc-world.js';

/**
 * The change follower (src/cli/cdc.ts) as a child process on a private binlog MariaDB: rows
 * written with plain SQL, bypassing the app, reach what the app answers.
 */
// Each test starts follower processes (tsx) and waits on a MariaDB of its own: seconds each on a busy machine.
describe('change follower: writes that bypass the app', { timeout: 180_000 }, () => {
  let world: CdcWorld;
  let follower: Fixture;
  let port: number;
  /** Every key announced on the changes channel (the edge's L1 hears the same). */
  const announced: string[] = [];
  let listener: Redis;

  beforeAll(async () => {
    world = await startCdcWorld();
    listener = new Redis(testRedisUrl());
    await listener.subscribe(`${world.keyPrefix}cache:changes`);
    listener.on('message', (_channel: string, key: string) => announced.push(key));
    port = await freePort();
    follower = world.startFollower(['--port', String(port)]);
    await follower.waitForLine(/change follower: active/, 30_000);
    await eventually(async () => expect(await savedPosition(world.redis)).toBeDefined());
  }, 120_000);

  afterAll(async () => {
    listener?.disconnect();
    await world?.close();
  }, 120_000);

  /**
   * Forgets what was announced so far, once the announcements already sent (an app's rebuild
   * announces its store) have arrived: a marker published after them comes after them.
   */
  async function clearAnnounced(): Promise<void> {
    const marker = `~marker:${Math.random()}`;
    await world.redis.publish(`${world.keyPrefix}cache:changes`, marker);
    await eventually(() => expect(announced).toContain(marker));
    announced.length = 0;
  }

  /** Waits until the follower saved a position at or past the server's current one (everything committed so far is applied). */
  async function caughtUp(): Promise<void> {
    const [status] = await onServer<Array<{ File: string; Position: number }>>(world.mariadb.serverUrl, 'SHOW MASTER STATUS');
    const current = { file: status!.File, position: status!.Position };
    await eventually(async () => expect(comparePositions((await savedPosition(world.redis))!, current)).toBeGreaterThanOrEqual(0), 10_000);
  }

  it('200 direct UPDATEs of shops: each is what the app answers soon after (commit to visible, measured)', async () => {
    const shopIds = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10'];
    const visibleMs: number[] = [];
    for (let i = 0; i < 200; i += 1) {
      const id = shopIds[i % shopIds.length]!;
      expect(await shopThroughApp(world.app, id)).not.toBeNull(); // cached (Redis and the near cache) before the write
      const name = `renamed by SQL ${i}`;
      await world.sql.query('UPDATE tb_shop SET name = ? WHERE id = ?', [name, id]);
      const committed = performance.now();
      visibleMs.push(await msUntil(async () => (await shopThroughApp(world.app, id))?.name === name, committed));
    }
    console.log(`cdc: 200 direct UPDATEs, commit to visible through the app (ms): ${visibleFigures(visibleMs)}`);
    expect(visibleMs).toHaveLength(200);
  });

  it('a transaction rolled back and a change to a table not followed announce nothing and leave the cache as it was', async () => {
    expect(await shopThroughApp(world.app, '2')).not.toBeNull();
    const cachedBefore = await world.redis.get('cache:shop:2');
    await caughtUp();
    await clearAnnounced();
    await world.sql.query('BEGIN');
    await world.sql.query("UPDATE tb_shop SET name = 'never committed' WHERE id = 2");
    await world.sql.query('ROLLBACK');
    await world.sql.query("INSERT INTO tb_user (phone, nick_name) VALUES ('13900000001', 'unfollowed')");
    await caughtUp(); // the follower read past both
    expect(announced).toEqual([]);
    expect(await world.redis.get('cache:shop:2')).toBe(cachedBefore);
    expect((await shopThroughApp(world.app, '2'))?.name).not.toBe('never committed');
  });

  it("a shop's new position and type move it in the GEO index (its entry announced); a shop type renamed and a voucher added reach their lists", async () => {
    const before = await shopThroughApp(world.app, '3');
    await clearAnnounced();
    await world.sql.query('UPDATE tb_shop SET x = 120.2, y = 30.3, type_id = 2 WHERE id = 3');
    await eventually(() => expect(announced).toContain('cache:shop:3'), 10_000);
    await eventually(async () => {
      const [position] = (await world.redis.geopos('shop:geo:2', '3')) as Array<[string, string] | null>;
      expect(position).not.toBeNull();
      expect(Number(position![0])).toBeCloseTo(120.2, 4);
      expect(await world.redis.zscore(`shop:geo:${before!.typeId}`, '3')).toBeNull();
    }, 10_000);

    expect((await world.app.inject({ url: '/api/shop-type/list' })).statusCode).toBe(200);
    await world.sql.query("UPDATE tb_shop_type SET name = 'renamed type' WHERE id = 1");
    await eventually(async () => {
      const types = (await world.app.inject({ url: '/api/shop-type/list' })).json().data as Array<{ id: string; name: string }>;
      expect(types.find((type) => type.id === '1')?.name).toBe('renamed type');
    }, 10_000);

    const listed = async (): Promise<string[]> =>
      ((await world.app.inject({ url: '/api/voucher/list/4' })).json().data as Array<{ title: string }>).map((voucher) => voucher.title);
    expect(await listed()).not.toContain('voucher by SQL');
    await world.sql.query("INSERT INTO tb_voucher (shop_id, title, pay_value, actual_value, type, status) VALUES (4, 'voucher by SQL', 100, 200, 0, 1)");
    await eventually(async () => expect(await listed()).toContain('voucher by SQL'), 10_000);
  });

  it("a seckill voucher's window changed by SQL reaches its shop's list; its stock alone (the order writer's) announces nothing", async () => {
    await world.sql.query('BEGIN');
    const [inserted] = (await world.sql.query(
      "INSERT INTO tb_voucher (shop_id, title, pay_value, actual_value, type, status) VALUES (5, 'sale by SQL', 100, 200, 1, 1)",
    )) as unknown as [{ insertId: number }];
    await world.sql.query(
      "INSERT INTO tb_seckill_voucher (voucher_id, stock, begin_time, end_time) VALUES (?, 10, '2030-01-01 10:00:00', '2030-01-02 10:00:00')",
      [inserted.insertId],
    );
    await world.sql.query('COMMIT');
    const window = async (): Promise<string | undefined> =>
      ((await world.app.inject({ url: '/api/voucher/list/5' })).json().data as Array<{ title: string; endTime?: string }>).find(
        (voucher) => voucher.title === 'sale by SQL',
      )?.endTime;
    await eventually(async () => expect(await window()).toBe(new Date('2030-01-02T10:00:00').toISOString()), 10_000);

    await caughtUp();
    await clearAnnounced();
    await world.sql.query('UPDATE tb_seckill_voucher SET stock = stock - 1 WHERE voucher_id = ?', [inserted.insertId]);
    await caughtUp();
    expect(announced).toEqual([]);

    // Alone in its transaction: the shop is looked up in tb_voucher.
    await world.sql.query("UPDATE tb_seckill_voucher SET end_time = '2030-01-03 10:00:00' WHERE voucher_id = ?", [inserted.insertId]);
    await eventually(async () => expect(await window()).toBe(new Date('2030-01-03T10:00:00').toISOString()), 10_000);
    // The announcement follows the tombstone, whose invalidation may reach the app (which then
    // rebuilds the list) before the announcement reaches this listener.
    await eventually(() => expect(announced).toContain('cache:voucher-list:5'));
  });

  it('a shop inserted by SQL is found by the app (added to the Bloom filter and the GEO index)', async () => {
    const [result] = (await world.sql.query(
      "INSERT INTO tb_shop (name, type_id, images, area, address, x, y, avg_price, sold, comments, score, open_hours) VALUES ('new by SQL', 1, '', 'area', 'address', 120.15, 30.25, 80, 0, 0, 40, '10:00-22:00')",
    )) as unknown as [{ insertId: number }];
    const id = String(result.insertId);
    await eventually(async () => expect((await shopThroughApp(world.app, id))?.name).toBe('new by SQL'), 10_000);
    // Visible once in the Bloom filter (its first step); its GEO member follows in the same apply.
    await eventually(async () => expect(await world.redis.zscore('shop:geo:1', id)).not.toBeNull(), 10_000);
  });

  it('health and metrics: the active follower, its position, its lag and events', async () => {
    await caughtUp();
    const health = (await (await fetch(`http://127.0.0.1:${port}/api/health`)).json()) as { role: string; position: { file: string }; gaps: unknown[] };
    expect(health.role).toBe('active');
    expect(health.position.file).toMatch(/^binlog\.\d+$/);
    expect(health.gaps).toEqual([expect.objectContaining({ reason: 'no-position' })]); // its first start
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: metricsAuth })).text();
    expect(text).toMatch(/^cdc_lag_seconds_count [1-9]\d*$/m);
    expect(text).toMatch(/^cdc_row_events_total\{table="tb_shop",kind="update"\} [1-9]\d*$/m);
    expect(text).toMatch(/^cdc_active 1$/m);
    expect(text).not.toMatch(/table="tb_user"/);
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(401);
  });
});
