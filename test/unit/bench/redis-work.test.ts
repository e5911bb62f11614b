/** The bench's Redis work counters: INFO commandstats and a Prometheus histogram read as the report needs them. */
import { describe, expect, it } from 'vitest';
import { parseCommandstats, parseCounter, parseHistogram, workPerOrder, type SliceWork } from '../../../bench/harness/redis-work.js';

describe('bench Redis work', () => {
  it('counts every command but INFO, and eval, evalsha and fcall (read-only ones too) as script calls', () => {
    const text = [
      '# Commandstats',
      'cmdstat_evalsha:calls=10,usec=50,usec_per_call=5.00,rejected_calls=0,failed_calls=0',
      'cmdstat_eval:calls=1,usec=5,usec_per_call=5.00,rejected_calls=0,failed_calls=0',
      'cmdstat_fcall_ro:calls=2,usec=5,usec_per_call=2.50,rejected_calls=0,failed_calls=0',
      'cmdstat_hset:calls=7,usec=7,usec_per_call=1.00,rejected_calls=0,failed_calls=0',
      'cmdstat_client|setname:calls=3,usec=3,usec_per_call=1.00,rejected_calls=0,failed_calls=0',
      'cmdstat_info:calls=100,usec=900,usec_per_call=9.00,rejected_calls=0,failed_calls=0',
    ].join('\r\n');
    expect(parseCommandstats(text)).toEqual({
      commands: 23,
      scripts: 13,
      byCommand: { evalsha: 10, eval: 1, fcall_ro: 2, hset: 7, 'client|setname': 3 },
    });
  });

  it('sums a histogram over its label sets, and says null when it is absent', () => {
    const text = [
      '# TYPE seckill_reserve_batch_size histogram',
      'seckill_reserve_batch_size_bucket{shard="0",le="1"} 3',
      'seckill_reserve_batch_size_sum{shard="0"} 40',
      'seckill_reserve_batch_size_count{shard="0"} 5',
      'seckill_reserve_batch_size_sum{shard="1"} 2',
      'seckill_reserve_batch_size_count{shard="1"} 2',
      'seckill_reserve_batch_size_other_sum 99',
    ].join('\n');
    expect(parseHistogram(text, 'seckill_reserve_batch_size')).toEqual({ count: 7, sum: 42 });
    expect(parseHistogram('process_cpu_seconds_total 1\n', 'seckill_reserve_batch_size')).toBeNull();
  });

  it('reads one label set of a counter', () => {
    const text = [
      'seckill_worker_mysql_attempts_total{kind="write"} 12',
      'seckill_worker_mysql_attempts_total{kind="probe"} 3',
      'seckill_worker_entries_total{result="created"} 1200',
      'seckill_worker_entries_total{result="duplicate"} 1',
    ].join('\n');
    expect(parseCounter(text, 'seckill_worker_mysql_attempts_total', 'kind="write"')).toBe(12);
    expect(parseCounter(text, 'seckill_worker_entries_total', 'result="created"')).toBe(1200);
    expect(parseCounter(text, 'seckill_worker_entries_total', 'result="dead-letter"')).toBeNull();
  });

  it('divides the slices’ work by their accepted orders, CPU per answer weighted by answers', () => {
    const work = (accepted: number, commands: number, batches: SliceWork['reserveBatches']): SliceWork => ({
      accepted,
      commands,
      scripts: accepted,
      byCommand: { evalsha: accepted, hset: commands - accepted },
      reserveBatches: batches,
      workerWrites: { writes: 4, orders: accepted },
    });
    const cpu = (server: number) => ({ server, redis: 1, mariadb: 1, broker: 0, total: server + 2 });
    const slices = [
      { requests: 200, cpu: cpu(10), work: work(100, 500, { count: 10, sum: 100 }) },
      { requests: 100, cpu: cpu(40), work: work(100, 300, { count: 10, sum: 100 }) },
    ];
    expect(workPerOrder(slices)).toEqual({
      accepted: 200,
      commandsPerOrder: 4,
      scriptsPerOrder: 1,
      byCommand: { hset: 3, evalsha: 1 },
      meanReserveBatch: 10,
      ordersPerWorkerWrite: 25,
      cpuPerOrder: { server: 30, redis: 1.5, mariadb: 1.5, broker: 0, total: 33 },
    });
    expect(workPerOrder([{ ...slices[0]!, work: work(100, 500, null) }])?.meanReserveBatch).toBeNull();
    expect(workPerOrder([{ requests: 1 }])).toBeUndefined();
  });
});
