/**
 * A TCP proxy on a loopback port in front of a shared server (MariaDB), which a fault can cut
 * without touching the server: `cut()` resets every open connection and stops listening, so new
 * connections are refused (ECONNREFUSED), exactly what clients see of a server that went away;
 * `restore()` listens again on the same port.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Connections accepted since the start (a client that reconnects in a loop shows here). */
  readonly connectionsAccepted: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const pipe = (client: Socket) => {
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
  };
  let server: Server = createServer(pipe);
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        const address = server.address();
        resolve(typeof address === 'object' && address ? address.port : port);
      });
    });
  const stopListening = () => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
  const port = await listen(0);
  const cutAll = () => {
    for (const socket of sockets) socket.resetAndDestroy();
    sockets.clear();
  };
  return {
    port,
    get connectionsAccepted() {
      return accepted;
    },
    cut: async () => {
      const closed = stopListening();
      cutAll();
      await closed;
    },
    restore: async () => {
      server = createServer(pipe);
      await listen(port);
    },
    close: async () => {
      const closed = stopListening();
      cutAll();
      await closed;
    },
  };
}
