// Child process of the lock-pause fault (lock-pause.ts): takes the lock (watchdog
// lease <leaseMs>), checks it still holds it and so decides to write, says `locked <token>`, then
// waits for SIGUSR2 ("write now") and writes the fenced row: UPDATE ... WHERE fence < token. A
// SIGSTOP between the decision and the write is the pause that fencing exists for: the holder
// cannot know it lost the lock meanwhile. Prints `write accepted|rejected <token>` and
// `released true|false`, then exits.
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { createDb } from '../../../src/infra/db.js';
import { LockClient } from '../../../src/lib/lock/index.js';
import { testRedisUrl } from '../../../kit/services.js';

const [keyPrefix = '', name = 'resource', leaseText = '1000', mysqlUrl = '', label = 'writer'] = process.argv.slice(2);
const writeNow = new Promise((resolve) => process.once('SIGUSR2', resolve)); // before anything can be paused
const redis = new Redis(testRedisUrl(), { keyPrefix });
const locks = new LockClient(redis, { defaultLeaseMs: Number(leaseText), pollMs: 100 });
const db = createDb({ mysqlUrl, poolSize: 1 });

const handle = await locks.lock(name).lock({ waitMs: 30_000 });
handle.signal.addEventListener('abort', () => console.log('lost'));
if (handle.signal.aborted) throw new Error('lock lost before the write was decided');
const token = handle.fencingToken;
console.log(`locked ${token}`);
await writeNow;
const result = await sql`UPDATE fault_fenced SET value = ${label}, fence = ${String(token)} WHERE id = 1 AND fence < ${String(token)}`.execute(db);
console.log(`write ${Number(result.numAffectedRows ?? 0n) === 1 ? 'accepted' : 'rejected'} ${token}`);
console.log(`released ${await handle.release()}`);
await locks.close();
await redis.quit();
await db.destroy();
