import type { RedisClient } from '../../../infra/redis.js';
import type { SaleKeys } from '../keys.js';
import { AcknowledgedReserve, type ReplicaAckOptions } from './acknowledged-reserve.js';
import { BucketRouter } from './bucket-router.js';
import { IdempotencyKeys } from './idempotency-keys.js';
import { ReserveBatches, type ReserveBatchOptions } from './reserve-batches.js';
import { SaleAdministration } from './sale-administration.js';
import { BucketLayouts, type SaleContext } from './sale-context.js';
import { SaleDecider, type SaleSource } from './sale-decider.js';
import { SalePublisher } from './sale-publisher.js';
import { SaleReads } from './sale-reads.js';
import { defineSaleScripts } from './sale-scripts.js';
import { SaleSettlement } from './sale-settlement.js';
import { SaleSnapshots } from './sale-snapshots.js';
import { BucketTransfers, unwaitedSteps } from './transfers.js';

export interface SaleOptions extends ReserveBatchOptions {
  /** Replica acknowledgement of accepted orders (SECKILL_REPLICA_ACKS); off by default. */
  replicaAcks?: ReplicaAckOptions;
  /** Where `decide` finds a sale Redis does not know; without it such an order is `unknown-voucher`. */
  source?: SaleSource;
  /** Called after a part gave units back or changed a sale (release, control, repair): sale-context.ts. */
  onUnitsBack?: (voucherId: string) => void;
  /** The request deadline (REQUEST_DEADLINE_MS) of the orders decided here: bucket-router.ts. */
  requestDeadlineMs?: number;
}

/**
 * The Redis side of each sale, in parts by job over one shared context (sale-context.ts). Each
 * caller takes the part it uses. Redis decides; MySQL records.
 */
export interface Sale {
  readonly keys: SaleKeys;
  /** An order decided: the order path's one entry (decider → router → batches → reserve.lua). */
  readonly decider: SaleDecider;
  /** reserve.lua alone, in batches, without publish or refill (benches and tests). */
  readonly batches: ReserveBatches;
  readonly idempotencyKeys: IdempotencyKeys;
  /** Settle, hand off and release accepted orders (the writers, the canceller, the sync strategy). */
  readonly settlement: SaleSettlement;
  /** Publish and unpublish a sale and its layout. */
  readonly publisher: SalePublisher;
  /** Controls, freezes and repairs (admin/). */
  readonly administration: SaleAdministration;
  /** Atomic reads for the reconciliation. */
  readonly snapshots: SaleSnapshots;
  /** A sale's state and stock, a user's queued orders. */
  readonly reads: SaleReads;
  readonly layouts: BucketLayouts;
  readonly transfers: BucketTransfers;
  /** Stops the transfer sweep and closes the replica acknowledgement's connections (the shared client is closed by its owner). */
  close(): Promise<void>;
}

/** The sale's parts over one context: one set of scripts, one layouts cache, one set of refills. */
export function buildSale(redis: RedisClient, keys: SaleKeys, options: SaleOptions = {}): Sale {
  const scripts = defineSaleScripts(redis, keys);
  const acks = options.replicaAcks;
  const acknowledged = acks && acks.acks > 0 ? new AcknowledgedReserve(redis, keys, acks) : undefined;
  const context: SaleContext = {
    redis,
    keys,
    scripts,
    layouts: new BucketLayouts(redis, keys),
    // With replica acknowledgement on, each refill step waits for the replicas as a batch does.
    transfers: new BucketTransfers(redis, keys, acknowledged?.transferSteps() ?? unwaitedSteps(scripts)),
    onUnitsBack: options.onUnitsBack ?? (() => undefined),
  };
  const { layouts, transfers } = context;
  const publisher = new SalePublisher(context);
  const batches = new ReserveBatches(context, acknowledged, options);
  const router = new BucketRouter(layouts, transfers, batches, options.requestDeadlineMs);
  return {
    keys,
    decider: new SaleDecider(layouts, router, publisher, options.source),
    batches,
    idempotencyKeys: new IdempotencyKeys(context),
    settlement: new SaleSettlement(context),
    publisher,
    administration: new SaleAdministration(context),
    snapshots: new SaleSnapshots(context),
    reads: new SaleReads(context),
    layouts,
    transfers,
    async close() {
      transfers.stopSweeping();
      await acknowledged?.close();
    },
  };
}
