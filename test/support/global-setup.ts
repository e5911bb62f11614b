import { createConnection } from 'mysql2/promise';
import { Redis } from 'ioredis';
import { testMysqlUrl, testRedisUrl } from '../../kit/services.js';

/**
 * Global setup of the integration and system tiers: fail fast, with a useful message, when the
 * real services the tests need are not there (scripts/services.sh starts them).
 */
export default async function checkServices(): Promise<void> {
  const redis = new Redis(testRedisUrl(), { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new Error(`Tests need Redis at ${testRedisUrl()} (run scripts/services.sh): ${String(error)}`, { cause: error });
  } finally {
    redis.disconnect();
  }
  try {
    const connection = await createConnection(testMysqlUrl());
    await connection.query('SELECT 1');
    await connection.end();
  } catch (error) {
    throw new Error(`Tests need MySQL/MariaDB at ${testMysqlUrl()} (run scripts/services.sh): ${String(error)}`, { cause: error });
  }
}
