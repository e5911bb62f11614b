import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fixture } from '../../../kit/children.js';
import { startEdge, type Edge } from '../../../kit/edge.js';
import { msUntil, savedPosition, startCdcWorld, type CdcWorld, visibleFigures } from '../../support/cdc-world.js';
import { eventually } from '../../support/eventually.js';

/**
 * Rows written with plain SQL, bypassing the app, seen through the edge (nginx + Lua, L1 and L2)
 * in front of an app, with the change follower (src/cli/cdc.ts) on a private binlog MariaDB. The
 * edge keeps an L1 entry a minute here, with or without its push: only the follower's
 * announcement, heard by the edge's subscriber, explains a change seen sooner.
 */
// The follower (tsx), the private MariaDB and nginx start in seconds each on a busy machine.
describe('change follower: writes that bypass the app, through the edge', { timeout: 240_000 }, () => {
  let world: CdcWorld;
  let edge: Edge;
  let follower: Fixture;

  beforeAll(async () => {
    world = await startCdcWorld();
    const appUrl = await world.app.listen({ host: '127.0.0.1', port: 0 });
    edge = await startEdge(world.config, {
      salePool: [appUrl.replace('http://', '')],
      reads: { l1TtlMs: 60_000, l1UnpushedTtlMs: 60_000, l1JitterPercent: 0 },
    });
    await eventually(async () => expect(((await (await fetch(`${edge.url}/_edge/status`)).json()) as { push: string }).push).toBe('up'));
    follower = world.startFollower();
    await follower.waitForLine(/change follower: active/, 30_000);
    await eventually(async () => expect(await savedPosition(world.redis)).toBeDefined());
  }, 120_000);

  afterAll(async () => {
    await edge?.stop();
    await world?.close();
  }, 120_000);

  /** GET path at the edge: the body's data, and the instance that answered (none: the edge did, from L1 or L2). */
  async function atEdge(path: string): Promise<{ data: unknown; upstream: string | null }> {
    const response = await fetch(`${edge.url}${path}`);
    expect(response.status).toBe(200);
    return { data: ((await response.json()) as { data: unknown }).data, upstream: response.headers.get('x-upstream') };
  }

  const shopName = async (id: string): Promise<string> => ((await atEdge(`/api/shop/${id}`)).data as { name: string }).name;

  /** Until the edge answers `path` itself (the app has cached it and the edge read it: from then on L1 holds it). */
  async function cachedAtEdge(path: string): Promise<void> {
    await eventually(async () => expect((await atEdge(path)).upstream).toBeNull());
  }

  it('200 direct UPDATEs of shops: each is what the edge answers soon after (commit to visible, measured)', async () => {
    const shopIds = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10'];
    const visibleMs: number[] = [];
    for (let i = 0; i < 200; i += 1) {
      const id = shopIds[i % shopIds.length]!;
      await cachedAtEdge(`/api/shop/${id}`);
      const name = `renamed by SQL ${i}`;
      await world.sql.query('UPDATE tb_shop SET name = ? WHERE id = ?', [name, id]);
      const committed = performance.now();
      visibleMs.push(await msUntil(async () => (await shopName(id)) === name, committed));
    }
    console.log(`cdc: 200 direct UPDATEs, commit to visible through the edge (ms): ${visibleFigures(visibleMs)}`);
    expect(visibleMs).toHaveLength(200);
    // Once the app has cached the new row again, the edge answers it itself.
    await cachedAtEdge('/api/shop/10');
    expect(await shopName('10')).toBe('renamed by SQL 199');
  });

  it('a shop type renamed by SQL reaches the type list the edge answers', async () => {
    const typeName = async (): Promise<string | undefined> =>
      ((await atEdge('/api/shop-type/list')).data as Array<{ id: string; name: string }>).find((type) => type.id === '2')?.name;
    await cachedAtEdge('/api/shop-type/list');
    expect(await typeName()).not.toBe('type renamed by SQL');
    await world.sql.query("UPDATE tb_shop_type SET name = 'type renamed by SQL' WHERE id = 2");
    await eventually(async () => expect(await typeName()).toBe('type renamed by SQL'), 10_000);
  });
});
