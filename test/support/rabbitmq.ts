import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { promisify } from 'node:util';
import { testRabbitmqUrl } from '../../kit/services.js';
import { tcpRelay } from './stall.js';

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

/**
 * A TCP relay in front of the machine's RabbitMQ that a test can cut (every connection dropped,
 * new ones closed at once: the broker unreachable) or stall (the broker's bytes held back: a
 * broker that stops answering), and restore. The machine's broker itself is never stopped.
 */
export interface BrokerRelay {
  port: number;
  cut(): void;
  stall(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function brokerRelay(): Promise<BrokerRelay> {
  const base = new URL(testRabbitmqUrl());
  let mode: 'pass' | 'cut' | 'stall' = 'pass';
  const clients = new Set<Socket>();
  const held: Array<() => void> = [];
  const relay = await tcpRelay(Number(base.port || 5672), base.hostname, (client, upstream) => {
    if (mode === 'cut') {
      client.destroy();
      return;
    }
    clients.add(client);
    client.on('close', () => clients.delete(client));
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    upstream.on('data', (chunk: Buffer) => {
      if (mode === 'stall') held.push(() => client.write(chunk));
      else client.write(chunk);
    });
  });
  return {
    port: relay.port,
    cut: () => {
      mode = 'cut';
      held.length = 0;
      for (const client of clients) client.destroy();
    },
    stall: () => {
      mode = 'stall';
    },
    restore: () => {
      mode = 'pass';
      for (const write of held.splice(0)) write();
    },
    close: () => relay.close(),
  };
}
