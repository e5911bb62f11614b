import { LockLostError } from './errors.js';
import { setLongTimeout, type LongTimer } from './timers.js';
import type { LockHandle } from './types.js';

/** What a hold needs from Redis, bound to its lock key and owner. */
export interface HoldBackend {
  /** Resolves true while the owner still holds the lock (and pushes its expiry out by leaseMs). */
  renew(leaseMs: number): Promise<boolean>;
  /** 1 free now, 0 still held by the owner, -1 not held by the owner. */
  release(): Promise<1 | 0 | -1>;
}

/**
 * Allowance for clock drift and for the time Redis took to apply a lease we asked for
 * (the same formula as the Redlock algorithm): the local view of a lease ends this much early.
 */
export const driftMs = (leaseMs: number): number => Math.floor(leaseMs * 0.01) + 2;

const now = (): number => performance.now();

/**
 * One owner's hold on one lock in this process: the handles of its (re-)acquisitions, the
 * watchdog that renews it, and the timer that declares it lost when its lease runs out unrenewed.
 */
export class Hold {
  private readonly controller = new AbortController();
  private readonly handles: HoldHandle[] = [];
  /** performance.now() until which Redis surely still has the lease. */
  private validUntil = 0;
  // Long timers: a lease may exceed Node's 2^31-1 ms timer limit.
  private expiryTimer: LongTimer | undefined;
  private renewTimer: LongTimer | undefined;
  private watchdogLeaseMs: number | undefined;
  private ended = false;
  /** The last handle is being released: a renewal that finds the lock gone is then expected. */
  private releasing = false;

  constructor(
    readonly name: string,
    readonly fencingToken: bigint,
    private readonly backend: HoldBackend,
    private readonly onEnd: (hold: Hold) => void,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  newHandle(): LockHandle {
    const handle = new HoldHandle(this);
    this.handles.push(handle);
    return handle;
  }

  get handleCount(): number {
    return this.handles.length;
  }

  /** The most recent handle not yet released: what `unlock()` releases (nested scopes unwind LIFO). */
  latestHandle(): LockHandle | undefined {
    return this.handles.at(-1);
  }

  /** Redis confirmed a lease of `leaseMs` requested at `sentAt` (performance.now()). */
  confirmLease(sentAt: number, leaseMs: number): void {
    const until = sentAt + leaseMs - driftMs(leaseMs);
    if (this.ended || until <= this.validUntil) return;
    this.validUntil = until;
    this.expiryTimer?.cancel();
    this.expiryTimer = setLongTimeout(() => this.lose('lease expired'), until - now()); // unref'ed: a lock never keeps the process alive
  }

  /** Starts the watchdog: renew every lease/3 while the process lives and the hold lasts. */
  watch(leaseMs: number): void {
    if (this.watchdogLeaseMs !== undefined || this.ended) return;
    this.watchdogLeaseMs = leaseMs;
    this.scheduleRenewal();
  }

  /** The lock is (or must be assumed) gone: tell the holder and stop. */
  lose(why: string): void {
    if (this.ended) return;
    this.controller.abort(new LockLostError(this.name, why));
    this.end();
  }

  /** Stops the timers and forgets the hold, without telling the holder anything. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.expiryTimer?.cancel();
    this.renewTimer?.cancel();
    this.onEnd(this);
  }

  async release(handle: HoldHandle): Promise<boolean> {
    const index = this.handles.indexOf(handle);
    if (index >= 0) this.handles.splice(index, 1);
    const last = this.handles.length === 0;
    if (last) this.releasing = true;
    let status: 1 | 0 | -1;
    try {
      status = await this.backend.release();
    } catch (error) {
      // Redis unreachable: stop renewing the last hold so that its lease runs out.
      if (this.handles.length === 0) this.end();
      this.releasing = false;
      throw error;
    }
    if (status === -1) {
      this.lose('not held any more when released');
      return false;
    }
    // 0 with no local handle left: Redis counts a hold whose reply never reached us; let it expire.
    // (Checked after the await: a re-entry may have added a handle meanwhile.)
    if (status === 1 || this.handles.length === 0) this.end();
    this.releasing = false;
    return true;
  }

  /** An immediate watchdog renewal: true while held (see LockHandle.renew). */
  async renewNow(): Promise<boolean> {
    const leaseMs = this.watchdogLeaseMs;
    if (this.ended || leaseMs === undefined) return !this.ended;
    const sentAt = now();
    let owned: boolean;
    try {
      owned = await this.backend.renew(leaseMs);
    } catch {
      return false; // not confirmed; the expiry timer still decides whether it is lost
    }
    if (this.ended) return false;
    if (owned) this.confirmLease(sentAt, leaseMs);
    else if (!this.releasing) this.lose('taken over or expired (renewal refused)');
    return owned;
  }

  private scheduleRenewal(): void {
    const leaseMs = this.watchdogLeaseMs!;
    this.renewTimer = setLongTimeout(() => void this.renew(leaseMs), Math.max(1, Math.floor(leaseMs / 3)));
  }

  private async renew(leaseMs: number): Promise<void> {
    const sentAt = now();
    try {
      const owned = await this.backend.renew(leaseMs);
      if (this.ended) return;
      if (owned) this.confirmLease(sentAt, leaseMs);
      else if (!this.releasing) return this.lose('taken over or expired (watchdog renewal refused)');
    } catch {
      // Redis unreachable: try again next period; the expiry timer declares the hold lost if
      // no renewal succeeds for a whole lease.
    }
    if (!this.ended) this.scheduleRenewal();
  }
}

class HoldHandle implements LockHandle {
  private released = false;

  constructor(private readonly hold: Hold) {}

  get name(): string {
    return this.hold.name;
  }

  get fencingToken(): bigint {
    return this.hold.fencingToken;
  }

  get signal(): AbortSignal {
    return this.hold.signal;
  }

  renew(): Promise<boolean> {
    return this.released ? Promise.resolve(false) : this.hold.renewNow();
  }

  release(): Promise<boolean> {
    if (this.released) return Promise.resolve(false);
    this.released = true;
    return this.hold.release(this);
  }
}
