import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * Test tools for a dependency that stops answering, kept minimal on purpose (the fault suite
 * has its own proxy): a port that accepts connections and never says a word, and a TCP relay
 * in front of a real server that can stop relaying answers.
 */

/** Accepts connections and never answers: a server that hangs before its greeting. */
export interface SilentListener {
  port: number;
  close(): Promise<void>;
}

export async function silentListener(): Promise<SilentListener> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  const port = await listen(server);
  return {
    port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A relay to 127.0.0.1:`targetPort`. `stall()` stops relaying the server's answers (requests still
 * reach the server, as when a reply is lost or late); `stallAfter(text)` does so right after a
 * request containing `text` went through; `resume()` relays what was held back and carries on.
 */
export interface StallingRelay {
  port: number;
  stall(): void;
  stallAfter(text: string): Promise<void>;
  resume(): void;
  close(): Promise<void>;
}

export async function stallingRelay(targetPort: number): Promise<StallingRelay> {
  let stalled = false;
  let trigger: { text: string; fired: () => void } | undefined;
  const held: Array<() => void> = [];
  const relay = await tcpRelay(targetPort, '127.0.0.1', (client, upstream) => {
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      if (trigger && chunk.includes(trigger.text)) {
        stalled = true;
        trigger.fired();
        trigger = undefined;
      }
    });
    upstream.on('data', (chunk: Buffer) => {
      if (stalled) held.push(() => client.write(chunk));
      else client.write(chunk);
    });
  });
  return {
    port: relay.port,
    stall: () => {
      stalled = true;
    },
    stallAfter: (text) =>
      new Promise((resolve) => {
        trigger = { text, fired: resolve };
      }),
    resume: () => {
      stalled = false;
      for (const write of held.splice(0)) write();
    },
    close: () => relay.close(),
  };
}

/** A TCP relay's port, and `close()`, which cuts every connection it holds. */
export interface TcpRelay {
  port: number;
  close(): Promise<void>;
}

/**
 * A TCP relay to `host:targetPort`: each accepted client gets its own upstream connection, and
 * either end closing closes both. `forward` moves the bytes between them as the test wants.
 */
export async function tcpRelay(targetPort: number, host: string, forward: (client: Socket, upstream: Socket) => void): Promise<TcpRelay> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(socket);
      });
    }
    forward(client, upstream);
  });
  const port = await listen(server);
  return {
    port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (typeof address === 'object' && address) resolve(address.port);
      else reject(new Error('no port'));
    });
  });
}
