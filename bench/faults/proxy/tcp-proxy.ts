/**
 * A TCP proxy on a loopback port in front of a server (MariaDB, Redis), which a fault can degrade
 * or cut without touching the server, in the manner of Toxiproxy's toxics (Toxiproxy itself is
 * not packaged here). Toxics apply per direction (`upstream`: client → server, `downstream`:
 * server → client) and can be added and removed while connections are open:
 *
 * - `stall`: data is accepted and held, nothing is forwarded, in either open or new connections,
 *   until the toxic is removed; then the held bytes go on, in order (a hung server or a black-holed
 *   network path, the "gray" failure a crash is not).
 * - `latency`: each chunk is held `latencyMs` ± `jitterMs` (uniform) from its arrival; order is
 *   preserved (a chunk never overtakes the one before it).
 * - `bandwidth`: at most `kbPerSecond` KiB/s, sent in slices of a tenth of a second.
 *
 * Toxics of one direction compose: any stall holds, latencies add up, the lowest bandwidth wins.
 * Besides toxics: `reset()` resets every open connection (the client sees ECONNRESET), and with
 * `refuseNew` every new one too, until `restore()`; `cut()` is `reset({ refuseNew: true })`, so a
 * client reconnecting in a tight loop shows in `connectionsRefused`.
 */
import { once } from 'node:events';
import { createConnection, createServer, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export type Direction = 'upstream' | 'downstream';

export type Toxic = { type: 'stall' } | { type: 'latency'; latencyMs: number; jitterMs?: number } | { type: 'bandwidth'; kbPerSecond: number };

export interface TcpProxy {
  readonly port: number;
  /** Connections passed through since the start. */
  readonly connectionsAccepted: number;
  /** Connections reset at arrival while refusing. */
  readonly connectionsRefused: number;
  /** Open connections reset by `reset()` / `cut()`. */
  readonly connectionsReset: number;
  /** Connections open now. */
  readonly openConnections: number;
  /** Bytes forwarded so far in each direction. */
  readonly bytesForwarded: Readonly<Record<Direction, number>>;
  /** Adds (or replaces) the toxic `name` on one direction or both (default both). */
  addToxic(name: string, toxic: Toxic, direction?: Direction | 'both'): void;
  /** Removes the toxic `name` (from both directions); held data moves on. */
  removeToxic(name: string): void;
  /** Resets every open connection; with `refuseNew`, also every new one until `restore()`. */
  reset(options?: { refuseNew?: boolean }): void;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

/** Above this many bytes held in one direction of a connection, its sender is paused (TCP backpressure). */
const HIGH_WATER = 256 * 1024;

interface Chunk {
  data: Buffer | null; // null: the sender ended (half-close), passed on in order
  arrivedAt: number;
  /** This chunk's jitter draw in [-1, 1], kept so a latency changed meanwhile is applied with the same draw. */
  jitter: number;
}

/** A promise and its resolve (Promise.withResolvers is Node 22). */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

class Toxics {
  private readonly byName = new Map<string, { toxic: Toxic; directions: Direction[] }>();
  /** Resolved and replaced at every change, so waiting pipes re-read the toxics. */
  private changed = signal();

  set(name: string, toxic: Toxic, directions: Direction[]): void {
    this.byName.set(name, { toxic, directions });
    this.notify();
  }

  delete(name: string): void {
    this.byName.delete(name);
    this.notify();
  }

  /** Wakes every waiting pipe (a change of toxics, or a close). */
  notify(): void {
    this.changed.resolve();
    this.changed = signal();
  }

  get change(): Promise<void> {
    return this.changed.promise;
  }

  of(direction: Direction): Toxic[] {
    return [...this.byName.values()].filter((entry) => entry.directions.includes(direction)).map((entry) => entry.toxic);
  }

  stalled(direction: Direction): boolean {
    return this.of(direction).some((toxic) => toxic.type === 'stall');
  }

  delayMs(direction: Direction, jitter: number): number {
    let delay = 0;
    for (const toxic of this.of(direction)) if (toxic.type === 'latency') delay += toxic.latencyMs + jitter * (toxic.jitterMs ?? 0);
    return Math.max(0, delay);
  }

  /** Bytes per millisecond, or Infinity. */
  bytesPerMs(direction: Direction): number {
    let rate = Infinity;
    for (const toxic of this.of(direction)) if (toxic.type === 'bandwidth') rate = Math.min(rate, (toxic.kbPerSecond * 1024) / 1000);
    return rate;
  }
}

/**
 * One direction of one connection: chunks from `from`, queued, released to `to` one after the
 * other once no stall holds them, their latency has passed and the bandwidth allows.
 */
class Pipe {
  private readonly queue: Chunk[] = [];
  private held = 0;
  private pumping = false;
  /** With a bandwidth toxic: when the next slice may go (performance.now()). */
  private freeAt = 0;
  closed = false;

  constructor(
    private readonly from: Socket,
    private readonly to: Socket,
    private readonly direction: Direction,
    private readonly toxics: Toxics,
    private readonly onForwarded: (bytes: number) => void,
  ) {
    from.on('data', (data: Buffer) => this.push(data));
    from.on('end', () => this.push(null));
  }

  private push(data: Buffer | null): void {
    this.queue.push({ data, arrivedAt: performance.now(), jitter: Math.random() * 2 - 1 });
    if (data) {
      this.held += data.length;
      if (this.held > HIGH_WATER) this.from.pause();
    }
    // A socket error ends the connection (its close handler drops it); nothing to report here.
    this.pump().catch(() => undefined);
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length > 0 && !this.closed) {
        const chunk = this.queue[0]!;
        if (!(await this.due(chunk))) continue;
        this.queue.shift();
        if (chunk.data === null) {
          this.to.end();
          continue;
        }
        await this.send(chunk.data);
        this.held -= chunk.data.length;
        if (this.held <= HIGH_WATER / 4 && this.from.isPaused()) this.from.resume();
      }
    } finally {
      this.pumping = false;
    }
  }

  /** True when the chunk may go now; otherwise waits for its time or a change of toxics, and returns false (look again). */
  private async due(chunk: Chunk): Promise<boolean> {
    const change = this.toxics.change;
    if (this.toxics.stalled(this.direction)) {
      await change;
      return false;
    }
    const wait = chunk.arrivedAt + this.toxics.delayMs(this.direction, chunk.jitter) - performance.now();
    if (wait <= 0) return true;
    await Promise.race([sleep(wait), change]);
    return false;
  }

  private async send(data: Buffer): Promise<void> {
    let offset = 0;
    while (offset < data.length && !this.closed) {
      const rate = this.toxics.bytesPerMs(this.direction);
      if (rate !== Infinity && this.freeAt > performance.now()) {
        await Promise.race([sleep(this.freeAt - performance.now()), this.toxics.change]);
        continue; // the rate may have changed meanwhile
      }
      const size = rate === Infinity ? data.length - offset : Math.max(1, Math.min(data.length - offset, Math.floor(rate * 100)));
      const slice = data.subarray(offset, offset + size);
      offset += size;
      // Paced by schedule, not by sleeping after each slice: a timer that fires late shortens the
      // next wait, so the rate holds on a busy machine; time idle earns no credit.
      if (rate !== Infinity) this.freeAt = Math.max(this.freeAt, performance.now()) + size / rate;
      if (!this.to.write(slice)) await Promise.race([once(this.to, 'drain'), once(this.to, 'close')]).catch(() => undefined);
      this.onForwarded(size);
      // A stall added while a chunk is being sent holds the rest of it.
      while (this.toxics.stalled(this.direction) && !this.closed) await this.toxics.change;
    }
  }
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const connections = new Set<{ client: Socket; upstream: Socket; pipes: Pipe[] }>();
  const toxics = new Toxics();
  const bytesForwarded: Record<Direction, number> = { upstream: 0, downstream: 0 };
  let accepted = 0;
  let refused = 0;
  let reset = 0;
  let refusing = false;
  // Half-open: a client's FIN is passed on in order (after its held data), not answered at once.
  const server = createServer({ allowHalfOpen: true }, (client) => {
    client.on('error', () => undefined);
    if (refusing) {
      refused += 1;
      client.resetAndDestroy();
      return;
    }
    accepted += 1;
    const upstream = createConnection({ ...target, allowHalfOpen: true });
    upstream.on('error', () => undefined);
    const connection = {
      client,
      upstream,
      pipes: [
        new Pipe(client, upstream, 'upstream', toxics, (bytes) => (bytesForwarded.upstream += bytes)),
        new Pipe(upstream, client, 'downstream', toxics, (bytes) => (bytesForwarded.downstream += bytes)),
      ],
    };
    connections.add(connection);
    const drop = () => {
      if (!connections.delete(connection)) return;
      for (const pipe of connection.pipes) pipe.closed = true;
      client.destroy();
      upstream.destroy();
      toxics.notify();
    };
    client.on('close', drop);
    upstream.on('close', drop);
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
  const resetAll = () => {
    for (const connection of connections) {
      reset += 1;
      for (const pipe of connection.pipes) pipe.closed = true;
      connection.client.resetAndDestroy();
      connection.upstream.resetAndDestroy();
    }
    connections.clear();
    toxics.notify();
  };
  const proxy: TcpProxy = {
    port,
    get connectionsAccepted() {
      return accepted;
    },
    get connectionsRefused() {
      return refused;
    },
    get connectionsReset() {
      return reset;
    },
    get openConnections() {
      return connections.size;
    },
    bytesForwarded,
    addToxic: (name, toxic, direction = 'both') => toxics.set(name, toxic, direction === 'both' ? ['upstream', 'downstream'] : [direction]),
    removeToxic: (name) => toxics.delete(name),
    reset: (options = {}) => {
      if (options.refuseNew) refusing = true;
      resetAll();
    },
    cut: () => proxy.reset({ refuseNew: true }),
    restore: () => {
      refusing = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        refusing = true;
        server.close(() => resolve());
        resetAll();
      }),
  };
  return proxy;
}
