/**
 * `npm run bench [section...]`: the benchmark harness. Sections: seckill, lock (default: all).
 * Prints Markdown tables to paste into docs/BENCHMARKS.md. Talks to the local Redis and MariaDB
 * (scripts/services.sh) in a database and key prefix of its own, removed afterwards.
 */
import { cpus } from 'node:os';
import { runSeckillBench, seckillTable } from './seckill.js';

const sections = process.argv.slice(2);
const wanted = (name: string) => sections.length === 0 || sections.includes(name);
const number = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

console.log(`# hmdp-ts benchmark, ${new Date().toISOString()}, Node ${process.version}, ${cpus().length} CPU(s): ${cpus()[0]?.model ?? '?'}\n`);

if (wanted('seckill')) {
  const requests = number('BENCH_REQUESTS', 20_000);
  const stock = number('BENCH_STOCK', 5_000);
  const connections = number('BENCH_CONNECTIONS', 100);
  console.log(`## Seckill: ${requests} requests from ${requests} distinct users, stock ${stock}, ${connections} connections\n`);
  console.log(seckillTable(await runSeckillBench({ requests, stock, connections })));
  console.log();
}

if (wanted('lock')) {
  const { runLockBench } = await import('./lock.js');
  console.log('## Distributed lock: uncontended lock + unlock pairs\n');
  console.log(await runLockBench());
}
