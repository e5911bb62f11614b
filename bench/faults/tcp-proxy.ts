/**
 * A TCP proxy on a loopback port in front of a shared server (MariaDB), which a fault can cut
 * without touching the server: `cut()` resets every open connection, and until `restore()` every
 * new connection is reset as soon as it arrives (the client sees ECONNRESET at connect, as from a
 * host that refuses it) and counted, so a client reconnecting in a tight loop shows in
 * `connectionsRefused`.
 */
import { createConnection, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Connections passed through since the start. */
  readonly connectionsAccepted: number;
  /** Connections reset at arrival while cut. */
  readonly connectionsRefused: number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  let refused = 0;
  let isCut = false;
  const server = createServer((client) => {
    if (isCut) {
      refused += 1;
      client.on('error', () => undefined);
      client.resetAndDestroy();
      return;
    }
    accepted += 1;
    const upstream = createConnection(target);
    sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
  const resetAll = () => {
    for (const socket of sockets) socket.resetAndDestroy();
    sockets.clear();
  };
  return {
    port,
    get connectionsAccepted() {
      return accepted;
    },
    get connectionsRefused() {
      return refused;
    },
    cut: () => {
      isCut = true;
      resetAll();
    },
    restore: () => {
      isCut = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        isCut = true;
        server.close(() => resolve());
        resetAll();
      }),
  };
}
