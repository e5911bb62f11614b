/**
 * Fault 5: a lock holder paused past its lease. Holder A (a process: fenced-writer.ts)
 * takes the lock `resource` (src/lib/lock, watchdog lease LEASE_MS), decides to write, and is
 * SIGSTOPped before the write. Its lease runs out (its watchdog is stopped with it); holder B, a
 * second process, takes the lock with a greater fencing token and writes the fenced row. A is
 * resumed (SIGCONT) and performs its write with its old token: the resource, a MySQL row updated
 * only `WHERE fence < :token`, rejects it.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { deleteKeysWithPrefix } from '../../../src/infra/redis.js';
import { runFixture } from '../../../kit/children.js';
import { testRedisUrl } from '../../../kit/services.js';
import { mysqlServerUrl, withCleanup, type FaultScenario } from '../harness/index.js';

const LEASE_MS = 1_000;

export const lockPause: FaultScenario = {
  name: 'lock-pause',
  variants: [`lease ${LEASE_MS} ms`],
  run: (variant, size) =>
    withCleanup(async (defer) => {
      const pauseMs = size === 'test' ? 3 * LEASE_MS : 5 * LEASE_MS;
      const name = `hmdp_fault_${randomBytes(4).toString('hex')}`;
      const keyPrefix = `${name}:`;
      const connection = await createConnection(mysqlServerUrl());
      defer(() => connection.end());
      await connection.query(`CREATE DATABASE \`${name}\``);
      defer(() => connection.query(`DROP DATABASE IF EXISTS \`${name}\``));
      defer(async () => {
        const raw = new Redis(testRedisUrl());
        await deleteKeysWithPrefix(raw, keyPrefix).finally(() => raw.disconnect());
      });
      await connection.query(`CREATE TABLE \`${name}\`.fault_fenced (id INT PRIMARY KEY, value VARCHAR(40) NOT NULL, fence BIGINT UNSIGNED NOT NULL)`);
      await connection.query(`INSERT INTO \`${name}\`.fault_fenced VALUES (1, 'initial', 0)`);
      const mysqlUrl = `${mysqlServerUrl()}/${name}`;
      const writer = (label: string) => {
        const fixture = runFixture(new URL('./fenced-writer.ts', import.meta.url), [keyPrefix, 'resource', String(LEASE_MS), mysqlUrl, label], {
          TEST_REDIS_URL: testRedisUrl(),
        });
        defer(async () => {
          fixture.child.kill('SIGCONT');
          fixture.child.kill('SIGKILL');
        });
        return fixture;
      };

      const first = writer('first');
      const staleToken = (await first.waitForLine(/^locked \d+$/)).split(' ')[1]!;
      first.child.kill('SIGSTOP');
      const pausedAt = performance.now();

      const second = writer('second');
      const newToken = (await second.waitForLine(/^locked \d+$/)).split(' ')[1]!;
      const takeoverMs = Math.round(performance.now() - pausedAt);
      second.child.kill('SIGUSR2');
      const secondWrite = await second.waitForLine(/^write /);
      await second.exited;

      await sleep(Math.max(0, pausedAt + pauseMs - performance.now()));
      first.child.kill('SIGUSR2'); // pending while stopped: delivered on SIGCONT
      first.child.kill('SIGCONT');
      const pausedForMs = Math.round(performance.now() - pausedAt);
      const firstWrite = await first.waitForLine(/^write /);
      const firstReleased = await first.waitForLine(/^released /);
      await first.exited;

      const [rows] = await connection.query(`SELECT value, fence FROM \`${name}\`.fault_fenced WHERE id = 1`);
      const row = (rows as Array<{ value: string; fence: string | number }>)[0]!;
      const writes = [secondWrite, firstWrite];
      const figures = {
        leaseMs: LEASE_MS,
        pauseMs: pausedForMs,
        takeoverMs,
        staleToken,
        newToken,
        writesAccepted: writes.filter((line) => line.startsWith('write accepted')).length,
        writesRejected: writes.filter((line) => line.startsWith('write rejected')).length,
        finalValue: row.value,
      };
      return {
        scenario: 'lock-pause',
        variant,
        figures,
        checks: [
          {
            name: 'second holder got the lock during the pause',
            pass: takeoverMs < pausedForMs,
            detail: `after ${takeoverMs} ms of a ${pausedForMs} ms pause`,
          },
          { name: 'tokens increase', pass: BigInt(newToken) > BigInt(staleToken), detail: `${staleToken} → ${newToken}` },
          { name: "second holder's write accepted", pass: secondWrite.startsWith('write accepted'), detail: secondWrite },
          { name: "paused holder's late write rejected", pass: firstWrite.startsWith('write rejected'), detail: firstWrite },
          { name: "paused holder's release finds the lock gone", pass: firstReleased === 'released false', detail: firstReleased },
          {
            name: "row keeps the second holder's value",
            pass: row.value === 'second' && String(row.fence) === newToken,
            detail: `${row.value}, fence ${row.fence}`,
          },
        ],
      };
    }),
};
