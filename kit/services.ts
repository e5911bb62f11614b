/**
 * The shared Redis and MariaDB that tests (and the fault scenarios' lock processes) use; override
 * with TEST_REDIS_URL / TEST_MYSQL_URL. Each user works under a key prefix and a database of its own.
 */
export const testRedisUrl = (): string => process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';

/** A server URL without a database: each test file creates and drops its own. */
export const testMysqlUrl = (): string => process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';

/** The shared RabbitMQ's node (no vhost): each test creates a vhost of its own (test/support/rabbitmq.ts) and deletes it after. */
export const testRabbitmqUrl = (): string => process.env.TEST_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
