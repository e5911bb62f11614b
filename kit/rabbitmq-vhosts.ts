import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { testRabbitmqUrl } from './services.js';

const run = promisify(execFile);

/**
 * A vhost of the caller's own on the machine's RabbitMQ, with every permission for the shared
 * URL's user, made and deleted with rabbitmqctl (the management plugin is not enabled on a fresh
 * machine; the broker itself is never changed). Deleting the vhost deletes its queues and exchanges.
 */
export interface OwnVhost {
  name: string;
  /** The shared URL with this vhost: RABBITMQ_URL for an app that uses it. */
  url: string;
  /** The URL through another port on loopback (a relay that cuts or stalls), same user and vhost. */
  urlVia(port: number): string;
  delete(): Promise<void>;
}

/** `prefix`: the vhost's name is the prefix and 8 random hex digits. */
export async function createOwnVhost(prefix: string): Promise<OwnVhost> {
  const name = `${prefix}${randomBytes(4).toString('hex')}`;
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

/** The machine's broker's Erlang VM (for its CPU), from `rabbitmqctl status`; undefined if not found. */
export async function brokerPid(): Promise<number | undefined> {
  try {
    const { stdout } = await run('rabbitmqctl', ['status'], { timeout: 60_000 });
    const match = /OS PID: (\d+)/.exec(stdout);
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

async function rabbitmqctl(...args: string[]): Promise<void> {
  try {
    await run('rabbitmqctl', ['-q', ...args], { timeout: 60_000 });
  } catch (error) {
    throw new Error(
      `rabbitmqctl ${args.join(' ')} failed: SECKILL_QUEUE=rabbitmq on this machine needs RabbitMQ running (scripts/services.sh) and rabbitmqctl as root`,
      { cause: error },
    );
  }
}
