import type { Socket } from 'node:net';
import { createOwnVhost, type OwnVhost } from '../../kit/rabbitmq-vhosts.js';
import { testRabbitmqUrl } from '../../kit/services.js';
import { tcpRelay } from './stall.js';

/** A vhost of the test's own (kit/rabbitmq-vhosts.ts), deleted by the test after. */
export type TestVhost = OwnVhost;

export const createTestVhost = (): Promise<TestVhost> => createOwnVhost('hmdp_test_');

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
