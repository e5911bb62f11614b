import { describe, expect, it } from 'vitest';
import { promotableReplicas } from '../../../../src/modules/seckill/sale/acknowledged-reserve.js';

/** A CLUSTER NODES reply: id, address, flags, master id, ping, pong, epoch, link state, slots. */
const nodes = (...lines: string[]): string => `${lines.join('\n')}\n`;
const M1 = 'a1'.repeat(20);
const M2 = 'b2'.repeat(20);
const R1 = 'c3'.repeat(20);
const R2 = 'd4'.repeat(20);

describe('promotableReplicas (CLUSTER NODES as the answering master sees it)', () => {
  it('counts the replicas of `myself` that are up, or only suspected by it (a partition)', () => {
    const view = nodes(
      `${M1} 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-8191`,
      `${M2} 127.0.0.1:7001@17001 master - 0 1700000000000 2 connected 8192-16383`,
      `${R1} 127.0.0.1:7002@17002 slave ${M1} 0 1700000000000 1 connected`,
      `${R2} 127.0.0.1:7003@17003 slave,fail? ${M1} 1700000000000 1700000000000 1 disconnected`,
    );
    expect(promotableReplicas(view)).toBe(2);
  });

  it('leaves out a replica the Cluster marked failed, and the replicas of other masters', () => {
    const view = nodes(
      `${M1} 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-8191`,
      `${R1} 127.0.0.1:7002@17002 slave,fail ${M1} 1700000000000 1700000000000 1 disconnected`,
      `${R2} 127.0.0.1:7003@17003 slave ${M2} 0 1700000000000 2 connected`,
    );
    expect(promotableReplicas(view)).toBe(0);
  });

  it('finds none for a promoted replica whose old master is down: no failover can undo its writes', () => {
    const view = nodes(
      `${R1} 127.0.0.1:7002@17002 myself,master - 0 0 3 connected 0-8191`,
      `${M1} 127.0.0.1:7000@17000 master,fail - 1700000000000 1700000000000 1 disconnected`,
    );
    expect(promotableReplicas(view)).toBe(0);
  });

  it('counts on nothing when the reply names no `myself` (the caller then wants every ack)', () => {
    expect(promotableReplicas('')).toBe(Infinity);
  });
});
