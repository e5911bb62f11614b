import { connect, createServer } from 'node:net';

/**
 * The first of `count` consecutive free loopback ports, each with its companions at `offsets` free
 * too (a Redis node's cluster bus +10000, a RabbitMQ node's Erlang distribution +20000 and CLI
 * +30000), at least 20 ports away from each base in `avoid`.
 */
export async function freeRange(count: number, offsets: number[] = [], avoid: number[] = []): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const base = 20_000 + Math.floor(Math.random() * 9_000);
    if (avoid.some((other) => Math.abs(other - base) < 20)) continue;
    const ports = Array.from({ length: count }, (_, i) => base + i);
    const all = [...ports, ...offsets.flatMap((offset) => ports.map((port) => port + offset))];
    if ((await Promise.all(all.map(isFree))).every(Boolean)) return base;
  }
  throw new Error('no free port range');
}

export function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Whether something accepts a connection on the loopback port (never binds it: a server about to start keeps it). */
export function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
