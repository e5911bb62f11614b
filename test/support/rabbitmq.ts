import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { testRabbitmqUrl } from '../../kit/services.js';

const run = promisify(execFile);

/**
 * A vhost of the test's own on the machine's RabbitMQ, with every permission for the test URL's
 * user, made and deleted with rabbitmqctl (the management plugin is not enabled on a fresh
 * machine; the broker itself is never changed). Deleting the vhost deletes its queues and exchanges.
 */
export interface TestVhost {
  name: string;
  /** The test URL with this vhost: RABBITMQ_URL for the app under test. */
  url: string;
  /** The URL through another port on loopback (a relay the test cuts or stalls), same user and vhost. */
  urlVia(port: number): string;
  delete(): Promise<void>;
}

export async function createTestVhost(): Promise<TestVhost> {
  const name = `hmdp_test_${randomBytes(4).toString('hex')}`;
  const base = new URL(testRabbitmqUrl());
  await rabbitmqctl('add_vhost', name);
  try {
    await rabbitmqctl('set_permissions', '-p', name, decodeURIComponent(base.username || 'guest'), '.*', '.*', '.*');
  } catch (error) {
    await rabbitmqctl('delete_vhost', name);
    throw error;
  }
  const urlVia = (port: number): string => {
    const url = new URL(base);
    url.port = String(port);
    url.pathname = `/${name}`;
    return url.toString();
  };
  return { name, url: urlVia(Number(base.port || 5672)), urlVia, delete: () => rabbitmqctl('delete_vhost', name) };
}

async function rabbitmqctl(...args: string[]): Promise<void> {
  try {
    await run('rabbitmqctl', ['-q', ...args], { timeout: 60_000 });
  } catch (error) {
    throw new Error(
      `rabbitmqctl ${args.join(' ')} failed: tests of SECKILL_QUEUE=rabbitmq need RabbitMQ running on this machine (scripts/services.sh) and rabbitmqctl as root`,
      {
        cause: error,
      },
    );
  }
}
