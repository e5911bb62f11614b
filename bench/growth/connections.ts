/** p99 and server memory per connection at 100, 1,000 and 10,000 open connections. */
import { fixedRate, processRssBytes, saturate, startServer, type RequestSource, type World } from '../harness/index.js';
import type { ConnectionsRow } from './report.js';

/** The baseline route (one EVALSHA) at a fixed rate over N open connections; the server's resident memory with them open. */
export async function connectionCost(world: World, counts: number[], rate: number, seconds: number): Promise<ConnectionsRow[]> {
  const server = await startServer({ env: { ...world.env, SECKILL_WORKER: 'false' } });
  const rows: ConnectionsRow[] = [];
  try {
    const pid = server.child.pid!;
    const source: RequestSource = { method: 'POST', next: () => ({ path: '/bench/evalsha' }) };
    await saturate(server.url, source, { connections: 100, durationSeconds: 1, expectedRps: 3_000 }); // warm-up
    for (const connections of counts) {
      // One rate for every count, well under saturation; at least one request per connection.
      if (rate * seconds < connections) throw new Error(`connections: ${rate} req/s over ${seconds} s cannot reach ${connections} connections`);
      const before = processRssBytes(pid);
      let open = Number.NaN;
      const phase = await fixedRate(server.url, source, { rate, connections, durationSeconds: seconds, onStart: () => (open = processRssBytes(pid)) });
      if (phase.errors > 0) throw new Error(`${connections} connections: ${phase.errors} requests failed (is ulimit -n above ${connections + 100}?)`);
      rows.push({
        connections,
        offeredRate: rate,
        p50: phase.latency.p50,
        p99: phase.latency.p99,
        serverBytesPerConnection: Math.round((open - before) / connections),
      });
    }
  } finally {
    await server.stop();
  }
  return rows;
}
