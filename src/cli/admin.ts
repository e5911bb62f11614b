import type { Db } from '../infra/db.js';
import type { RedisClient } from '../infra/redis.js';
import { RoleService, SessionStore, UserRepository } from '../modules/users/index.js';
import { runAdminCommand } from './admin-command.js';
import { closeAll, openDb, openRedis } from './connections.js';
import { runCli } from './run-cli.js';

/**
 * `npm run admin -- grant <phone> | revoke <phone> | list`: administrator roles (tb_user.role).
 * A change reaches the user's live sessions at once. Exit code 2 on bad input.
 */
await runCli('admin', async (config) => {
  let db: Db | undefined;
  let redis: RedisClient | undefined;
  try {
    db = await openDb(config, 1);
    redis = await openRedis(config);
    const roles = new RoleService({
      users: new UserRepository(db),
      sessions: new SessionStore(redis, config.auth.sessionTtlSeconds, config.auth.sessionMaxAgeSeconds),
    });
    process.exitCode = await runAdminCommand(process.argv.slice(2), roles, console);
  } finally {
    await closeAll(redis, db);
  }
});
