import { afterAll, describe, expect, it } from 'vitest';
import { stopSharedCluster } from '../../../bench/faults/rabbitmq/broker.js';
import { rabbitmqNodeKill } from '../../../bench/faults/rabbitmq/rabbitmq-node-kill.js';
import { rabbitmqOutage } from '../../../bench/faults/rabbitmq/rabbitmq-outage.js';
import { rabbitmqWriterKill } from '../../../bench/faults/rabbitmq/rabbitmq-writer-kill.js';
import type { FaultRun } from '../../../bench/faults/harness/index.js';
import { renderScenarioTable } from '../../../bench/faults/report.js';

/**
 * Faults 6–8 on one 3-node RabbitMQ cluster (scripts/topology.sh's, on free ports; started once for
 * the file), in the order npm run faults runs them: the writer kill leaves the cluster whole, the
 * outage restarts all three nodes, the node kill leaves one down.
 */
afterAll(() => stopSharedCluster(), 120_000);

/** Every sale check, whatever the fault: nothing lost, nothing twice, no oversell, MySQL = accepted, nothing pending. */
function expectEverySaleCheck(run: FaultRun): void {
  const { figures } = run;
  console.log(`${run.scenario}:\n${renderScenarioTable([run])}`);
  expect(figures.accepted).toBeGreaterThan(0);
  expect(figures.lost).toBe(0);
  expect(figures.duplicates).toBe(0);
  expect(figures.oversold).toBe(0);
  expect(figures.inMysql).toBe(Number(figures.accepted) + Number(figures.acceptedUnanswered));
  expect(run.checks.filter((check) => !check.pass)).toEqual([]);
}

describe('fault 6: an order writer SIGKILLed mid-batch (SECKILL_QUEUE=rabbitmq)', () => {
  it('its unacknowledged messages come back to the queue and are written once by the other writers', async () => {
    const run = await rabbitmqWriterKill.run(rabbitmqWriterKill.variants[0]!, 'test');
    expectEverySaleCheck(run);
    expect(run.figures.heldAtKill).toBeGreaterThan(0);
    expect(Number(run.figures.acceptedUnanswered)).toBeLessThanOrEqual(Number(run.figures.unanswered));
  }, 240_000);
});

describe('fault 7: the RabbitMQ cluster stopped for 10 s (all three nodes)', () => {
  it('keeps accepting into the streams, says degraded, and catches up once the nodes are back', async () => {
    const run = await rabbitmqOutage.run(rabbitmqOutage.variants[0]!, 'test');
    expectEverySaleCheck(run);
    expect(run.figures.acceptedDuringOutage).toBeGreaterThan(0);
    expect(run.figures.acceptedUnanswered).toBe(0);
    expect(typeof run.figures.brokerBackToWrittenMs).toBe('number');
  }, 300_000);
});

describe('fault 8: SIGKILL the RabbitMQ node leading the order queue', () => {
  it('the majority elects a new leader; every accepted order is written once', async () => {
    const run = await rabbitmqNodeKill.run(rabbitmqNodeKill.variants[0]!, 'test');
    expectEverySaleCheck(run);
    expect(run.figures.acceptedUnanswered).toBe(0);
    expect(typeof run.figures.writtenAfterFaultMs).toBe('number');
  }, 240_000);
});
