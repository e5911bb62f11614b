import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fixture } from '../../../../kit/children.js';
import { onServer } from '../../../../kit/mariadb-binlog.js';
import { freePort } from '../../../../kit/redis-servers.js';
import { eventually } from '../../../support/eventually.js';
import { comparePositions, savedPosition, shopThroughApp, startCdcWorld, type CdcWorld } from '../../../support/cdc-world.js';

const GAP_LINE = /dropping every cached entry/;

/**
 * The change follower's failures, with follower processes (src/cli/cdc.ts) on a private binlog
 * MariaDB: killed, paused while a standby takes over, and restarted past a purged binlog.
 */
// Each test starts follower processes (tsx) and waits on a MariaDB of its own: seconds each on a busy machine.
describe('change follower: failures', { timeout: 180_000 }, () => {
  let world: CdcWorld;
  /** 200 shops of this file's own, each cached by the app before a test changes it once. */
  let shopIds: string[];

  beforeAll(async () => {
    world = await startCdcWorld();
    const rows = Array.from({ length: 200 }, (_, i) => `('failover ${i}', 1, '', 'area', 'address', 120.1, 30.2, 50, 0, 0, 40, '10:00-22:00')`);
    const [result] = (await world.sql.query(
      `INSERT INTO tb_shop (name, type_id, images, area, address, x, y, avg_price, sold, comments, score, open_hours) VALUES ${rows.join(',')}`,
    )) as unknown as [{ insertId: number }];
    shopIds = Array.from({ length: 200 }, (_, i) => String(result.insertId + i));
  }, 120_000);

  afterAll(async () => {
    await world?.close();
  }, 120_000);

  async function currentPosition(): Promise<{ file: string; position: number }> {
    const [status] = await onServer<Array<{ File: string; Position: number }>>(world.mariadb.serverUrl, 'SHOW MASTER STATUS');
    return { file: status!.File, position: status!.Position };
  }

  async function caughtUp(): Promise<void> {
    const current = await currentPosition();
    await eventually(async () => expect(comparePositions((await savedPosition(world.redis))!, current)).toBeGreaterThanOrEqual(0), 15_000);
  }

  /**
   * FLUSH then PURGE BINARY LOGS until `file` is gone: the server keeps a file while a dump thread
   * (a killed follower's, not yet noticed) or its crash-recovery checkpoint still needs it. Returns the newest file.
   */
  async function purgeBinlogsUpTo(file: string): Promise<string> {
    const server = world.mariadb.serverUrl;
    return eventually(async () => {
      const dumps = await onServer<Array<{ Id: number; Command: string }>>(server, 'SHOW PROCESSLIST');
      for (const dump of dumps.filter((thread) => thread.Command === 'Binlog Dump')) await onServer(server, `KILL ${dump.Id}`).catch(() => undefined);
      await onServer(server, 'FLUSH BINARY LOGS');
      const newest = (await onServer<Array<{ Log_name: string }>>(server, 'SHOW BINARY LOGS')).at(-1)!.Log_name;
      await onServer(server, `PURGE BINARY LOGS TO '${newest}'`);
      expect((await onServer<Array<{ Log_name: string }>>(server, 'SHOW BINARY LOGS')).map((log) => log.Log_name)).not.toContain(file);
      return newest;
    }, 15_000);
  }

  async function cacheAll(ids: readonly string[]): Promise<void> {
    for (const id of ids) expect(await shopThroughApp(world.app, id)).not.toBeNull();
  }

  async function stopped(follower: Fixture): Promise<void> {
    follower.child.kill('SIGCONT');
    follower.child.kill('SIGKILL');
    await follower.exited.catch(() => undefined);
  }

  it('killed (SIGKILL) while 200 changes are made, then restarted: every change is applied, from the saved position', async () => {
    const first = world.startFollower();
    await first.waitForLine(/change follower: active/, 30_000);
    await caughtUp();
    await cacheAll(shopIds);
    for (let i = 0; i < shopIds.length; i += 1) {
      if (i === 50) first.child.kill('SIGKILL');
      await world.sql.query('UPDATE tb_shop SET name = ? WHERE id = ?', [`after kill ${i}`, shopIds[i]]);
    }
    await first.exited.catch(() => undefined);
    const restarted = world.startFollower();
    await restarted.waitForLine(/change follower: active/, 30_000);
    await eventually(async () => {
      for (let i = 0; i < shopIds.length; i += 1) expect((await shopThroughApp(world.app, shopIds[i]!))?.name).toBe(`after kill ${i}`);
    }, 15_000);
    // Followed from the saved position, not rescued by the fallback that drops everything.
    expect(restarted.output()).not.toMatch(GAP_LINE);
    await stopped(restarted);
  });

  it('the active follower killed (SIGKILL) beside a standby: the standby takes over within seconds and follows from the saved position', async () => {
    const leader = world.startFollower(['--lease-ms', '2000']);
    await leader.waitForLine(/change follower: active/, 30_000);
    const standby = world.startFollower(['--lease-ms', '2000']);
    await standby.waitForLine(/change follower started/, 30_000);
    await caughtUp();
    await cacheAll(shopIds.slice(100, 110));
    leader.child.kill('SIGKILL');
    const killedAt = performance.now();
    for (let i = 100; i < 110; i += 1) await world.sql.query('UPDATE tb_shop SET name = ? WHERE id = ?', [`after leader killed ${i}`, shopIds[i]]);
    await standby.waitForLine(/change follower: active/, 20_000);
    console.log(`cdc: standby active ${Math.round(performance.now() - killedAt)} ms after the leader was killed (lease 2000 ms)`);
    await eventually(async () => {
      for (let i = 100; i < 110; i += 1) expect((await shopThroughApp(world.app, shopIds[i]!))?.name).toBe(`after leader killed ${i}`);
    }, 15_000);
    expect(standby.output()).not.toMatch(GAP_LINE);
    await stopped(standby);
  });

  it('the active follower paused (SIGSTOP): the standby takes over within seconds; the paused one, resumed, cannot move the position back', async () => {
    const leader = world.startFollower(['--lease-ms', '2000']);
    await leader.waitForLine(/change follower: active/, 30_000);
    const standby = world.startFollower(['--lease-ms', '2000', '--port', String(await freePort())]);
    await standby.waitForLine(/change follower started/, 30_000);
    await caughtUp();
    const leaderToken = (await savedPosition(world.redis))!.token;
    await cacheAll(shopIds.slice(0, 20));

    leader.child.kill('SIGSTOP');
    const pausedAt = performance.now();
    // Committed while the leader is paused: its socket holds them when it resumes.
    for (let i = 0; i < 10; i += 1) await world.sql.query('UPDATE tb_shop SET name = ? WHERE id = ?', [`while paused ${i}`, shopIds[i]]);
    await standby.waitForLine(/change follower: active/, 20_000);
    const takeoverMs = performance.now() - pausedAt;
    console.log(`cdc: standby active ${Math.round(takeoverMs)} ms after the leader was paused (lease 2000 ms)`);
    for (let i = 10; i < 20; i += 1) await world.sql.query('UPDATE tb_shop SET name = ? WHERE id = ?', [`after takeover ${i}`, shopIds[i]]);
    await caughtUp();
    const taken = (await savedPosition(world.redis))!;
    expect(taken.token).toBeGreaterThan(leaderToken);

    leader.child.kill('SIGCONT');
    await leader.waitForLine(/change follower: standby/, 20_000);
    // For a while after: the position never went back, and the new leader's token is the one saving.
    for (let sample = 0; sample < 20; sample += 1) {
      const now = (await savedPosition(world.redis))!;
      expect(comparePositions(now, taken)).toBeGreaterThanOrEqual(0);
      expect(now.token).toBe(taken.token);
      await sleep(50);
    }
    for (let i = 0; i < 20; i += 1) {
      const name = i < 10 ? `while paused ${i}` : `after takeover ${i}`;
      expect((await shopThroughApp(world.app, shopIds[i]!))?.name).toBe(name);
    }
    await stopped(leader);
    await stopped(standby);
  });

  it('the saved position purged from the binlog: said loudly, every followed entry dropped once, followed again from the current position', async () => {
    let follower = world.startFollower();
    await follower.waitForLine(/change follower: active/, 30_000);
    await caughtUp();
    const saved = (await savedPosition(world.redis))!;
    await stopped(follower);
    await cacheAll(shopIds.slice(0, 30));
    await world.sql.query("UPDATE tb_shop SET name = 'while nobody followed' WHERE id = ?", [shopIds[0]]);
    const newest = await purgeBinlogsUpTo(saved.file);
    const port = await freePort();
    follower = world.startFollower(['--port', String(port)]);
    await follower.waitForLine(/THE SAVED BINLOG POSITION WAS PURGED/, 30_000);
    await follower.waitForLine(/change follower: active/, 30_000);
    // Once: every followed entry cached before (at least the 30 shops), each invalidated and announced.
    const dropped = JSON.parse(await follower.waitForLine(/dropped the cached entries of the followed tables/, 30_000)) as { dropped: number };
    expect(dropped.dropped).toBeGreaterThanOrEqual(31);
    // The change nobody read is answered now, and so is every other followed entry (reloaded).
    await eventually(async () => expect((await shopThroughApp(world.app, shopIds[0]!))?.name).toBe('while nobody followed'), 15_000);
    const health = (await (await fetch(`http://127.0.0.1:${port}/api/health`)).json()) as { gaps: Array<{ reason: string; saved: { file: string } }> };
    expect(health.gaps).toEqual([expect.objectContaining({ reason: 'purged', saved: { file: saved.file, position: saved.position } })]);
    // Saved once the entries are dropped: at or past where the gap was found, in the newest file.
    await eventually(async () => expect(comparePositions((await savedPosition(world.redis))!, { file: newest, position: 0 })).toBeGreaterThan(0));
    // Followed again afterwards.
    await world.sql.query("UPDATE tb_shop SET name = 'after the gap' WHERE id = ?", [shopIds[1]]);
    await eventually(async () => expect((await shopThroughApp(world.app, shopIds[1]!))?.name).toBe('after the gap'), 15_000);
    expect(follower.output().match(/dropped the cached entries/g)).toHaveLength(1);
    await stopped(follower);
  });
});
