import { setTimeout as sleep } from 'node:timers/promises';
import { BrokenCircuitError, CircuitState, ConsecutiveBreaker, ExponentialBackoff, circuitBreaker, handleWhen, type CircuitBreakerPolicy } from 'cockatiel';
import { isTransient } from '../../../infra/transient-errors.js';

export type BreakerState = 'closed' | 'open' | 'half-open';
export const BREAKER_STATES: readonly BreakerState[] = ['closed', 'open', 'half-open'];

export interface WriteBreakerOptions {
  /** Consecutive failed MySQL attempts (connection lost, refused, timed out, deadlock) that open the circuit. */
  failuresToOpen?: number;
  /** Scale of the waits before a probe: about this, then roughly doubling with each failed probe (decorrelated jitter), up to probeMaxMs. */
  probeAfterMs?: number;
  probeMaxMs?: number;
  /** How often a waiting worker loop looks whether the probe is due (no MySQL call unless it is). */
  pollMs?: number;
  /** Told of every MySQL call made through the breaker (`write` or `probe`) and of every one that failed. */
  onAttempt?: (kind: 'write' | 'probe') => void;
  onFailure?: (kind: 'write' | 'probe', error: unknown) => void;
  onStateChange?: (state: BreakerState) => void;
}

export { BrokenCircuitError };

/**
 * The order worker's circuit breaker on MySQL (cockatiel): after `failuresToOpen` consecutive
 * MySQL failures the circuit opens, and writes fail at once with BrokenCircuitError without
 * touching MySQL. The worker then stops reading entries and waits; one probe (`SELECT 1`) at a
 * time is let through after a wait that grows exponentially with decorrelated jitter, so MySQL
 * attempts per second are bounded whatever the backlog. A successful probe closes the circuit.
 * Only transient errors count (isTransient): an order's own failure (no stock, a conflict) says
 * nothing about MySQL.
 */
export class WriteBreaker {
  private readonly policy: CircuitBreakerPolicy;
  private readonly pollMs: number;

  constructor(
    private readonly probe: () => Promise<void>,
    private readonly options: WriteBreakerOptions = {},
  ) {
    this.pollMs = options.pollMs ?? 100;
    this.policy = circuitBreaker(handleWhen(isTransient), {
      breaker: new ConsecutiveBreaker(options.failuresToOpen ?? 5),
      halfOpenAfter: new ExponentialBackoff({ initialDelay: options.probeAfterMs ?? 500, maxDelay: options.probeMaxMs ?? 5_000 }),
    });
    this.policy.onStateChange((state) => options.onStateChange?.(toBreakerState(state)));
  }

  get state(): BreakerState {
    return toBreakerState(this.policy.state);
  }

  get closed(): boolean {
    return this.policy.state === CircuitState.Closed;
  }

  /** Runs one MySQL write; throws BrokenCircuitError, without calling `write`, while the circuit is open. */
  async write<T>(write: () => Promise<T>): Promise<T> {
    return this.policy.execute(() => this.attempt('write', write));
  }

  /**
   * For a worker loop while the circuit is not closed: waits a poll interval, then sends the probe
   * if it is due. Several loops may call it at once: one probe runs, the others only wait.
   */
  async waitForProbe(): Promise<void> {
    await sleep(this.pollMs);
    if (this.policy.state !== CircuitState.Open) return; // closed meanwhile, or another loop's probe is running
    try {
      await this.policy.execute(() => this.attempt('probe', this.probe));
    } catch {
      // Not due yet (BrokenCircuitError), or the probe failed and the circuit opened again for longer.
    }
  }

  private async attempt<T>(kind: 'write' | 'probe', call: () => Promise<T>): Promise<T> {
    this.options.onAttempt?.(kind);
    try {
      return await call();
    } catch (error) {
      if (isTransient(error)) this.options.onFailure?.(kind, error);
      throw error;
    }
  }
}

function toBreakerState(state: CircuitState): BreakerState {
  if (state === CircuitState.Closed) return 'closed';
  if (state === CircuitState.HalfOpen) return 'half-open';
  return 'open'; // Open, or Isolated (held open by hand; not used here)
}
