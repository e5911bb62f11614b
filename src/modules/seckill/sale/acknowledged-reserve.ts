import { closeRedis, commandTimeoutOf, duplicateRedis, type RedisClient } from '../../../infra/redis.js';
import type { Operation } from '../../../lib/redis-scripts/index.js';
import type { SaleKeys } from '../keys.js';
import { defineSaleScripts, type ReserveRequest, type SaleScripts } from './sale-scripts.js';
import type { Stepped, TransferSteps } from './transfers.js';
import type { ReserveResult } from '../types.js';

/**
 * Replica acknowledgement of accepted orders (SECKILL_REPLICA_ACKS): before an accepted order is
 * answered, `WAIT acks timeoutMs` must have seen that many replicas of the voucher's master
 * receive it, so a failover to one of them does not lose it.
 */
export interface ReplicaAckOptions {
  /** Replicas that must confirm; 0 = answer without waiting (Redis's asynchronous replication). */
  acks: number;
  timeoutMs: number;
  /**
   * `accepted` orders were answered although only `acknowledged` replicas confirmed them in time
   * (or the wait could not be made, acknowledged = -1). They are in the stream and will be
   * written; they are only less durable. For a metric and a log line.
   */
  onTimeout?: (accepted: number, acknowledged: number) => void;
  /**
   * A refill step of a bucketed sale (take, give or settle; the sweep's refuse and return too) was
   * confirmed by only `acknowledged` replicas in time (-1: the wait could not be made). The step
   * stands, and its refill stops there: the sweep ends the transfer once its own steps are durable.
   */
  onStepTimeout?: (step: TransferStepName, acknowledged: number) => void;
}

/** The refill steps, by the scripts they run (transfers.ts). */
export type TransferStepName = keyof TransferSteps;

/** Redis Cluster redirections and transient hash slot states: the pipeline reached a node that does not (or not yet) serve the hash slot. */
const REDIRECTED = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b/;

/**
 * Group commit of one shard's batch (the store's SmartBatcher forms it): one pipeline
 * `reserve.lua (the batch), WAIT acks timeout`. WAIT covers every earlier write of its
 * connection, so one WAIT confirms the whole batch. It must run on the connection that ran the
 * script: a lone keyless WAIT on an ioredis Cluster goes to a random node, but a pipeline goes
 * whole to the node of its keys' hash slot (all keys here share `{seckill:N}`), WAIT included.
 * The batcher keeps one batch out per shard, so one WAIT per batch instead of one per order. The
 * batches go over a duplicate of the client (its own connections to every node), so a WAIT never
 * holds up the instance's other commands (sessions, ids, ...) on the shared connection. The refill
 * steps of a bucketed sale go the same way, one WAIT each (`transferSteps`).
 */
export class AcknowledgedReserve {
  /** Connections of their own, created on first use. */
  private client: { redis: RedisClient; scripts: SaleScripts } | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: SaleKeys,
    private readonly options: ReplicaAckOptions,
  ) {}

  /** Closes the connections of its own (the shared client is closed by its owner). */
  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) await closeRedis(client.redis);
  }

  private connection(): { redis: RedisClient; scripts: SaleScripts } {
    if (!this.client) {
      // WAIT may take its whole timeout on top of the usual command bound.
      const bound = commandTimeoutOf(this.redis);
      const redis = bound === undefined ? this.redis.duplicate() : duplicateRedis(this.redis, bound + this.options.timeoutMs);
      redis.on('error', () => {}); // reported through the commands that fail
      this.client = { redis, scripts: defineSaleScripts(redis, this.keys) };
    }
    return this.client;
  }

  /**
   * The batch decided and, when any order was accepted for the stream, waited for on `acks`
   * replicas; a reply that never came rejects the whole batch (its outcome is unknown).
   */
  async decide(batch: ReserveRequest[]): Promise<ReserveResult[]> {
    const { acks, onTimeout } = this.options;
    const { results, confirmed } = await this.waited((scripts) => scripts.reserve, batch);
    // Counted before anyone is answered, so a scrape right after an answer includes it.
    const accepted = acceptedForStream(batch, results);
    if (accepted > 0 && confirmed < acks) onTimeout?.(accepted, confirmed);
    return results;
  }

  /**
   * The refill steps, each waited for on `acks` replicas of its bucket's master: durable when they
   * confirmed it. A refill goes on only after a durable step (transfers.ts Stepped), so a give the
   * recipient's replicas confirmed survives a failover of that master and the donor's settle never
   * drops units the recipient lost. A WAIT that falls short is counted (onStepTimeout); the step
   * stands, and the sweep finishes the transfer.
   */
  transferSteps(): TransferSteps {
    return {
      take: (input) => this.step('take', (scripts) => scripts.take, input),
      transferIn: (input) => this.step('transferIn', (scripts) => scripts.transferIn, input),
      transferEnd: (input) => this.step('transferEnd', (scripts) => scripts.transferEnd, input),
    };
  }

  /**
   * Durable when `acks` replicas confirmed the step, or every replica a failover could promote did:
   * on a Cluster, the replicas in the master's own view of the Cluster that the Cluster has not
   * marked failed (CLUSTER NODES, asked in the same pipeline). A master whose replica is gone for
   * good (a failover promoted it, and the old master is down) thus goes on selling; one cut off
   * from its replica by a partition still sees it (at most suspected, `fail?`) and waits.
   */
  private async step<In, Out>(name: TransferStepName, pick: (scripts: SaleScripts) => Operation<In, Out>, input: In): Promise<Stepped<Out>> {
    const { results, confirmed, promotable } = await this.waited(pick, input, true);
    const durable = confirmed >= Math.min(this.options.acks, promotable);
    if (!durable) this.options.onStepTimeout?.(name, confirmed);
    return { value: results, durable };
  }

  /**
   * One script and `WAIT acks timeout` in one pipeline on the connection of its own; the replicas
   * that confirmed it (-1: the WAIT failed, or the script was redirected and ran alone, unwaited).
   * With `replicaView` on a Cluster, the pipeline also asks the master for its view of the Cluster:
   * `promotable` is then the number of its replicas a failover could promote (else `acks`).
   */
  private async waited<In, Out>(
    pick: (scripts: SaleScripts) => Operation<In, Out>,
    input: In,
    replicaView = false,
  ): Promise<{ results: Out; confirmed: number; promotable: number }> {
    const { acks, timeoutMs } = this.options;
    const { redis, scripts } = this.connection();
    const operation = pick(scripts);
    const pipeline = redis.pipeline();
    operation.queue(pipeline, input);
    pipeline.wait(acks, timeoutMs);
    const askView = replicaView && redis.isCluster;
    if (askView) pipeline.cluster('NODES');
    const replies = (await pipeline.exec()) ?? [];
    const [scriptError, raw] = replies[0] ?? [new Error('no reply'), null];
    if (scriptError && REDIRECTED.test(scriptError.message)) {
      // The hash slot moved (failover, resharding): run the script alone, which ioredis redirects;
      // its replication cannot be waited for on that path, so it counts as unconfirmed.
      if ('refreshSlotsCache' in redis) redis.refreshSlotsCache();
      return { results: await operation(input), confirmed: -1, promotable: acks };
    }
    if (scriptError) throw scriptError;
    const [waitError, acknowledged] = replies[1] ?? [new Error('no WAIT reply'), 0];
    const [viewError, view] = askView ? (replies[2] ?? [new Error('no CLUSTER NODES reply'), null]) : [null, null];
    const promotable = askView && !viewError && typeof view === 'string' ? promotableReplicas(view) : acks;
    return { results: operation.reply(raw), confirmed: waitError ? -1 : Number(acknowledged), promotable };
  }
}

/**
 * How many replicas of the answering master (`myself`) its CLUSTER NODES reply lists that the
 * Cluster has not marked failed: those a failover could promote. A replica only suspected by this
 * master (`fail?`, e.g. cut off by a partition) counts.
 */
export function promotableReplicas(clusterNodes: string): number {
  const nodes = clusterNodes
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [id, , flags = '', masterId] = line.split(' ');
      return { id, flags: flags.split(','), masterId };
    });
  const myself = nodes.find(({ flags }) => flags.includes('myself'));
  if (!myself) return Infinity;
  return nodes.filter(({ flags, masterId }) => masterId === myself.id && flags.includes('slave') && !flags.includes('fail')).length;
}

/** Orders of the batch accepted onto the stream (a held order is the sync strategy's, written before its answer). */
function acceptedForStream(batch: ReserveRequest[], results: ReserveResult[]): number {
  return results.filter((result, index) => result.outcome === 'accepted' && batch[index]?.mode === 'stream').length;
}
