import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../../support/eventually.js';
import type { Fixture } from '../../../../kit/children.js';
import { savedPosition, shopThroughApp, startCdcWorld, type CdcWorld } from './support.js';

/**
 * The change follower (src/cli/cdc.ts) as a child process on a private binlog MariaDB: rows
 * written with plain SQL, bypassing the app, reach what the app answers.
 */
describe('change follower: writes that bypass the app', () => {
  let world: CdcWorld;
  let follower: Fixture;

  beforeAll(async () => {
    world = await startCdcWorld();
    follower = world.startFollower();
    await follower.waitForLine(/change follower: active/, 30_000);
    await eventually(async () => expect(await savedPosition(world.redis)).toBeDefined());
  });

  afterAll(async () => {
    await world?.close();
  });

  it('a direct UPDATE of a shop is what the app answers soon after', async () => {
    expect((await shopThroughApp(world.app, '1'))?.name).toBeDefined(); // cached now
    await world.sql.query('UPDATE tb_shop SET name = ? WHERE id = 1', ['renamed by SQL']);
    await eventually(async () => expect((await shopThroughApp(world.app, '1'))?.name).toBe('renamed by SQL'), 5_000);
  });
});
